"""Sharding under churn, threaded on the wall clock: replicas join, lose their Lease, leave; no order is
ever in two passes at once across them, and only the orders whose member changes move."""

from __future__ import annotations

import datetime as dt
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry
from runtime_kit import FakeKind, memory, obj, widget_kind

from engine.cluster.api import Obj, ServerError
from engine.cluster.registry import ClusterSet
from engine.metrics import Metrics
from engine.outcome import Request, Result
from engine.runtime.leader import LeaderElector, LeaseSettings, PreciseClock
from engine.runtime.manager import Manager
from engine.runtime.sharding.assigner import Assigner
from engine.runtime.sharding.labels import DRAIN_LABEL, MEMBER_LABEL, SHARD_LABEL
from engine.runtime.sharding.leading import Leadership
from engine.runtime.sharding.member import ShardMember
from engine.runtime.sharding.ring import order_key, owner
from offline.cluster.memory import MemoryCluster

NS = "c5c3-system"
ORDERS = 30
LEASE = {"lease_duration": 2.0, "renew_deadline": 1.0, "retry_period": 0.1}
"""The Lease of a replica the test cuts off: it lapses quickly."""
STEADY = {"lease_duration": 10.0, "renew_deadline": 8.0, "retry_period": 0.1}
"""The Lease of a replica that must not lapse: a loaded machine can starve a renewing thread for a second or more
(with LEASE, members lapsed and their orders moved in runs beside two busy cores), and no lapse is asked for."""
LEADER_LEASE = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.1}
"""The leader Lease the second test moves: short enough to take over in seconds, long enough not to lapse early."""
PATIENCE = 30.0


