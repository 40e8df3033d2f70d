"""The outcome switch: errors back off, terminal errors stop, requeues wait, successes forget; metrics recorded."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import threading

import pytest
from prometheus_client import CollectorRegistry
from runtime_kit import API, START, request

from engine.metrics import Metrics
from engine.outcome import EventNote, PassError, Request, Result, StepOutcome, TerminalError
from engine.runtime.controller import Controller
from engine.runtime.echoes import Echoes
from engine.runtime.queue import Wake, WorkQueue
from offline.clock import SimulatedClock

MS = dt.timedelta(milliseconds=1)
LOG = logging.getLogger("tests.runtime")


class Harness:
    """A controller over a queue, running a pass that answers whatever ``answer`` holds."""

    def __init__(self) -> None:
        self.clock = SimulatedClock(START)
        self.registry = CollectorRegistry()
        self.queue = WorkQueue(self.clock)
        self.answer = Result()
        self.raises: Exception | None = None
        self.controller = Controller(self.queue, self._run, metrics=Metrics(self.registry), log=LOG)

    def _run(self, req: Request) -> Result:
        if self.raises is not None:
            raise self.raises
        return self.answer

    def passes(self, result: str) -> float:
        return self.registry.get_sample_value("c5c3_operator_reconcile_total", {"result": result}) or 0.0


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_success_forgets_the_backoff_and_queues_nothing(h: Harness) -> None:
    """A clean pass resets the order's failures and leaves no timer."""
    h.queue.add_rate_limited(request("a"))
    h.clock.advance(5 * MS)
    h.queue.fire_due()
    assert h.controller.process_next() == request("a")
    assert h.queue.timers() == {}
    assert h.queue.depth == 0
    assert h.queue.failures(request("a")) == 0
    assert h.passes("success") == 1


def test_error_retries_with_doubling_backoff(h: Harness) -> None:
    """A failed pass comes back after 5 ms, then 10 ms, on the clock."""
    h.answer = Result(error=PassError("the API said no"))
    h.controller.run_pass(request("a"))
    assert h.queue.timers() == {request("a"): START + 5 * MS}
    h.clock.advance(5 * MS)
    h.queue.fire_due()
    assert h.controller.process_next() == request("a")
    assert h.queue.timers() == {request("a"): START + 15 * MS}
    assert h.passes("error") == 2


def test_terminal_error_is_counted_not_retried(h: Harness) -> None:
    """A TerminalError leaves no timer and resets the backoff."""
    h.queue.add_rate_limited(request("a"))
    h.answer = Result(error=TerminalError("the rule file is wrong"), requeue_after=dt.timedelta(seconds=5))
    h.clock.advance(5 * MS)
    h.queue.fire_due()
    assert h.controller.process_next() == request("a")
    assert h.queue.timers() == {}
    assert h.queue.depth == 0
    assert h.queue.failures(request("a")) == 0
    assert h.passes("terminal_error") == 1


def test_requeue_after_forgets_backoff_and_waits(h: Harness) -> None:
    """A pass asking to come back is queued after exactly that delay, with its backoff reset."""
    h.queue.add_rate_limited(request("a"))
    h.queue.add_rate_limited(request("a"))
    h.clock.advance(dt.timedelta(seconds=1))
    h.queue.fire_due()
    h.answer = Result(requeue_after=dt.timedelta(minutes=1))
    h.controller.process_next()
    assert h.queue.timers() == {request("a"): START + dt.timedelta(seconds=61)}
    assert h.queue.failures(request("a")) == 0
    assert h.passes("requeue_after") == 1


@pytest.mark.parametrize("answer", [Result(requeue_after=dt.timedelta(seconds=10)),
                                    Result(error=PassError("the API said no"))])
def test_a_failing_event_sink_still_queues_the_order_again(h: Harness, answer: Result) -> None:
    """A wait's re-check or an error's retry is the only thing that brings such an order back: a bug in
    recording its Event is raised, and the order is queued again all the same."""
    def broken_sink(req: Request, note: EventNote) -> None:
        raise RuntimeError("the recorder is broken")

    h.controller.events = broken_sink
    h.answer = dataclasses.replace(answer, event=EventNote("Waiting", "still waiting"))
    with pytest.raises(RuntimeError, match="recorder is broken"):
        h.controller.run_pass(request("a"))
    assert set(h.queue.timers()) == {request("a")}


def test_error_wins_over_requeue_after(h: Harness) -> None:
    """A pass with both an error and a requeue retries on the backoff."""
    h.answer = Result(error=PassError("boom"), requeue_after=dt.timedelta(minutes=5))
    h.controller.run_pass(request("a"))
    assert h.queue.timers() == {request("a"): START + 5 * MS}


def test_step_outcomes_become_duration_and_error_samples(h: Harness) -> None:
    """Each outcome is one duration observation; only errored ones count as errors, by condition."""
    h.answer = Result(outcomes=[
        StepOutcome("WidgetProvision", "Provisioned", 0.2, False),
        StepOutcome("WidgetDelivery", "Delivered", 0.03, True),
    ])
    h.controller.run_pass(request("a"))
    h.controller.run_pass(request("b"))
    sample = h.registry.get_sample_value
    duration = "c5c3_operator_reconcile_duration_seconds"
    assert sample(f"{duration}_count", {"sub_reconciler": "WidgetProvision"}) == 2
    assert sample(f"{duration}_sum", {"sub_reconciler": "WidgetProvision"}) == pytest.approx(0.4)
    assert sample(f"{duration}_bucket", {"sub_reconciler": "WidgetDelivery", "le": "0.05"}) == 2
    assert sample(f"{duration}_bucket", {"sub_reconciler": "WidgetDelivery", "le": "0.01"}) == 0
    errors = "c5c3_operator_reconcile_errors_total"
    assert sample(errors, {"sub_reconciler": "WidgetDelivery", "condition_type": "Delivered"}) == 2
    assert sample(errors, {"sub_reconciler": "WidgetProvision", "condition_type": "Provisioned"}) is None


