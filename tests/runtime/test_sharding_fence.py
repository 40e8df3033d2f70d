"""The write fence: a pass held past its member's renew deadline writes nothing afterwards, so it cannot
overlap the pass of the member the leader gives its order to once the Lease lapsed (decision 0033)."""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry
from runtime_kit import START, FakeKind, memory, obj, request, widget_kind
from test_sharding_threads import LEASE, Partitioned, wait_for

from engine.cluster.api import AlreadyExists, ApiError, NotFound, Obj
from engine.cluster.registry import ClusterSet
from engine.metrics import Metrics
from engine.outcome import PassError, Request, Result
from engine.runtime.leader import LeaseSettings, PreciseClock
from engine.runtime.manager import Manager
from engine.runtime.sharding.assigner import Assigner
from engine.runtime.sharding.labels import MEMBER_LABEL, SHARD_LABEL
from engine.runtime.sharding.member import ShardMember
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster

NS = "c5c3-system"
S = dt.timedelta(seconds=1)


def owner_label(cluster: MemoryCluster, name: str) -> str:
    labels = cluster.get("example.io/v1", "Widget", "ns", name)["metadata"].get("labels") or {}
    return str(labels.get(SHARD_LABEL) or "")


def exists(cluster: MemoryCluster, kind: str, name: str) -> bool:
    try:
        cluster.get("example.io/v1", kind, "ns", name)
    except NotFound:
        return False
    return True


def writing_pass(member: str, hold: Callable[[], None]) -> Callable[..., Result]:
    """A pass of ``member`` that reads its order, is held (``hold``), then creates a child named after the
    member and writes the order's status (when it would change); an API error ends it as ``run_pass`` ends
    one (the error in the Result)."""

    def run(kind: FakeKind, req: Request, *, clusters: ClusterSet, **_: Any) -> Result:
        cluster = clusters.resolve(req.cluster)
        order = cluster.get(kind.api_version, kind.kind, req.namespace, req.name)
        hold()
        try:
            with contextlib.suppress(AlreadyExists):
                cluster.create(obj("Child", f"{req.name}-by-{member}"))
            if order.get("status") != {"by": member}:
                cluster.update_status({**order, "status": {"by": member}})
        except ApiError as err:
            return Result(error=PassError(str(err)))
        return Result()

    return run


def test_a_pass_held_past_the_renew_deadline_writes_nothing_after_its_order_moved() -> None:
    """Simulated clock: a's pass reads, is held while a stops renewing and the leader, a lease duration
    later, gives the order to b; when it goes on, its create and its status write are refused unsent."""
    clock = SimulatedClock(START)
    cluster = memory("", clock)
    kind = widget_kind()
    catalog = {kind.key: kind}
    for n in range(12):
        cluster.create(obj("Widget", f"w{n:02}"))
    metrics = Metrics(CollectorRegistry())
    members = {}
    for name in ("a", "b"):
        settings = LeaseSettings(NS, name, name, lease_duration=15, renew_deadline=10, retry_period=2,
                                 labels=((MEMBER_LABEL, "true"),))
        members[name] = ShardMember(ClusterSet(cluster), catalog, settings, clock=clock, metrics=metrics)
        members[name].elector.step()
    assigner = Assigner(ClusterSet(cluster), catalog, NS, clock=clock, lease_duration=15)
    assigner.step()
    name = next(f"w{n:02}" for n in range(12) if owner_label(cluster, f"w{n:02}") == "a")

    # While a holds its tenure, the pass writes.
    result = members["a"].passes(writing_pass("a", lambda: None))(kind, request(name),
                                                                    clusters=ClusterSet(cluster), clock=clock, log=None)
    assert result.error is None and exists(cluster, "Child", f"{name}-by-a")
    cluster.delete("example.io/v1", "Child", "ns", f"{name}-by-a")
    order = cluster.get("example.io/v1", "Widget", "ns", name)
    cluster.update_status({**order, "status": {}})

    def lapse_and_move() -> None:
        """Held: only b renews; a's deadline passes; the leader moves a's orders once its Lease expired."""
        for _ in range(12):
            clock.advance(2 * S)
            members["b"].elector.step()
            for member in members.values():
                member.elector.check_deadline()
            assigner.step()
            if owner_label(cluster, name) == "b":
                return
        raise AssertionError("the order never moved to b")

    result = members["a"].passes(writing_pass("a", lapse_and_move))(kind, request(name),
                                                                      clusters=ClusterSet(cluster), clock=clock,
                                                                      log=None)
    assert owner_label(cluster, name) == "b" and members["a"].lapses
    assert isinstance(result.error, PassError) and "tenure has lapsed" in str(result.error)
    assert not exists(cluster, "Child", f"{name}-by-a")
    assert cluster.get("example.io/v1", "Widget", "ns", name)["status"] == {}
    assert metrics.shard_fenced_writes._value.get() == 1  # the create; the pass ended there
    assert not members["a"].holds() and members["b"].holds()
    members["b"].leave()
    assert not members["b"].holds()  # a graceful stop closes the fence before it hands the orders back


