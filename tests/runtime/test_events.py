"""Warning Events on orders: written beside the pass, deduplicated into a series, rate-limited, never fatal."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from pathlib import Path

from prometheus_client import CollectorRegistry

from engine.cluster.registry import ClusterSet
from engine.metrics import Metrics
from engine.outcome import EventNote, Request
from engine.rules.catalog import load_catalog
from engine.runtime import events
from engine.runtime.events import EventRecorder
from engine.runtime.manager import Manager
from offline.clock import SimulatedClock
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster

EVENTS = "events.k8s.io/v1"
REQUEST = Request("example.io/v1/Widget", "", "ns", "w")
NOTE = EventNote("Broken", "size 5 is more than 3", "uid-1")


class World:
    def __init__(self) -> None:
        self.clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
        self.cluster = MemoryCluster("", clock=self.clock, permissive=True)
        self.faulty = FaultyCluster(self.cluster, cluster_name="")
        self.metrics = Metrics(CollectorRegistry())
        self.recorder = EventRecorder(ClusterSet(self.faulty), clock=self.clock, instance="operator-0",
                                      metrics=self.metrics)

    def events(self) -> list[dict]:  # type: ignore[type-arg]
        return self.cluster.list(EVENTS, "Event", "ns").items

    def counted(self, result: str) -> float:
        return float(self.metrics.events.labels(result=result)._value.get())


def test_a_note_becomes_a_warning_event_on_the_order() -> None:
    w = World()
    w.recorder.record(REQUEST, NOTE)
    assert w.events() == []  # queued: nothing written on the caller's thread
    w.recorder.flush()
    (event,) = w.events()
    assert event["regarding"] == {"apiVersion": "example.io/v1", "kind": "Widget", "namespace": "ns", "name": "w",
                                  "uid": "uid-1"}
    assert (event["type"], event["reason"], event["note"]) == ("Warning", "Broken", "size 5 is more than 3")
    assert event["reportingController"] == events.REPORTING_CONTROLLER
    assert event["reportingInstance"] == "operator-0"
    assert event["eventTime"] == "2026-01-01T00:00:00.000000Z"
    assert "series" not in event


def test_the_same_note_again_joins_a_series_and_another_note_is_another_event() -> None:
    w = World()
    w.recorder.record(REQUEST, NOTE)
    w.recorder.flush()
    w.clock.advance(dt.timedelta(minutes=1))
    w.recorder.record(REQUEST, NOTE)
    w.recorder.record(REQUEST, EventNote("Broken", "size 6 is more than 3", "uid-1"))
    w.recorder.flush()
    series = {e["note"]: e.get("series") for e in w.events()}
    assert series == {"size 5 is more than 3": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"},
                      "size 6 is more than 3": None}
    w.clock.advance(events.SERIES_WINDOW + dt.timedelta(seconds=1))  # long after: a new Event
    w.recorder.record(REQUEST, NOTE)
    w.recorder.flush()
    assert len(w.events()) == 3


def test_an_order_failing_in_a_loop_is_rate_limited() -> None:
    w = World()
    for n in range(events.BURST + 5):
        w.recorder.record(REQUEST, EventNote("Broken", f"attempt {n}", "uid-1"))
        w.recorder.flush()
    assert len(w.events()) == events.BURST
    assert w.counted("dropped") == 5
    w.clock.advance(events.REFILL)  # one more token
    w.recorder.record(REQUEST, EventNote("Broken", "later", "uid-1"))
    w.recorder.flush()
    assert len(w.events()) == events.BURST + 1


def test_a_failing_event_write_is_counted_and_never_raised() -> None:
    w = World()
    w.faulty.inject(verb="create", kind="Event", error="Forbidden")
    w.recorder.record(REQUEST, NOTE)
    w.recorder.flush()
    assert w.events() == [] and w.counted("failed") == 1


def test_a_full_queue_drops_notes_without_blocking() -> None:
    w = World()
    w.recorder = EventRecorder(ClusterSet(w.faulty), clock=w.clock, instance="i", metrics=w.metrics, queue_size=1)
    w.recorder.record(REQUEST, NOTE)
    w.recorder.record(REQUEST, NOTE)
    assert w.counted("dropped") == 1


def test_the_recorder_thread_writes_until_stopped() -> None:
    w = World()
    stop = threading.Event()
    thread = threading.Thread(target=w.recorder.run, args=(stop,), kwargs={"poll": 0.01})
    thread.start()
    w.recorder.record(REQUEST, NOTE)
    stop.set()
    thread.join(5)
    assert not thread.is_alive() and len(w.events()) == 1


GATED = """\
gates:
  - name: size-limit
    when: "size > `3`"
    reason: Broken
    message: "size {{ size }} is more than 3"
    requeue: 1m
steps:
"""


def test_beside_the_pass_the_pass_calls_stay_and_a_failing_write_never_fails_it(
        rules_dir: Callable[..., Path]) -> None:
    """Through the manager: a refused order's pass makes exactly its own calls; its Event is written after,
    by the recorder; an Event that cannot be written leaves the pass's result and the order's status alone."""
    from tests.conftest import WIDGET

    w = World()
    catalog = load_catalog(rules_dir(WIDGET.replace("steps:\n", GATED)))
    manager: Manager[object] = Manager(catalog, ClusterSet(w.faulty), clock=w.clock, metrics=w.metrics,
                                       events=w.recorder.record)  # type: ignore[type-var]
    w.cluster.create({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
                      "spec": {"size": 5}})
    request = Request(next(iter(catalog)), "", "ns", "w")
    manager.start()
    w.recorder.flush()
    w.faulty.calls.clear()
    manager.reconcile(request)
    pass_calls = [(c.verb, c.kind) for c in w.faulty.calls]
    assert ("create", "Event") not in pass_calls
    w.recorder.flush()
    assert [(c.verb, c.kind) for c in w.faulty.calls][len(pass_calls):] == [("create", "Event")]
    assert w.events()[0]["reason"] == "Broken"

    w.faulty.inject(verb="patch", kind="Event", error="ServerError")
    result = manager.reconcile(request)
    w.recorder.flush()
    assert result.error is None and result.requeue_after == dt.timedelta(minutes=1)
    assert w.counted("failed") == 1
    conditions = w.cluster.get("example.io/v1", "Widget", "ns", "w")["status"]["conditions"]
    assert {c["type"]: c["reason"] for c in conditions}["BuiltReady"] == "Broken"
