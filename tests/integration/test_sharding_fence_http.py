"""A shard member stalled in the middle of a pass, past its Lease, over HTTP with three ``engine run --sharded``
processes: one member's pass is held in a write (the fault proxy holds that one request a moment), the process is
stopped (SIGSTOP: it renews nothing) until its Lease lapsed, the leader gave its order to another member and that
member made it Ready; then the process goes on (SIGCONT). By the API server's request log, the stalled pass sends
nothing more: no request of that member on the order after the one held, none after its Lease lapsed; the pass
ends at its fence; never two members on the order at once; nothing provisioned twice (decision 0033)."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import re
import signal
import time
from collections.abc import Iterator

import pytest
import yaml
from integration_kit import API, TENANT, OperatorProcess, World, get, order, wait_for
from test_sharding_faults_http import member_now
from test_sharding_http import KIND_KEY, SHARD, managed_users, order_touched, ready

from engine.runtime.sharding import ring
from offline.faults import FaultProxy, latency, proxied
from offline.tenures import Touch, member_of, violations

pytestmark = pytest.mark.only_on("emulator", reason="the stall is the fault proxy's (tested before a real server in "
                                 "test_fault_proxy.py); one backend keeps CI bounded")

LEASE_DURATION, RENEW_DEADLINE = 3.0, 2.0
SHARDED = ("--sharded", "--clusters-namespace", "", "--leader-elect-lease-duration", f"{LEASE_DURATION:g}s",
           "--leader-elect-renew-deadline", f"{RENEW_DEADLINE:g}s", "--leader-elect-retry-period", "500ms")
HOLD = 1.0
"""Seconds the proxy holds the stalled pass's write before it forwards it: less than the renew deadline minus a
retry period, so the write was sent and reaches the server while the member's tenure still holds."""
LEASES = "c5c3-system"
PATIENCE = 120.0


def prefix(name: str) -> str:
    """The name prefix of an order's children (rules/keystoneuser.yaml)."""
    return f"{name}-{hashlib.sha256(f'/{TENANT}/{name}'.encode()).hexdigest()[:8]}-user-"


@pytest.fixture
def proxy(world: World) -> Iterator[FaultProxy]:
    with FaultProxy(world.server.url) as running:
        yield running


@contextlib.contextmanager
def three_replicas(world: World, proxy: FaultProxy) -> Iterator[list[OperatorProcess]]:
    """Three ``engine run --sharded`` processes reaching the management cluster through the proxy; all stopped
    after (a stopped one continued first)."""
    kubeconfig = world.tmp / "fence.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(proxied(yaml.safe_load(world.kubeconfig.read_text()), proxy)))
    processes = [OperatorProcess(world, *SHARDED, kubeconfig=kubeconfig, name=f"fence-{n}") for n in range(3)]
    try:
        yield processes
    finally:
        for process in processes:
            if process.process.poll() is None:
                process.process.send_signal(signal.SIGCONT)
                process.stop()


