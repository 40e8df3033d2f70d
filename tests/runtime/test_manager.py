"""The manager's deterministic API (start, settle, advance, reconcile, engage) and its threaded run."""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from prometheus_client import CollectorRegistry
from runtime_kit import API, OWNER_LABEL, START, FakePass, FakeWatch, Script, memory, obj, request, widget_kind

from engine.clock import Clock
from engine.cluster.api import NotFound
from engine.cluster.registry import ClusterSet
from engine.metrics import Metrics
from engine.outcome import PassError, Request, Result, StepOutcome
from engine.runtime.manager import Manager, SettleLoop
from offline.clock import SimulatedClock

S = dt.timedelta(seconds=1)
MS = dt.timedelta(milliseconds=1)
CHILD = FakeWatch("Gadget", mapping="labels")


class World:
    """A management cluster on a simulated clock, a manager over it, and a scripted pass."""

    def __init__(self, script: Script | None = None, *, clock: Clock | None = None, **manager: object) -> None:
        self.clock = clock or SimulatedClock(START)
        self.cluster = memory(clock=self.clock)
        self.clusters = ClusterSet(self.cluster)
        self.registry = CollectorRegistry()
        self.fake = FakePass(script)
        self.kind = widget_kind(CHILD)
        self.manager = Manager(
            {self.kind.key: self.kind}, self.clusters, clock=self.clock, metrics=Metrics(self.registry),
            run_pass=self.fake, **manager,  # type: ignore[arg-type]
        )

    def child_on_first_pass(self, later: Script = lambda req, n: Result()) -> None:
        """Script the pass: its first run creates the order's child Gadget (whose event wakes the order again), every
        later run answers ``later``."""
        def script(req: Request, n: int) -> Result:
            if n == 1:
                self.cluster.create(obj("Gadget", f"{req.name}-child", labels={OWNER_LABEL: f"ns.{req.name}"}))
                return Result()
            return later(req, n)

        self.fake.script = script

    @contextlib.contextmanager
    def running(self) -> Iterator[threading.Thread]:
        """The manager's threaded run for the block, stopped and joined after it (also when the block fails)."""
        stop = threading.Event()
        runner = threading.Thread(target=self.manager.run, args=(stop,))
        runner.start()
        try:
            yield runner
        finally:
            stop.set()
            runner.join(10)

    def wait_for_passes(self, done: Callable[[], bool], deadline: float) -> None:
        """Wait, pass by pass, until ``done`` holds or the monotonic ``deadline`` passes (the test's asserts judge)."""
        while not done() and time.monotonic() < deadline:
            self.fake.changed.wait(0.05)

    def at(self) -> list[tuple[str, float]]:
        """Each pass as (order name, seconds since the start)."""
        return [(r.name, (t - START).total_seconds()) for r, t in self.fake.runs]


def requeue_first(delay: dt.timedelta) -> Script:
    return lambda req, n: Result(requeue_after=delay) if n == 1 else Result()


def test_start_queues_every_order_and_settle_runs_each_once() -> None:
    """Every order present at start gets one pass; settle returns how many ran."""
    w = World()
    for name in ("a", "b", "c"):
        w.cluster.create(obj("Widget", name))
    w.manager.start()
    assert w.manager.settle() == 3
    assert w.fake.names() == ["a", "b", "c"]
    assert w.manager.settle() == 0


def test_settle_runs_what_a_pass_wakes() -> None:
    """Events caused by a pass's writes are pumped after it and queue their orders."""
    w = World()
    w.child_on_first_pass()
    w.cluster.create(obj("Widget", "a"))
    w.manager.start()
    assert w.manager.settle() == 2
    assert w.fake.names() == ["a", "a"]


def test_settle_leaves_timers_that_are_not_due() -> None:
    """A requeue waits for the clock: settle does not run it, advance does, at its time."""
    w = World(requeue_first(30 * S))
    w.cluster.create(obj("Widget", "a"))
    w.manager.start()
    assert w.manager.settle() == 1
    assert w.manager.advance(29 * S) == 0
    assert w.manager.advance(1 * S) == 1
    assert w.at() == [("a", 0.0), ("a", 30.0)]
    assert w.clock.now() == START + 30 * S


