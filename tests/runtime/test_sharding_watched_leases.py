"""The leader reads the membership Leases from a watch while they only confirm its last round: no list at rest, a
live list whenever a member would join, leave or expire, and for a watch that lags behind what it read."""

from __future__ import annotations

from test_sharding import NS, START, S, World

from engine.cluster.api import Obj
from engine.runtime.leader import LEASE_API_VERSION
from engine.runtime.sharding.assigner import Assigner
from offline.cluster.faults import FaultyCluster


def lists(cluster: FaultyCluster) -> int:
    return sum(1 for call in cluster.calls if call.verb == "list" and call.kind == "Lease")


def leader(world: World, watched: list[list[Obj]] | None = None) -> tuple[Assigner, FaultyCluster]:
    """An assigner over a counting management cluster; its watch shows the Leases as stored now, or (``watched``)
    the snapshot held there."""
    counting = FaultyCluster(world.cluster, cluster_name="")
    assigner = Assigner(world.clusters(counting), world.catalog, NS, clock=world.clock, lease_duration=15)

    def leases(selector: str) -> list[Obj]:
        if watched is not None:
            return watched[0]
        return world.cluster.list(LEASE_API_VERSION, "Lease", NS, labels=selector).items

    assigner.leases = leases
    return assigner, counting


def test_at_rest_no_list_and_a_lapsed_member_is_given_up_on_a_live_list() -> None:
    world = World()
    for name in ("a", "b", "c"):
        world.join(name)
    assigner, counting = leader(world)
    assigner.step()
    assert lists(counting) == 1  # a first round reads live
    before = world.owners()
    for _ in range(4):
        world.tick("a", "b", "c")
        assert assigner.step().members == ["a", "b", "c"]
    assert lists(counting) == 1
    reassigned_at = None
    for _ in range(12):  # b stops renewing
        world.tick("a", "c")
        done = assigner.step()
        if done.moves:
            reassigned_at = world.clock.now()
            break
        assert world.owners() == before
    assert reassigned_at is not None and reassigned_at - START >= 23 * S  # 8 s of renewals, then 15 s unchanged
    assert lists(counting) == 2  # the round that gave b up read live
    assert set(world.owners().values()) == {"a", "c"}


def test_a_watch_that_lags_behind_what_a_round_read_is_not_used() -> None:
    """A watch that stalled keeps showing the records of the first round while the members renew: once those would
    expire, the round lists live (every member still live), and from then on every round does."""
    world = World()
    for name in ("a", "b", "c"):
        world.join(name)
    snapshot = [world.cluster.list(LEASE_API_VERSION, "Lease", NS).items]
    assigner, counting = leader(world, snapshot)
    assigner.step()
    per_round = []
    for _ in range(12):
        world.tick("a", "b", "c")
        before = lists(counting)
        assert assigner.step().members == ["a", "b", "c"]
        per_round.append(lists(counting) - before)
    first = per_round.index(1)
    assert first == 7  # the records the watch shows expire 15 s after the first round (16 s here)
    assert per_round[:first] == [0] * first and per_round[first:] == [1] * (12 - first)