class Passes:
    """Every pass of every replica: (replica, request, start, end) on the monotonic clock, and overlaps."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: list[tuple[str, Request, float, float]] = []
        self.running: dict[Request, str] = {}
        self.overlaps: list[tuple[Request, str, str]] = []

    def runner(self, replica: str) -> Callable[..., Result]:
        def run(kind: FakeKind, request: Request, **_: Any) -> Result:
            with self.lock:
                other = self.running.get(request)
                if other is not None:
                    self.overlaps.append((request, other, replica))
                self.running[request] = replica
                start = time.monotonic()
            time.sleep(0.1)
            with self.lock:
                self.running.pop(request, None)
                self.records.append((replica, request, start, time.monotonic()))
            return Result(requeue_after=dt.timedelta(milliseconds=100))

        return run

    def by(self, replica: str) -> set[str]:
        with self.lock:
            return {r.name for who, r, _, _ in self.records if who == replica}


class Partitioned:
    """The management cluster as one replica's membership sees it: Lease calls fail while cut off."""

    def __init__(self, inner: MemoryCluster) -> None:
        self._inner = inner
        self.cut = threading.Event()

    def _lease(self, *args: Any) -> None:
        if self.cut.is_set() and "Lease" in args:
            raise ServerError("partitioned")

    def get(self, api_version: str, kind: str, *args: Any, **kwargs: Any) -> Obj:
        self._lease(kind)
        return self._inner.get(api_version, kind, *args, **kwargs)

    def update(self, obj: Obj, **kwargs: Any) -> Obj:
        self._lease(obj.get("kind"))
        return self._inner.update(obj, **kwargs)

    def create(self, obj: Obj, **kwargs: Any) -> Obj:
        self._lease(obj.get("kind"))
        return self._inner.create(obj, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


class Replica:
    """A member and its manager (workers gated by the tenure, passes admitted by the member)."""

    def __init__(self, name: str, cluster: MemoryCluster, kind: FakeKind, passes: Passes,
                 lease: dict[str, float] = STEADY) -> None:
        self.name = name
        self.link = Partitioned(cluster)
        catalog = {kind.key: kind}
        settings = LeaseSettings(NS, name, name, labels=((MEMBER_LABEL, "true"),), **lease)
        self.member = ShardMember(ClusterSet(self.link), catalog, settings, clock=PreciseClock())  # type: ignore[arg-type]
        self.manager: Manager[Any] = Manager(
            catalog, ClusterSet(cluster), clock=PreciseClock(), metrics=Metrics(CollectorRegistry()),
            run_pass=passes.runner(name), order_selector=self.member.selector, max_concurrent_reconciles=8,
            watch_timeout=0.5, recheck_interval=0.5,
        )
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self.member.run, args=(self.stop,), daemon=True),
            threading.Thread(target=self.manager.run, args=(self.stop,),
                             kwargs={"leading": self.member.active, "admit": self.member.admit}, daemon=True),
        ]
        for thread in self.threads:
            thread.start()

    def halt(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(10)
        assert not any(t.is_alive() for t in self.threads)


def wait_for(what: Callable[[], object], message: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not what():
        assert time.monotonic() < deadline, f"waited {PATIENCE}s for {message}"
        time.sleep(0.05)


def labels(cluster: MemoryCluster) -> dict[str, dict[str, str]]:
    return {o["metadata"]["name"]: dict(o["metadata"].get("labels") or {})
            for o in cluster.list("example.io/v1", "Widget").items}


def settled(cluster: MemoryCluster, kind: FakeKind, members: list[str]) -> bool:
    """Every order labelled with the member the ring picks among ``members``, none draining."""
    return all(
        found.get(SHARD_LABEL) == owner(order_key("", kind.key, "ns", name), members) and DRAIN_LABEL not in found
        for name, found in labels(cluster).items()
    )


def test_no_order_is_in_two_passes_at_once_while_members_join_lapse_and_leave() -> None:
    clock = PreciseClock()
    cluster = memory("", clock)
    for n in range(ORDERS):
        cluster.create(obj("Widget", f"w{n:02}"))
    kind = widget_kind()
    passes = Passes()
    leading, halt = threading.Event(), threading.Event()
    leading.set()
    assigner = Assigner(ClusterSet(cluster), {kind.key: kind}, NS, clock=clock, lease_duration=LEASE["lease_duration"])
    leader = threading.Thread(target=assigner.run, args=(halt, leading, 0.1), daemon=True)
    replicas = {name: Replica(name, cluster, kind, passes, lease=LEASE if name == "b" else STEADY)
                for name in ("a", "b", "c")}
    try:
        # The first round sees all three (a loaded machine may start them over several rounds: orders placed on
        # the first would then move, and its passes of them before the move are not what is checked here).
        wait_for(lambda: all(r.member.active.is_set() for r in replicas.values()), "three members")
        leader.start()
        wait_for(lambda: settled(cluster, kind, ["a", "b", "c"]), "three members to hold every order")
        wait_for(lambda: len(passes.by("a") | passes.by("b") | passes.by("c")) == ORDERS, "a pass of every order")
        first = {n: f[SHARD_LABEL] for n, f in labels(cluster).items()}
        assert all(passes.by(m) <= {n for n in first if first[n] == m} for m in "abc")

        # b is cut off from its Lease: it stops at its renew deadline, then only its orders move.
        replicas["b"].link.cut.set()
        wait_for(lambda: settled(cluster, kind, ["a", "c"]), "b's orders on a and c")
        wait_for(lambda: replicas["b"].member.lapses and not replicas["b"].member.active.is_set(), "b to stop")
        second = {n: f[SHARD_LABEL] for n, f in labels(cluster).items()}
        assert {n for n in first if first[n] != second[n]} == {n for n in first if first[n] == "b"}

        # d joins: only the orders it wins move, each after its owner handed it back.
        replicas["d"] = Replica("d", cluster, kind, passes)
        wait_for(lambda: settled(cluster, kind, ["a", "c", "d"]), "d to get its share")
        third = {n: f[SHARD_LABEL] for n, f in labels(cluster).items()}
        moved = {n for n in second if second[n] != third[n]}
        assert {third[n] for n in moved} == {"d"} and 0 < len(moved) < ORDERS
        wait_for(lambda: passes.by("d") >= moved, "d to run the orders it got")

        # c leaves gracefully: its orders go to a and d at once.
        replicas["c"].halt()
        assert replicas["c"].member.leave() == list(third.values()).count("c")
        wait_for(lambda: settled(cluster, kind, ["a", "d"]), "c's orders on a and d")
        fourth = {n: f[SHARD_LABEL] for n, f in labels(cluster).items()}
        assert {n for n in third if third[n] != fourth[n]} == {n for n in third if third[n] == "c"}
    finally:
        for replica in replicas.values():
            replica.halt()
        halt.set()
        if leader.is_alive():
            leader.join(5)
    assert passes.overlaps == []
    spans: dict[Request, list[tuple[float, float, str]]] = {}
    for who, request, start, end in passes.records:
        spans.setdefault(request, []).append((start, end, who))
    for request, runs in spans.items():
        runs.sort()
        for (_, end, who), (start, _, other) in itertools.pairwise(runs):
            assert end <= start, f"{request}: a pass by {other} started before the one by {who} ended"


class Candidate:
    """A replica as ``engine run --sharded`` wires it: a member, its manager, the leader election whose callbacks
    open and close the keys-only views (``Leadership``), and the assigner, placing orders from those views."""

    def __init__(self, name: str, cluster: MemoryCluster, kind: FakeKind, passes: Passes) -> None:
        self.replica = Replica(name, cluster, kind, passes)
        self.link = Partitioned(cluster)  # the leader Lease as this replica sees it
        sources = self.replica.manager.sources
        self.leadership = Leadership(sources)
        self.took_over: list[set[str]] = []
        """The orders that existed when it became leader (once per term)."""
        self.answers: list[set[str]] = []
        """The orders each answer of its view held."""

        def started() -> None:
            self.took_over.append(set(labels(cluster)))
            self.leadership.started()

        def keys_of(cluster_name: str, api_version: str, kind_name: str) -> list[Obj] | None:
            held = sources.keys_of(cluster_name, api_version, kind_name)
            if held is not None:
                self.answers.append({o["metadata"]["name"] for o in held})
            return held

        self.elector = LeaderElector(self.link, LeaseSettings(NS, "leader", name, **LEADER_LEASE),  # type: ignore[arg-type]
                                     clock=PreciseClock(), on_started_leading=started,
                                     on_stopped_leading=self.leadership.stopped)
        self.metrics = Metrics(CollectorRegistry())
        self.assigner = Assigner(ClusterSet(cluster), {kind.key: kind}, NS, clock=PreciseClock(),
                                 lease_duration=STEADY["lease_duration"], metrics=self.metrics)
        self.assigner.orders = keys_of
        stop = self.replica.stop
        self.threads = [threading.Thread(target=self.elector.run, args=(stop,), daemon=True),
                        threading.Thread(target=self.assigner.run, args=(stop, self.leadership.leading, 0.1),
                                         daemon=True)]
        for thread in self.threads:
            thread.start()

    def views(self) -> list[Any]:
        return [i for i in self.replica.manager.sources.informers() if i.keys_only]

    def moves(self, how: str) -> float:
        return self.metrics.registry.get_sample_value("c5c3_operator_shard_moves_total", {"how": how}) or 0.0

    def halt(self) -> None:
        self.replica.halt()
        for thread in self.threads:
            thread.join(10)


def test_only_the_leader_watches_every_order_and_a_new_leader_places_from_a_complete_view() -> None:
    """The keys-only view of every order is open on the leader only. When the leader changes while orders are
    being created, the old one closes its view, the new one opens its own and places nothing before it has
    listed every order that existed when it took over; every order is assigned once, none moved or drained."""
    clock = PreciseClock()
    cluster = memory("", clock)
    kind = widget_kind()
    passes = Passes()
    a = Candidate("a", cluster, kind, passes)
    wait_for(lambda: a.leadership.leading.is_set(), "a to lead")
    b = Candidate("b", cluster, kind, passes)
    creating = threading.Event()

    def create() -> None:
        """w10 to w39, paced: a is cut off from the leader Lease after ten of them, and the last five wait for b to
        lead, so the leader changes while orders are being created however long the take-over takes."""
        for n in range(10, 40):
            if n == 20:
                a.link.cut.set()  # a cannot renew the leader Lease: it stops leading, b takes over once it expired
            if n == 35:
                b.leadership.leading.wait(PATIENCE)
            cluster.create(obj("Widget", f"w{n:02}"))
            time.sleep(0.1)
        creating.set()

    try:
        # The first orders are created once both are members: placed on a alone, half of them would move to b.
        wait_for(lambda: a.replica.member.active.is_set() and b.replica.member.active.is_set(), "two members")
        for n in range(10):
            cluster.create(obj("Widget", f"w{n:02}"))
        wait_for(lambda: settled(cluster, kind, ["a", "b"]) and len(labels(cluster)) == 10,
                 "both members to hold the first orders")
        assert len(a.views()) == 1 and b.views() == []  # the follower decodes none of a's orders
        creator = threading.Thread(target=create, daemon=True)
        creator.start()
        wait_for(lambda: b.leadership.leading.is_set(), "b to lead")
        # a stops leading at its renew deadline, before the Lease expires for b; a starved thread may be late.
        wait_for(lambda: not a.leadership.leading.is_set() and a.views() == [], "a to stop leading")
        assert len(b.views()) == 1
        wait_for(creating.is_set, "every order to be created")
        wait_for(lambda: settled(cluster, kind, ["a", "b"]), "every order placed")
        wait_for(lambda: len(passes.by("a") | passes.by("b")) == 40, "a pass of every order")
    finally:
        a.halt()
        b.halt()
    [existing] = b.took_over
    assert 10 < len(existing) < 40, "the leader changed while orders were being created"
    assert b.answers and existing <= b.answers[0], "the new leader placed from a view missing orders"
    assert a.moves("assigned") + b.moves("assigned") == 40 and b.moves("assigned") > 0
    assert not any(c.moves(how) for c in (a, b) for how in ("drain", "moved", "reassigned"))
    assert passes.overlaps == []