def test_advance_fires_timers_in_time_order() -> None:
    """Timers fire one instant at a time, earliest first, each pass seeing its own instant."""
    delays = {"a": 20 * S, "b": 10 * S, "c": 15 * S}
    w = World(lambda req, n: Result(requeue_after=delays[req.name]) if n == 1 else Result())
    for name in delays:
        w.cluster.create(obj("Widget", name))
    w.manager.start()
    assert w.manager.advance(dt.timedelta(minutes=1)) == 6
    assert w.at()[3:] == [("b", 10.0), ("c", 15.0), ("a", 20.0)]
    assert w.clock.now() == START + dt.timedelta(minutes=1)


def test_settle_bound_names_the_looping_order() -> None:
    """An order that wakes itself at one instant makes settle raise SettleLoop after max_passes."""
    w = World(lambda req, n: Result(requeue_after=dt.timedelta(0)) if req.name == "loop" else Result())
    w.cluster.create(obj("Widget", "calm"))
    w.cluster.create(obj("Widget", "loop"))
    w.manager.start()
    with pytest.raises(SettleLoop, match=r"more than 10 passes .* Widget ns/loop ran 9 times") as caught:
        w.manager.settle(max_passes=10)
    assert caught.value.request == request("loop")
    assert len(w.fake.runs) == 10


def test_errors_back_off_on_the_simulated_clock() -> None:
    """A failing pass is not retried within one settle; advance retries it at 5 ms, then 10 ms later, ..."""
    w = World(lambda req, n: Result(error=PassError("no")) if n <= 3 else Result())
    w.cluster.create(obj("Widget", "a"))
    w.manager.start()
    assert w.manager.settle() == 1
    assert w.manager.advance(S) == 3
    assert w.at() == [("a", 0.0), ("a", 0.005), ("a", 0.015), ("a", 0.035)]
    assert w.manager.queue.failures(request("a")) == 0
    assert w.registry.get_sample_value("c5c3_operator_reconcile_total", {"result": "error"}) == 3


def test_reconcile_runs_now_and_goes_through_the_switch() -> None:
    """reconcile runs one pass at once, keeps its result, turns its requeue into a timer,
    and leaves the order's queued entry in place."""
    w = World(lambda req, n: Result(requeue_after=dt.timedelta(minutes=1)))
    w.cluster.create(obj("Widget", "a"))
    w.manager.start()
    result = w.manager.reconcile(request("a"))
    assert w.manager.last_result is result
    assert result.requeue_after == dt.timedelta(minutes=1)
    assert w.manager.queue.waiting() == [request("a")]
    assert w.manager.queue.timers() == {request("a"): START + dt.timedelta(minutes=1)}


def test_reconcile_error_becomes_a_backoff_retry() -> None:
    """An error from reconcile is returned and retried on the backoff like any pass's."""
    w = World(lambda req, n: Result(error=PassError("no")) if n == 1 else Result())
    w.manager.start()
    assert isinstance(w.manager.reconcile(request("a")).error, PassError)
    assert w.manager.queue.timers() == {request("a"): START + 5 * MS}
    assert w.manager.advance(S) == 1


def test_reconcile_queues_what_its_writes_wake() -> None:
    """Events caused by a reconcile's writes are queued for the next settle."""
    w = World()
    w.manager.start()
    cluster = w.cluster
    w.fake.script = lambda req, n: (cluster.create(obj("Gadget", "g", labels={OWNER_LABEL: "ns.b"})), Result())[1]
    w.manager.reconcile(request("a"))
    assert w.manager.queue.waiting() == [request("b")]


def test_engage_lists_and_queues_a_target_clusters_orders() -> None:
    """A cluster engaged later is watched at once; its orders run with its name; disengaging stops that."""
    w = World()
    w.manager.start()
    edge = memory("edge", clock=w.clock)
    edge.create(obj("Widget", "a"))
    w.manager.engage("edge", edge)
    assert w.manager.settle() == 1
    assert w.fake.runs[0][0] == request("a", cluster="edge")
    w.manager.disengage("edge")
    edge.create(obj("Widget", "b"))
    assert w.manager.settle() == 0
    assert w.clusters.names() == [""]


def test_re_engaging_queues_the_orders_again() -> None:
    """Engaging a cluster that is engaged already re-lists it, as a changed registration would."""
    w = World()
    edge = memory("edge", clock=w.clock)
    edge.create(obj("Widget", "a"))
    w.clusters.engage("edge", edge)
    w.manager.start()
    assert w.manager.settle() == 1
    w.manager.engage("edge", edge)
    assert w.manager.settle() == 1


