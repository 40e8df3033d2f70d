"""What the operator adds to the manager: leader gating of workers, readiness, context and log fields."""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from runtime_kit import FakePass, FakeWatch, memory, obj, widget_kind

from engine.cluster.registry import ClusterSet
from engine.metrics import Metrics
from engine.outcome import Request, Result
from engine.runtime.manager import Manager
from offline.cluster.memory import MemoryCluster


class WallClock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)


def build(fake: FakePass, *watches: FakeWatch, log: logging.Logger | None = None) -> tuple[Manager[Any], MemoryCluster]:
    cluster = memory(clock=WallClock())
    kind = widget_kind(*watches)
    built: Manager[Any] = Manager(
        {kind.key: kind}, ClusterSet(cluster), clock=WallClock(), metrics=Metrics(CollectorRegistry()),
        run_pass=fake, watch_timeout=0.2, recheck_interval=0.2, log=log,
    )
    return built, cluster


@contextlib.contextmanager
def running(m: Manager[Any], leading: threading.Event | None = None) -> Iterator[None]:
    stop = threading.Event()
    # run() is called on the operator's main thread: give this one the caller's context, as that would have.
    context = contextvars.copy_context()
    runner = threading.Thread(target=context.run, args=(m.run, stop), kwargs={"leading": leading})
    runner.start()
    try:
        yield
    finally:
        stop.set()
        runner.join(10)
    assert not runner.is_alive()


def wait_for(what: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_no_pass_runs_until_leading_then_every_queued_order_runs() -> None:
    """A follower queues orders but runs no pass; once it leads, what it queued runs."""
    fake = FakePass()
    m, cluster = build(fake)
    cluster.create(obj("Widget", "a"))
    leading = threading.Event()
    with running(m, leading):
        assert wait_for(lambda: m.queue.depth == 1)
        time.sleep(0.2)
        assert fake.runs == []
        leading.set()
        assert wait_for(lambda: fake.names() == ["a"])


def test_losing_leadership_stops_new_passes_at_once() -> None:
    """After the gate closes no further pass starts, though events keep queuing orders."""
    fake = FakePass()
    m, cluster = build(fake)
    leading = threading.Event()
    leading.set()
    cluster.create(obj("Widget", "a"))
    with running(m, leading):
        assert wait_for(lambda: fake.names() == ["a"])
        leading.clear()
        time.sleep(0.6)  # a worker blocked in get() when the gate closed returns within its poll
        cluster.create(obj("Widget", "b"))
        assert wait_for(lambda: m.queue.depth == 1)
        time.sleep(0.2)
        assert fake.names() == ["a"]
        leading.set()
        assert wait_for(lambda: fake.names() == ["a", "b"])


def test_workers_see_the_context_the_caller_set() -> None:
    """A context variable set around run() (the secret sink) is visible inside every pass."""
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")
    seen: list[str] = []

    def script(req: Request, n: int) -> Result:
        seen.append(marker.get())
        return Result()

    m, cluster = build(FakePass(script))
    cluster.create(obj("Widget", "a"))
    marker.set("set by the operator")
    try:
        with running(m):
            assert wait_for(lambda: bool(seen))
    finally:
        marker.set("unset")
    assert seen == ["set by the operator"]


def test_ready_once_the_management_informers_have_listed() -> None:
    """Not ready before start; ready once listed; a kind the cluster does not serve does not hold it back."""
    m, cluster = build(FakePass(), FakeWatch("Gizmo", api_version="unserved.example.io/v1"))
    cluster.unserve("unserved.example.io/v1", "Gizmo")
    assert m.ready() is False
    with running(m):
        assert wait_for(m.ready)


def test_ready_stays_once_reached() -> None:
    """Readiness is about the first sync: an informer re-listing after a Gone does not flap it."""
    m, _ = build(FakePass())
    m.start()
    assert m.ready() is True
    for informer in m.sources.informers():
        informer.listed = False
    assert m.ready() is True


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_pass_log_keeps_its_own_fields_and_gains_the_request() -> None:
    """The logger a pass gets adds ``request`` and keeps the ``extra`` fields the pass passes."""
    log = logging.getLogger("test.manager_ops")
    log.setLevel(logging.INFO)
    capture = Capture()
    log.addHandler(capture)

    def fake(kind: Any, req: Request, *, log: Any, **_: Any) -> Result:
        log.info("hello", extra={"order": "ns/a", "step": "build"})
        return Result()

    try:
        m, cluster = build(FakePass(), log=log)
        m._run_pass = fake
        cluster.create(obj("Widget", "a"))
        m.start()
        m.settle()
    finally:
        log.removeHandler(capture)
    record = next(r for r in capture.records if r.getMessage() == "hello")
    assert record.order == "ns/a"  # type: ignore[attr-defined]
    assert record.step == "build"  # type: ignore[attr-defined]
    assert "Widget" in record.request  # type: ignore[attr-defined]
