"""Three ``engine run --sharded`` replicas under API faults, over the emulator, through the fault proxy: each fault
window (``fault_kit``'s windows, ``WINDOW`` seconds each, twice the members' renew deadline) leaves every member
running, the orders converge after it on their members, the invariants hold, the request rate is bounded, and no
order is ever in two members' passes at once (their pass records)."""

from __future__ import annotations

import collections
import itertools
import time
from collections.abc import Iterator

import pytest
from fault_kit import Invariants, all_ready, proxied_kubeconfig, wait_gone
from integration_kit import API, TENANT, OperatorProcess, World, order, wait_for
from test_sharding_http import SHARDED, member_of, passes

from offline.faults import FAULTS, FaultProxy

pytestmark = pytest.mark.only_on("emulator", reason="the fault windows run once, over the emulator, to keep CI "
                                 "bounded; the proxy itself is tested before a real server (test_fault_proxy.py)")

WINDOW = 8.0
"""Seconds each fault window lasts: twice the members' renew deadline (``SHARDED``: 4 s)."""
PATIENCE = 90.0
PER_WATCH = 1.5
OTHERS = 60.0
"""test_faults_http.py's bounds for one replica; the other requests three times over (three replicas, and the
Lease renewals every 500 ms of each)."""
REJOIN = 80
"""Requests a member may add in a window by rejoining: a window that refuses its Lease renewals (409 to 70% of
writes) can lapse its membership, and a member that rejoins lists its kinds again and passes over its orders
once more. Measured over the 409 window, three members: 225-232 requests without a rejoin, 337-408 with, 513
under the full suite's load; a retry loop that backoff does not bound sends thousands."""


@pytest.fixture(scope="module")
def proxy(world: World) -> Iterator[FaultProxy]:
    with FaultProxy(world.server.url) as running:
        yield running


@pytest.fixture
def members(world: World, proxy: FaultProxy) -> Iterator[dict[str, OperatorProcess]]:
    kubeconfig = proxied_kubeconfig(world, proxy, "sharded")
    processes = [OperatorProcess(world, *SHARDED, name=f"faulted-{n}", kubeconfig=kubeconfig) for n in range(3)]
    try:
        yield {member_of(process): process for process in processes}
    finally:
        for process in processes:
            if process.process.poll() is None:
                process.stop()


def test_three_members_through_fault_windows(world: World, proxy: FaultProxy,
                                             members: dict[str, OperatorProcess]) -> None:
    invariants = Invariants(world)
    names = [f"sharded-{n}" for n in range(6)]
    for name in names:
        world.management.create(order("KeystoneUser", name))
    wait_for(lambda: all_ready(world, names), timeout=PATIENCE, message="the orders Ready on three members")
    invariants.check(names)
    for fault_name, fault in FAULTS.items():
        name = f"sharded-during-{fault_name}"
        names.append(name)
        watches = sum(world.server.open_watches().values())
        with proxy.window(fault) as seen:
            world.management.create(order("KeystoneUser", name))
            time.sleep(WINDOW)
        exited = {member: process.process.returncode for member, process in members.items()
                  if process.process.poll() is not None}
        assert not exited, f"members exited in the {fault_name} window (exit status): {exited}"
        wait_for(lambda: all_ready(world, names), timeout=PATIENCE,
                 message=f"every order Ready after the {fault_name} window")
        invariants.check(names)
        others = sum(seen.counts.values()) - seen.counts["watch"]
        assert seen.counts["watch"] <= watches * (1 + PER_WATCH * seen.seconds), (fault_name, dict(seen.counts))
        assert others <= OTHERS * seen.seconds + REJOIN * len(members), (fault_name, dict(seen.counts), seen.seconds)
    for name in names:
        world.management.delete(API, "KeystoneUser", TENANT, name)
    wait_gone(invariants, names, timeout=PATIENCE)
    for process in members.values():
        assert process.stop() == 0, process.logs()[-3000:]
    spans: dict[str, list[tuple[float, float, str]]] = collections.defaultdict(list)
    for member, process in members.items():
        for request, start, end, who in passes(process, member, None):
            spans[request].append((start, end, who))
    for request, runs in spans.items():
        runs.sort()
        for (_, end, who), (start, _, other) in itertools.pairwise(runs):
            assert who == other or end <= start, f"{request}: {other} started a pass while {who}'s ran"
