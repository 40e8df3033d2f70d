"""The leader of three ``engine run --sharded`` processes killed (-9): another replica takes over the
assigning, the dead leader's orders move only once its membership Lease has lapsed, orders created after
the kill are assigned and converge; never two passes of one order at once (by the members' pass records and by
the API server's request log), nothing provisioned twice."""

from __future__ import annotations

import collections
import datetime as dt
import itertools
import re
import time
from collections.abc import Iterator

import pytest
from integration_kit import API, TENANT, OperatorProcess, World, get, order, wait_for
from test_sharding_http import (
    KIND_KEY,
    SHARD,
    check_tenures_from_requests,
    managed_users,
    passes,
    ready,
    three_replicas,
)

from engine.runtime.sharding import ring

LEASES = "c5c3-system"
LEASE_DURATION = 6.0
"""As SHARDED says (--leader-elect-lease-duration)."""
CANDIDATES = [f"k{n:02}" for n in range(100)]
"""Names for the orders made before the kill; fifteen of them, each member winning at least one (``spread_over``)."""
AFTER = [f"n{n:02}" for n in range(6)]
"""Orders created after the leader was killed."""
PATIENCE = 120.0


@pytest.fixture
def replicas(world: World) -> Iterator[dict[str, OperatorProcess]]:
    with three_replicas(world, "lead", "--clusters-namespace", "") as started:
        yield started


def owners(world: World, names: list[str]) -> dict[str, str]:
    """Order name -> its shard label ("" none), for the orders named that exist."""
    found = {}
    for item in world.management.list(API, "KeystoneUser", TENANT).items:
        if item["metadata"]["name"] in names:
            found[item["metadata"]["name"]] = (item["metadata"].get("labels") or {}).get(SHARD, "")
    return found


def held_by(world: World, names: list[str], members: set[str]) -> bool:
    found = owners(world, names)
    return len(found) == len(names) and set(found.values()) <= members


def renewed_at(world: World, member: str) -> float:
    """When a member last renewed its Lease (its own clock: the same machine's as the test's)."""
    lease = world.management.get("coordination.k8s.io/v1", "Lease", LEASES, member)
    moment = dt.datetime.strptime(lease["spec"]["renewTime"], "%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.replace(tzinfo=dt.UTC).timestamp()


def spread_over(members: set[str], count: int = 15) -> list[str]:
    """``count`` order names of which each member wins at least one by rendezvous hashing: the members' names are
    random, and over fifteen fixed names one of three members wins none about once in 150 runs, when the test
    would wait out its patience for a spread that cannot come."""
    def winner(name: str) -> str | None:
        return ring.owner(ring.order_key("", KIND_KEY, TENANT, name), members)

    chosen = sorted({next(n for n in CANDIDATES if winner(n) == member) for member in members})
    return chosen + [n for n in CANDIDATES if n not in chosen][:count - len(chosen)]


def test_killing_the_leader_moves_its_orders_only_after_its_lease_lapsed(
        world: World, replicas: dict[str, OperatorProcess]) -> None:
    members = set(replicas)
    before = spread_over(members)
    for name in before:
        world.management.create(order("KeystoneUser", name))
    wait_for(lambda: held_by(world, before, members) and set(owners(world, before).values()) == members,
             timeout=PATIENCE, message="the orders spread over 3 members")
    wait_for(lambda: all(ready(world.management, n) for n in before), timeout=PATIENCE, message="every order Ready")
    first = owners(world, before)
    # Every replica's /metrics says how many orders it holds (not only the leader's view).
    for member, process in replicas.items():
        held = sum(1 for m in first.values() if m == member)
        wait_for(lambda p=process, m=member, n=held: p.metric(f'c5c3_operator_shard_held_orders{{member="{m}"}}') == n,
                 timeout=PATIENCE, message=f"{member}'s held orders gauge")

    leader = wait_for(lambda: next((m for m, p in replicas.items() if p.leads()), None), timeout=PATIENCE,
                      message="a leader")
    replicas[leader].kill()
    killed_at = time.time()
    lapsed_at = renewed_at(world, leader) + LEASE_DURATION
    for name in AFTER:
        world.management.create(order("KeystoneUser", name))
    survivors = members - {leader}

    successor = wait_for(lambda: next((m for m in survivors if replicas[m].leads()), None), timeout=PATIENCE,
                         message="a surviving replica to become the leader")
    wait_for(lambda: held_by(world, before + AFTER, survivors), timeout=PATIENCE,
             message="the dead leader's orders and the new ones labelled for the survivors")
    second, after = owners(world, before), owners(world, AFTER)
    moved = {n for n in before if first[n] != second[n]}
    assert moved == {n for n in before if first[n] == leader}, "only the dead leader's orders move"
    assert moved, first  # 15 orders over 3 members: the leader held some
    wait_for(lambda: all(ready(world.management, n) for n in before + AFTER), timeout=PATIENCE,
             message="every order Ready on the survivors")
    logs = replicas[successor].logs()
    assert "became the leader" in logs
    assert f"member {leader} left the shards or its Lease expired" in logs
    assert "is gone; reassigned to member" in logs
    assert all(f"member {m} joined the shards" in logs for m in survivors)  # the new leader observes afresh
    time.sleep(1.0)
    for member in survivors:
        assert replicas[member].stop() == 0, replicas[member].logs()[-3000:]
        assert re.search(rf"left the shards as member {member}: handed back [1-9][0-9]* order", replicas[member].logs())

    spans: dict[str, list[tuple[float, float, str]]] = collections.defaultdict(list)
    for member, process in replicas.items():
        for request, start, end, who in passes(process, member, killed_at if member == leader else None):
            spans[request].append((start, end, who))
    # The survivors took the dead leader's orders only once its Lease had lapsed (on the leader's last renewal).
    for request, runs in spans.items():
        name = request.rsplit("/", 1)[-1]
        if name in moved:
            first_there = min(start for start, _, who in runs if who != leader)
            assert first_there >= lapsed_at, f"{request}: a survivor started it before the dead leader's Lease lapsed"
    # Never two passes of one order at once, across the replicas.
    for request, runs in spans.items():
        runs.sort()
        for (_, end, who), (start, _, other) in itertools.pairwise(runs):
            assert who == other or end <= start, f"{request}: {other} started a pass while {who}'s ran"
    assert {r.rsplit("/", 1)[-1] for r in spans} == set(before + AFTER)
    assert not any(who == leader for n in AFTER for _, _, who in spans[_request(spans, n)])

    # The same from the API server's side, its request log: no order worked on by two members at once, and a
    # survivor's first request on a dead leader's order only after its Lease lapsed.
    found = check_tenures_from_requests(
        {"": world.server}, [("", n) for n in before + AFTER],
        [{("", n): m for n, m in first.items()}, {("", n): m for n, m in (second | after).items()}], killed=leader)
    for name in moved:
        runs = found[("", name)]
        taken = runs[max(i for i, run in enumerate(runs) if run.member == leader) + 1]
        assert taken.first.wall_started >= lapsed_at, (
            f"{name}: member {taken.member} sent {taken.first.method} {taken.first.path} before the dead leader's"
            " Lease lapsed")

    # Nothing provisioned twice.
    for name in before + AFTER:
        stored = get(world.management, API, "KeystoneUser", TENANT, name) or {}
        assert stored["status"]["passwordGeneration"] == 1, name
        assert managed_users(world, name, "") == 1, name


def _request(spans: dict[str, list[tuple[float, float, str]]], name: str) -> str:
    found = [r for r in spans if re.search(rf"/{name}$", r)]
    assert len(found) == 1, (name, list(spans))
    return found[0]
