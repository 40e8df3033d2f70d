"""What three ``engine run --sharded`` replicas send at rest: one renewal of each held Lease a retry period, no read.

Counted from the API server's request log (the emulator's, or a real server's audit log) by the members'
User-Agents, over eight retry periods once the leader sees all three members: the leader renews the leader Lease and
each member its membership Lease with one update each; the followers read the leader Lease and the leader the
membership Leases from their watch of the Leases, not with a GET or a LIST each round (decision 0071)."""

from __future__ import annotations

import collections
import time

from integration_kit import World, wait_for
from test_sharding_cost_http import MEMBER_AGENT, classify
from test_sharding_http import PATIENCE, three_replicas

RETRY_PERIOD = 0.5
"""As SHARDED says (--leader-elect-retry-period)."""
PERIODS = 8


def test_at_rest_the_members_renew_their_leases_and_read_none(world: World) -> None:
    with three_replicas(world, "rest") as started:
        wait_for(lambda: any("(3 live)" in process.logs() for process in started.values()), timeout=PATIENCE,
                 message="the leader to see three live members")
        since = time.time()
        time.sleep(PERIODS * RETRY_PERIOD)
        until = time.time()
        records = [r for r in world.server.requests.records()
                   if since <= r.wall_started < until and MEMBER_AGENT.search(r.user_agent)]
    counted = collections.Counter(classify(r)[:2] for r in records)
    shown = ", ".join(f"{verb} {resource}: {count}" for (verb, resource), count in sorted(counted.items()))
    # Each retry period: the leader Lease and three membership Leases renewed (4 updates); a round that started
    # just before the window and one the machine's load delayed into it may add one each.
    assert counted[("PUT", "leases")] <= 4 * (PERIODS + 2), shown
    # Nothing read at rest: a follower's round reads the leader Lease from its watch, the leader's the membership
    # Leases (before: a GET by each of two followers and a LIST by the leader every period, 24 here). A failover
    # under load would read live: two reads of slack.
    assert counted[("GET", "leases")] + counted[("LIST", "leases")] <= 2, shown
    assert sum(count for (verb, resource), count in counted.items() if resource != "leases") == 0, shown