def renewed_at(world: World, member: str) -> float:
    """When a member last renewed its Lease (its clock: this machine's)."""
    lease = world.management.get("coordination.k8s.io/v1", "Lease", LEASES, member)
    moment = dt.datetime.strptime(lease["spec"]["renewTime"], "%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.replace(tzinfo=dt.UTC).timestamp()


def owner(world: World, name: str) -> str:
    found = get(world.management, API, "KeystoneUser", TENANT, name) or {}
    return str((found.get("metadata", {}).get("labels") or {}).get(SHARD, ""))


def held_pass_ended(process: OperatorProcess, member: str, name: str) -> str | None:
    """How the stalled member's pass of the order ended: ``fenced`` (a request refused at its fence), ``ended`` (its
    end recorded, no request refused), None while it runs."""
    ended = None
    for line in process.logs().splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        if not str(record.get("request", "")).endswith(f"/{name}"):
            continue
        message = str(record.get("message", ""))
        if f"request refused: member {member}'s shard tenure has lapsed" in message:
            return "fenced"
        if re.match(rf"pass ended at [0-9.]+ by {member}$", message):
            ended = "ended"
    return ended


def test_a_member_stalled_mid_pass_past_its_lease_sends_nothing_more(world: World, proxy: FaultProxy) -> None:
    with three_replicas(world, proxy) as processes:
        names = wait_for(lambda: {p: n for p in processes if (n := member_now(p)) is not None}
                         if all(member_now(p) for p in processes) else None, timeout=PATIENCE,
                         message="three members joined")
        leader = wait_for(lambda: next((p for p in processes if p.leads()), None), timeout=PATIENCE,
                          message="a leader")
        # The stalled member is not the leader (so the assigning goes on); the order is one the ring gives it.
        stalled = next(p for p in processes if p is not leader)
        member = names[stalled]
        name = next(n for n in (f"s{i:02}" for i in range(100))
                    if ring.owner(ring.order_key("", KIND_KEY, TENANT, n), set(names.values())) == member)
        held = f"{prefix(name)}user-probe"  # the first pass's first write naming a child; its status write follows

        with proxy.window(latency(HOLD, kinds=frozenset({"write"}), target=held)) as seen:
            world.management.create(order("KeystoneUser", name))
            wait_for(lambda: any(held in path for kind, path in seen.paths if kind == "write"), timeout=PATIENCE,
                     message=f"{member}'s pass of {name} to send its write of {held}")
            stalled.process.send_signal(signal.SIGSTOP)
            stopped_at = time.time()
        assert member_now(stalled) == member, "the member rejoined before its pass was held (a lapse under load)"
        time.sleep(0.5)  # a renewal sent before the stop has landed
        lapsed_at = renewed_at(world, member) + LEASE_DURATION

        # Stopped: the leader gives the order to another member once the Lease lapsed; that member makes it Ready.
        wait_for(lambda: owner(world, name) not in ("", member) and ready(world.management, name), timeout=PATIENCE,
                 message=f"{name} moved off the stalled member and Ready")
        new_owner = owner(world, name)
        stalled.process.send_signal(signal.SIGCONT)
        resumed_at = time.time()

        # The held pass goes on: its next request meets the fence and the pass ends there.
        wait_for(lambda: held_pass_ended(stalled, member, name), timeout=PATIENCE,
                 message=f"{member}'s held pass of {name} to end")
        time.sleep(1.0)  # whatever it would send next has reached the server
        assert stalled.process.poll() is None, stalled.logs()[-3000:]
        assert (stalled.metric("c5c3_operator_shard_fenced_writes_total") or 0) >= 1  # its status write, unsent
        for process in processes:
            assert process.stop() == 0, process.logs()[-3000:]

    known = {name: ("", name), prefix(name): ("", name)}
    assert world.server.requests.dropped == 0, "the request log overflowed"
    touches: list[Touch] = [t for r in world.server.requests.records()
                            if (t := order_touched("", r, known)) is not None]
    mine = [t.record for t in touches if member_of(t.record.user_agent) == member]
    assert any(held in r.path for r in mine), f"the held write never reached the server: {mine}"
    # Nothing of the stalled member on the order once it was stopped but the held write, none after its Lease lapsed.
    late = [f"{r.method} {r.path} ({r.wall_started - resumed_at:+.3f} s after SIGCONT)" for r in mine
            if (r.wall_started > stopped_at and held not in r.path) or r.wall_started >= lapsed_at]
    assert not late, f"{member} sent requests of its stalled pass after its tenure lapsed: {late}"
    assert held_pass_ended(stalled, member, name) == "fenced", f"{member}'s held pass of {name} ended unfenced"
    problems = violations(touches)
    assert not problems, "\n".join(problems[:20])
    assert any(member_of(t.record.user_agent) == new_owner for t in touches), "the new owner never worked on it"
    stored = get(world.management, API, "KeystoneUser", TENANT, name) or {}
    assert stored["status"]["passwordGeneration"] == 1
    assert managed_users(world, name, "") == 1