def test_a_raising_pass_propagates_by_default(h: Harness) -> None:
    """Without recover, a bug in the pass surfaces (tests and scenarios see it) and the order is done."""
    h.queue.add(request("a"))
    h.raises = KeyError("bug")
    with pytest.raises(KeyError):
        h.controller.process_next()
    assert h.queue.processing() == set()
    assert h.registry.get_sample_value("c5c3_operator_active_workers") == 0


def test_a_raising_pass_is_retried_when_recovering(h: Harness) -> None:
    """With recover, a bug in the pass is treated as an error: logged and retried with backoff."""
    h.controller.recover = True
    h.raises = KeyError("bug")
    result = h.controller.run_pass(request("a"))
    assert isinstance(result.error, KeyError)
    assert h.queue.timers() == {request("a"): START + 5 * MS}


def test_metric_prefix_is_a_parameter() -> None:
    """Metrics built with another prefix expose every family under it."""
    registry = CollectorRegistry()
    metrics = Metrics(registry, prefix="acme")
    metrics.record_outcomes([StepOutcome("S", "C", 1.0, True)])
    metrics.set_leader(True)
    assert registry.get_sample_value("acme_reconcile_errors_total", {"sub_reconciler": "S", "condition_type": "C"}) == 1
    assert registry.get_sample_value("acme_leader_status") == 1
    assert registry.get_sample_value("c5c3_operator_leader_status") is None


def test_a_clean_pass_drops_the_timer_an_earlier_pass_set(h: Harness) -> None:
    """An order that waited (re-check in 10 s) and then converged on an event is not passed again at
    10 s: the last pass saw the latest state (issue 11: no stale re-checks in the steady state)."""
    h.queue.add(request("a"))
    h.answer = Result(requeue_after=dt.timedelta(seconds=10))
    h.controller.process_next()
    assert request("a") in h.queue.timers()
    h.queue.add(request("a"))  # the event it waited for
    h.answer = Result()
    assert h.controller.process_next() == request("a")
    assert h.queue.timers() == {}
    h.clock.advance(dt.timedelta(seconds=10))
    assert h.queue.fire_due() == 0
    assert h.controller.process_next() is None


def test_a_requeue_replaces_an_earlier_passes_timer(h: Harness) -> None:
    """The last pass's requeue wins, even when an earlier pass asked to come back sooner."""
    h.queue.add(request("a"))
    h.answer = Result(requeue_after=dt.timedelta(seconds=10))
    h.controller.process_next()
    h.queue.add(request("a"))
    h.answer = Result(requeue_after=dt.timedelta(minutes=30))
    h.controller.process_next()
    assert h.queue.timers() == {request("a"): START + dt.timedelta(minutes=30)}


def test_an_error_keeps_the_earlier_timer_when_it_is_sooner(h: Harness) -> None:
    """A failed pass saw nothing reliable: its backoff joins, and the earliest timer still wins."""
    h.queue.add(request("a"))
    h.answer = Result(requeue_after=dt.timedelta(milliseconds=1))
    h.controller.process_next()
    h.queue.add(request("a"))
    h.answer = Result(error=PassError("boom"))
    h.controller.process_next()
    assert h.queue.timers() == {request("a"): START + dt.timedelta(milliseconds=1)}


def test_the_writes_of_an_admission_are_its_orders_so_their_echoes_do_not_wake_it(h: Harness) -> None:
    """A shard member's admission may write for the order (the take-over relabels its children before the first
    pass, which then reads them): the events echoing those writes do not queue the order for a second pass."""
    echoes = Echoes(lambda request, kind: h.queue.add(request))
    writes = echoes.observer("")

    def admit(req: Request) -> str:
        ticket = writes.sending(API, "Gadget", "ns", "g")
        writes.answered(ticket, {"metadata": {"resourceVersion": "7"}})
        return "run"

    h.queue.add(request("a"))
    stop = threading.Event()
    worker = threading.Thread(target=h.controller.work, args=(stop,), kwargs={"poll": 0.01, "admit": admit})
    worker.start()
    try:
        for _ in range(500):
            if h.passes("success"):
                break
            threading.Event().wait(0.01)
    finally:
        stop.set()
        worker.join(5)
    assert h.passes("success") == 1
    echo = {"metadata": {"namespace": "ns", "name": "g", "resourceVersion": "7"}}
    assert echoes.echo_of("", API, "Gadget", echo) == request("a")


def test_passes_are_counted_by_what_queued_them(h: Harness) -> None:
    """c5c3_operator_pass_wakes_total: an event's pass by its object's kind, a wait's re-check, a retry."""
    h.queue.add(request("a"), Wake("event", "Secret"))
    h.answer = Result(requeue_after=dt.timedelta(seconds=10))
    h.controller.process_next()
    h.clock.advance(dt.timedelta(seconds=10))
    h.queue.fire_due()
    h.answer = Result(error=PassError("the API said no"))
    h.controller.process_next()
    h.clock.advance(dt.timedelta(seconds=1))
    h.queue.fire_due()
    h.answer = Result()
    h.controller.process_next()

    def wakes(cause: str, kind: str = "") -> float | None:
        return h.registry.get_sample_value("c5c3_operator_pass_wakes_total", {"cause": cause, "kind": kind})

    assert (wakes("event", "Secret"), wakes("requeue"), wakes("retry")) == (1, 1, 1)