def test_a_fence_check_never_waits_for_the_members_lock() -> None:
    """The fence is asked before every request of every pass (a cached read too), so it reads the tenure without
    the member's lock: a pass is not held up while another thread holds the lock (an admission, a lapse)."""
    clock = SimulatedClock(START)
    cluster = memory("", clock)
    kind = widget_kind()
    settings = LeaseSettings(NS, "a", "a", lease_duration=15, renew_deadline=10, retry_period=2,
                             labels=((MEMBER_LABEL, "true"),))
    member = ShardMember(ClusterSet(cluster), {kind.key: kind}, settings, clock=clock)
    member.elector.step()
    answers: list[bool] = []
    with member._lock:  # held by this thread; another thread's check must not wait for it
        checker = threading.Thread(target=lambda: answers.append(member.holds()), daemon=True)
        checker.start()
        checker.join(timeout=5)
        assert answers == [True]
    clock.advance(11 * S)  # past the renew deadline with no renewal: the same check refuses
    assert not member.holds()


class Held:
    """The management cluster as a's workers see it: one read of the order blocks until released."""

    def __init__(self, inner: MemoryCluster, name: str) -> None:
        self._inner = inner
        self._name = name
        self.entered = threading.Event()
        self.release = threading.Event()

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, **kwargs: Any) -> Obj:
        found = self._inner.get(api_version, kind, namespace, name, **kwargs)
        if kind == "Widget" and name == self._name and not self.entered.is_set():
            self.entered.set()
            self.release.wait(30)  # a slow API call: the whole Lease lapses meanwhile
        return found

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


def test_a_blocked_call_outlasting_the_lease_lets_no_write_through_once_the_order_moved() -> None:
    """Threaded, wall clock: a's worker is blocked in an API call of an order's pass while a is cut off from
    its Lease; the leader gives the order to b, whose pass runs; when the call returns, a sends no write."""
    clock = PreciseClock()
    cluster = memory("", clock)
    kind = widget_kind()
    catalog = {kind.key: kind}
    cluster.create(obj("Widget", "w00", labels={SHARD_LABEL: "a"}))  # as the leader would, had the ring picked a
    names = ("a", "b")
    links = {name: Partitioned(cluster) for name in names}
    metrics = {name: Metrics(CollectorRegistry()) for name in names}
    members = {name: ShardMember(ClusterSet(links[name]), catalog,  # type: ignore[arg-type]
                                 LeaseSettings(NS, name, name, labels=((MEMBER_LABEL, "true"),), **LEASE),
                                 clock=clock, metrics=metrics[name])
               for name in names}
    held = Held(cluster, "w00")
    passes: dict[str, int] = {"a": 0, "b": 0}
    a_ended = threading.Event()

    def counted(name: str, inner: Callable[..., Result]) -> Callable[..., Result]:
        def run(*args: Any, **kwargs: Any) -> Result:
            passes[name] += 1
            try:
                return inner(*args, **kwargs)
            finally:
                if name == "a":
                    a_ended.set()

        return run

    stop = threading.Event()
    threads = []
    for name in names:
        member = members[name]
        view = ClusterSet(held if name == "a" else cluster)  # type: ignore[arg-type]
        manager: Manager[Any] = Manager(catalog, view, clock=clock, metrics=metrics[name],
                                        run_pass=member.passes(counted(name, writing_pass(name, lambda: None))),
                                        order_selector=member.selector, watch_timeout=0.5, recheck_interval=0.5)
        threads += [threading.Thread(target=member.run, args=(stop,), daemon=True),
                    threading.Thread(target=manager.run, args=(stop,),
                                     kwargs={"leading": member.active, "admit": member.admit}, daemon=True)]
    for thread in threads:
        thread.start()
    leading = threading.Event()
    leading.set()
    assigner = Assigner(ClusterSet(cluster), catalog, NS, clock=clock, lease_duration=LEASE["lease_duration"])
    leader = threading.Thread(target=assigner.run, args=(stop, leading, 0.1), daemon=True)
    threads.append(leader)
    try:
        wait_for(lambda: members["a"].active.is_set() and members["b"].active.is_set(), "both members to join")
        leader.start()
        # The ring may prefer b and drain it; a's pass is held in its read whichever way: the drain waits.
        wait_for(held.entered.is_set, "a's pass to be held in its read of the order")
        links["a"].cut.set()
        wait_for(lambda: members["a"].lapses, "a to miss its renew deadline")
        wait_for(lambda: owner_label(cluster, "w00") == "b", "the leader to give the order to b")
        wait_for(lambda: exists(cluster, "Child", "w00-by-b"), "b's pass to create its child")
        held.release.set()
        wait_for(a_ended.is_set, "a's held pass to end")
        assert not exists(cluster, "Child", "w00-by-a"), "a wrote after its Lease lapsed"
        assert metrics["a"].shard_fenced_writes._value.get() == 1
        assert cluster.get("example.io/v1", "Widget", "ns", "w00")["status"] == {"by": "b"}
        assert passes["a"] == 1
    finally:
        held.release.set()
        stop.set()
        for thread in threads:
            thread.join(10)