def test_a_kind_served_later_is_watched_by_the_manager() -> None:
    """Orders of a kind the cluster starts serving after start are queued without a restart."""
    w = World()
    w.cluster.create(obj("Widget", "a"))
    w.cluster.unserve(API, "Widget")
    w.manager.start()
    assert w.manager.settle() == 0
    w.cluster.serve(API, "Widget")
    assert w.manager.settle() == 1


def test_a_request_for_an_unknown_kind_is_dropped() -> None:
    """A request naming no kind of the catalog runs no pass and succeeds."""
    w = World()
    w.manager.start()
    result = w.manager.reconcile(Request(f"{API}/Unknown", "", "ns", "x"))
    assert result == Result()
    assert w.fake.runs == []


def test_advance_needs_a_movable_clock() -> None:
    """advance on a clock that cannot be moved says so."""

    class Fixed:
        def now(self) -> dt.datetime:
            return START

    w = World(clock=Fixed())
    w.manager.start()
    with pytest.raises(TypeError, match="moved"):
        w.manager.advance(S)


def test_settle_before_start_is_refused() -> None:
    """settle on an unstarted manager raises instead of silently doing nothing."""
    with pytest.raises(RuntimeError, match="start"):
        World().manager.settle()


def test_pass_outcomes_are_recorded() -> None:
    """The step outcomes of passes run by settle reach the registry."""
    w = World(lambda req, n: Result(outcomes=[StepOutcome("WidgetProvision", "Provisioned", 0.1, True)]))
    w.cluster.create(obj("Widget", "a"))
    w.manager.start()
    w.manager.settle()
    labels = {"sub_reconciler": "WidgetProvision", "condition_type": "Provisioned"}
    assert w.registry.get_sample_value("c5c3_operator_reconcile_errors_total", labels) == 1


class WallClock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)


def test_threaded_run_never_runs_one_order_twice_at_once() -> None:
    """With several workers and an order woken again mid-pass, its passes never overlap, yet it runs again."""
    w = World(clock=WallClock(), max_concurrent_reconciles=4, watch_timeout=0.2)
    w.fake.delay = 0.05
    for name in ("a", "b", "c"):
        w.cluster.create(obj("Widget", name, spec={"n": 0}))
    with w.running() as runner:
        deadline = time.monotonic() + 5
        w.wait_for_passes(lambda: len(w.fake.runs) >= 3, deadline)
        for n in range(1, 6):
            w.cluster.patch(API, "Widget", "ns", "a", {"spec": {"n": n}})
            time.sleep(0.01)
        w.wait_for_passes(lambda: w.fake.names().count("a") >= 2, deadline)
    assert not runner.is_alive()
    assert sorted(set(w.fake.names())) == ["a", "b", "c"]
    assert w.fake.names().count("a") >= 2
    assert max(w.fake.max_running.values()) == 1
    assert w.registry.get_sample_value("c5c3_operator_active_workers") == 0


def test_threaded_run_recovers_from_a_raising_pass() -> None:
    """In threaded mode a pass that raises is retried with backoff instead of killing its worker."""
    def script(req: Request, n: int) -> Result:
        if n == 1:
            raise NotFound("a bug that looks like an API error")
        return Result()

    w = World(script, clock=WallClock(), watch_timeout=0.2)
    w.cluster.create(obj("Widget", "a"))
    with w.running():
        w.wait_for_passes(lambda: len(w.fake.runs) >= 2, time.monotonic() + 5)
    assert w.fake.names()[:2] == ["a", "a"]


def test_passes_are_counted_by_the_kind_whose_event_woke_them_and_by_requeue() -> None:
    """c5c3_operator_pass_wakes_total tells an order's own event, a child's event and a wait's re-check apart."""
    w = World()
    w.child_on_first_pass(lambda req, n: Result(requeue_after=10 * S) if n == 2 else Result())
    w.cluster.create(obj("Widget", "a"))
    w.manager.start()
    w.manager.settle()
    w.manager.advance(10 * S)

    def wakes(cause: str, kind: str = "") -> float | None:
        return w.registry.get_sample_value("c5c3_operator_pass_wakes_total", {"cause": cause, "kind": kind})

    assert (wakes("event", "Widget"), wakes("event", "Gadget"), wakes("requeue")) == (1, 1, 1)
