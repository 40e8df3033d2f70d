"""Three ``engine run --sharded`` processes reach the emulated management cluster through the fault proxy
(``offline.faults``): a window each of 500s, 429s, 3 s latency and 409 on 70% of writes. No replica exits: a
member whose Lease lapsed stops its passes and rejoins in the same process under a new name, with a new Lease;
after each window the orders converge on the live members; never two members on one order at once (by the API
server's request log), nothing provisioned twice."""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
from collections.abc import Iterator

import pytest
import yaml
from integration_kit import API, TENANT, OperatorProcess, World, get, order, wait_for
from test_sharding_http import DRAIN, KIND_KEY, SHARD, managed_users, order_touched, ready

from engine.runtime.sharding import ring
from engine.runtime.sharding.labels import MEMBER_SELECTOR
from offline.faults import FAULTS, FaultProxy, proxied
from offline.tenures import Touch, violations

pytestmark = pytest.mark.only_on("emulator", reason="the fault windows run once, over the emulator, to keep CI "
                                 "bounded; the proxy itself is tested before a real server (test_fault_proxy.py)")

SHARDED = ("--sharded", "--clusters-namespace", "", "--leader-elect-lease-duration", "8s",
           "--leader-elect-renew-deadline", "4s", "--leader-elect-retry-period", "500ms")
"""Shorter than the defaults (15 s, 10 s, 2 s), so a window shows in 6 s what 15 s show with them: every member's
renewals fail past its renew deadline. The lease duration leaves the renew deadline 4 s, more than the 3 s a
request is held in the latency window (a write sent before the deadline reaches the server before the lapsed
member's Lease may expire: decision 0033)."""
WINDOW = 6.0
"""Seconds each fault window lasts: 1.5 renew deadlines."""
WINDOWS = ("500", "429", "latency", "409")
LAPSING = ("500", "429")
"""Windows in which every request fails: every member's Lease lapses (in the others it may)."""
ORDERS = [f"f{n:02}" for n in range(9)]
LEASES = "c5c3-system"
PATIENCE = 120.0


@pytest.fixture(scope="module")
def proxy(world: World) -> Iterator[FaultProxy]:
    with FaultProxy(world.server.url) as running:
        yield running


@contextlib.contextmanager
def three_replicas(world: World, proxy: FaultProxy) -> Iterator[list[OperatorProcess]]:
    kubeconfig = world.tmp / "faulted.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(proxied(yaml.safe_load(world.kubeconfig.read_text()), proxy)))
    processes = [OperatorProcess(world, *SHARDED, "--kubeconfig", str(kubeconfig), name=f"faulted-{n}")
                 for n in range(3)]
    try:
        yield processes
    finally:
        for process in processes:
            if process.process.poll() is None:
                process.stop()


def member_now(process: OperatorProcess) -> str | None:
    """The member name a replica holds its Lease under now (the last it joined under), None before it joined."""
    joined = re.findall(r"joined the shards as member ([a-z0-9-]+)", process.logs())
    return joined[-1] if joined else None


def members_now(processes: list[OperatorProcess]) -> set[str]:
    return {name for process in processes if (name := member_now(process)) is not None}


def rejoins(process: OperatorProcess) -> int:
    return int(process.metric("c5c3_operator_shard_rejoins_total") or 0)


