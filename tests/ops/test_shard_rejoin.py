"""A ``--sharded`` replica whose membership Lease lapses (its Lease calls fail for longer than the lease duration),
in-process on an in-memory cluster: it stops its passes while lapsed, does not exit, and rejoins as a new member
with a new Lease once the calls succeed again; the lapsed member's Lease is deleted and its orders move to the new
one, which serves them."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.clock import SystemClock
from engine.cluster.api import NotFound, Obj
from engine.operator import Operator, Options
from engine.runtime.sharding.assigner import Round
from engine.runtime.sharding.labels import MEMBER_SELECTOR, SHARD_LABEL
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster
from tests.conftest import WIDGET, RuleText

NO_WAIT = RuleText(WIDGET).drop("""\
      - wait: "part.status.ready"
        reason: Waiting
        message: "waiting for part {{ part.metadata.name }}"
        requeue: 10s
""")
LEASES = "c5c3-system"
FAST = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.25}
"""Short Leases, so a lapse takes seconds; the cut lasts longer than the lease duration."""
ORDERS = [f"w{n}" for n in range(4)]
PATIENCE = 30.0


def options(rules: Path, **changes: object) -> Options:
    base = Options(rules=rules, metrics_bind_address="0", health_probe_bind_address="0", clusters_namespace="",
                   watch_timeout=0.2, sharded=True, leader_election_identity="solo", **FAST)  # type: ignore[arg-type]
    return Options(**{**base.__dict__, **changes})  # type: ignore[arg-type]


def wait_for(what: Callable[[], object], message: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not what():
        assert time.monotonic() < deadline, f"waited {PATIENCE}s for {message}"
        time.sleep(0.02)


def widget(name: str) -> Obj:
    return {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"size": 1}}


def size_of_part(cluster: MemoryCluster, name: str) -> str | None:
    try:
        return str((cluster.get("v1", "ConfigMap", "default", f"{name}-part").get("data") or {}).get("size"))
    except NotFound:
        return None


def owners(cluster: MemoryCluster) -> set[str]:
    return {str((o["metadata"].get("labels") or {}).get(SHARD_LABEL) or "")
            for o in cluster.list("example.io/v1", "Widget").items}


def member_leases(cluster: MemoryCluster) -> set[str]:
    return {lease["metadata"]["name"]
            for lease in cluster.list("coordination.k8s.io/v1", "Lease", LEASES, labels=MEMBER_SELECTOR).items}


def sample(operator: Operator, name: str, **labels: str) -> float:
    return operator.registry.get_sample_value(name, labels) or 0.0


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster("", clock=SystemClock(), permissive=True)


def test_a_member_whose_lease_lapsed_rejoins_in_the_same_process(rules_dir: Callable[..., Path],
                                                                 cluster: MemoryCluster) -> None:
    faulty = FaultyCluster(cluster, cluster_name="")
    for name in ORDERS:
        cluster.create(widget(name))
    operator = Operator(options(rules_dir(NO_WAIT)), faulty)
    assert operator.member is not None
    member = operator.member
    stop = threading.Event()
    status: list[int] = []

    def run() -> None:
        status.append(operator.run(stop))

    thread = threading.Thread(target=contextvars.copy_context().run, args=(run,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: all(size_of_part(cluster, n) == "1" for n in ORDERS), "a pass of every order")
        first = member.name
        assert owners(cluster) == {first}

        faulty.inject(kind="Lease", times=10**9)  # every Lease call fails from now on: renewals, the leader's too
        wait_for(lambda: not member.active.is_set(), "the member to stop at its renew deadline")
        patch: dict[str, Any] = {"spec": {"size": 2}}
        cluster.patch("example.io/v1", "Widget", "default", "w0", patch)
        time.sleep(FAST["lease_duration"])  # the cut lasts longer than the lease duration
        assert size_of_part(cluster, "w0") == "1", "a pass ran while the member's Lease had lapsed"
        assert thread.is_alive() and not status, f"the operator stopped (status {status})"

        faulty.faults.clear()  # the Lease calls succeed again
        wait_for(lambda: size_of_part(cluster, "w0") == "2", "the member to serve its orders again")
        assert thread.is_alive() and not status, f"the operator stopped (status {status})"
        assert member.name != first, "it rejoined under the lapsed member's name"
        assert member.active.is_set()
        wait_for(lambda: owners(cluster) == {member.name}, "every order labelled for the new member")
        wait_for(lambda: member_leases(cluster) == {member.name}, "the lapsed member's Lease deleted")
        assert sample(operator, "c5c3_operator_shard_rejoins_total") == 1
        wait_for(lambda: sample(operator, "c5c3_operator_shard_held_orders", member=member.name) == len(ORDERS),
                 "the new member's order watch to show every order carrying its label")  # the watch follows the labels
        assert operator.registry.get_sample_value("c5c3_operator_shard_held_orders", {"member": first}) is None
        cluster.create(widget("w9"))
        wait_for(lambda: size_of_part(cluster, "w9") == "1", "a new order served by the new member")
    finally:
        stop.set()
        thread.join(PATIENCE)
    assert not thread.is_alive()
    assert status == [0]


def test_the_leaders_rounds_look_at_no_order_once_every_order_is_placed(rules_dir: Callable[..., Path],
                                                                       cluster: MemoryCluster) -> None:
    """``engine run --sharded`` wires the keys-only views' count into the assigner: once every order carries the
    member's label, rounds (every 0.25 s here) look at no order, status writes and all; a new order is placed by
    the next round that looks."""
    for name in ORDERS:
        cluster.create(widget(name))
    operator = Operator(options(rules_dir(NO_WAIT)), cluster)
    assert operator.assigner is not None and operator.member is not None
    looked: list[str] = []
    place = operator.assigner._place

    def counted(*args: Any, **kwargs: Any) -> None:
        looked.append(args[4]["metadata"]["name"])
        place(*args, **kwargs)

    operator.assigner._place = counted  # type: ignore[method-assign]
    quiet: list[bool] = []
    step = operator.assigner.step

    def recorded() -> Round:
        done = step()
        quiet.append(done.quiet)
        return done

    operator.assigner.step = recorded  # type: ignore[method-assign]
    stop = threading.Event()
    thread = threading.Thread(target=contextvars.copy_context().run, args=(operator.run, stop), daemon=True)
    thread.start()
    try:
        wait_for(lambda: all(size_of_part(cluster, n) == "1" for n in ORDERS), "a pass of every order")
        wait_for(lambda: owners(cluster) == {operator.member.name if operator.member else ""}, "every order placed")
        # the round after the last write looks once more and finds nothing; the rounds after it are quiet
        wait_for(lambda: quiet[-1:] == [True], "a quiet round")
        looked.clear()
        cluster.patch("example.io/v1", "Widget", "default", "w0", {"status": {"note": "a status write"}}, status=True)
        rounds = len(quiet)
        wait_for(lambda: len(quiet) >= rounds + 3, "three more rounds")
        assert looked == [], f"rounds looked at orders though nothing they place by changed: {looked}"
        cluster.create(widget("w9"))
        wait_for(lambda: "w9" in looked, "a round to place the new order")
        wait_for(lambda: size_of_part(cluster, "w9") == "1", "a pass of the new order")
    finally:
        stop.set()
        thread.join(PATIENCE)
    assert not thread.is_alive()