def unconverged(world: World, processes: list[OperatorProcess], names: list[str]) -> str:
    """What is not converged yet ("" when all is): every replica holds a Lease under its current name and no other
    member Lease is left; every order is labelled with the member rendezvous hashing picks among them, none
    draining, and Ready."""
    members = members_now(processes)
    waiting = [p.log_path.name for p in processes if member_now(p) is None or rejoined_since_join(p)]
    if len(members) != len(processes) or waiting:
        return f"replicas not (re)joined yet: {waiting}"
    leases = {lease["metadata"]["name"] for lease in
              world.management.list("coordination.k8s.io/v1", "Lease", LEASES, labels=MEMBER_SELECTOR).items}
    if leases != members:
        return f"member Leases {sorted(leases)}, members {sorted(members)}"
    found = {o["metadata"]["name"]: dict(o["metadata"].get("labels") or {})
             for o in world.management.list(API, "KeystoneUser", TENANT).items if o["metadata"]["name"] in names}
    wrong = {name: (labels.get(SHARD), DRAIN in labels, ready(world.management, name))
             for name, labels in found.items()
             if labels.get(SHARD) != ring.owner(ring.order_key("", KIND_KEY, TENANT, name), members)
             or DRAIN in labels or not ready(world.management, name)}
    if len(found) != len(names) or wrong:
        return f"orders (label, draining, Ready) not converged: {wrong}; missing {set(names) - set(found)}"
    return ""


def wait_converged(world: World, processes: list[OperatorProcess], names: list[str], stage: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while why := unconverged(world, processes, names):
        if time.monotonic() > deadline:
            pytest.fail(f"{stage}: not converged in {PATIENCE}s: {why}")
        time.sleep(0.1)


def rejoined_since_join(process: OperatorProcess) -> bool:
    """Whether the replica's last word is a rejoin it has not joined under yet (its new Lease not held)."""
    logs = process.logs()
    return logs.rfind("rejoins the shards as member") > logs.rfind("joined the shards as member")


def test_sharded_members_outlive_api_fault_windows_and_rejoin_in_process(world: World, proxy: FaultProxy) -> None:
    names = list(ORDERS)
    for name in names:
        world.management.create(order("KeystoneUser", name))
    recovered: dict[str, float] = {}
    with three_replicas(world, proxy) as processes:
        wait_converged(world, processes, names, "at the start")
        for label in WINDOWS:
            before = {id(p): rejoins(p) for p in processes}
            with proxy.window(FAULTS[label]) as seen:
                time.sleep(WINDOW)
            assert seen.counts["get"] > 0, f"{label}: no request went through the proxy (the replicas bypass it)"
            healed = time.monotonic()
            exited = [p.log_path.name for p in processes if p.process.poll() is not None]
            assert not exited, f"{label}: {exited} exited:\n" + "\n".join(p.logs()[-3000:] for p in processes)
            names.append(f"after-{label}")
            world.management.create(order("KeystoneUser", names[-1]))
            if label in LAPSING:
                wait_for(lambda b=before: all(rejoins(p) > b[id(p)] for p in processes), timeout=PATIENCE,
                         message=f"every member to lapse in the {label} window and rejoin")
            wait_converged(world, processes, names, f"after the {label} window")
            recovered[label] = time.monotonic() - healed
            assert all(p.process.poll() is None for p in processes)
        logs = "".join(p.logs() for p in processes)
        assert "deleted the Lease of lapsed member" in logs
        assert "is gone; reassigned to member" in logs
        for process in processes:
            assert process.stop() == 0, process.logs()[-3000:]
    print(f"seconds to converge after each window: {recovered}")

    # Never two members on one order at once, as the API server saw their requests: a lapsed member's requests end
    # before the next member's begin, with the leader's relabel in between (lapsed members hand nothing back).
    known: dict[str, tuple[str, str]] = {}
    for name in names:
        prefix = f"{name}-{hashlib.sha256(f'/{TENANT}/{name}'.encode()).hexdigest()[:8]}-user-"
        known[name] = known[prefix] = ("", name)
    assert world.server.requests.dropped == 0, "the request log overflowed"
    touches: list[Touch] = [t for r in world.server.requests.records()
                            if (t := order_touched("", r, known)) is not None]
    problems = violations(touches)
    assert not problems, "\n".join(problems[:20])

    # Nothing provisioned twice.
    for name in names:
        stored = get(world.management, API, "KeystoneUser", TENANT, name) or {}
        assert stored["status"]["passwordGeneration"] == 1, name
        assert managed_users(world, name, "") == 1, name

