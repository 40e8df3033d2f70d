"""Bounded retries: a watch that always answers Gone, or always ends before its first event, costs about one
request a second, and warnings about one cluster are written at most once a minute. Waits are simulated (a stop
event whose wait takes no time and adds to a simulated clock), so nothing here is timed."""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from runtime_kit import START, memory, widget_kind

from engine.cluster.retry import FAILING_AFTER, Backoff, WarningLimiter
from engine.metrics import Metrics
from engine.runtime.clusters import REGISTRATION_LABEL, Registrations
from engine.runtime.queue import WorkQueue
from engine.runtime.watches import Sources
from offline.clock import SimulatedClock
from offline.cluster.faults import FaultyCluster

LOG = logging.getLogger("tests.runtime.retries")
GUARD = 2000
"""Requests after which a loop that never waits is stopped (what the code did before the bound)."""


class SimulatedStop(threading.Event):
    """A stop event whose waits take no time: each adds to ``now``; it sets itself after ``budget`` seconds.
    ``samples`` keeps (requests made so far, seconds waited so far) at every wait."""

    def __init__(self, budget: float, requests: Any) -> None:
        super().__init__()
        self.budget = budget
        self.now = 0.0
        self.samples: list[tuple[int, float]] = []
        self._requests = requests

    def wait(self, timeout: float | None = None) -> bool:
        self.now += timeout or 0.0
        self.samples.append((self._requests(), self.now))
        if self.now >= self.budget:
            self.set()
        return self.is_set()


class AlwaysGone(FaultyCluster):
    """Every watch answers Gone (410); after GUARD requests it stops the loop (``stop``)."""

    stop: threading.Event | None = None

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        if len(self.calls) >= GUARD and self.stop is not None:
            self.stop.set()
        return super().watch(*args, **kwargs)


class CutWatches(FaultyCluster):
    """Every watch ends before its first event (answered, then closed at once); after GUARD requests it stops the
    loop (``stop``)."""

    stop: threading.Event | None = None

    def watch(self, api_version: str, kind: str, namespace: str | None = None, **kwargs: Any) -> Any:
        if len(self.calls) >= GUARD and self.stop is not None:
            self.stop.set()
        return self._call("watch", api_version, kind, namespace, None, lambda: iter(()))


def always_gone(name: str = "") -> AlwaysGone:
    cluster = AlwaysGone(memory(), cluster_name=name)
    cluster.inject(verb="watch", error="Gone", times=10**9)
    return cluster


def assert_about_one_request_a_second(stop: SimulatedStop, requests: int) -> None:
    assert stop.now >= stop.budget, f"{requests} requests and only {stop.now:.0f}s waited: it re-lists in a loop"
    for made, waited in stop.samples:
        assert made <= waited + 6, f"{made} requests in {waited:.0f} simulated seconds"
    assert requests >= 10  # it kept trying


def test_an_informer_under_a_permanent_gone_backs_off() -> None:
    """Re-list after Gone once at once, then wait, doubling with jitter: about a request a second at most."""
    cluster = always_gone()
    sources = Sources({widget_kind().key: widget_kind()}, WorkQueue(SimulatedClock(START)), log=LOG)
    sources.add_cluster("", cluster)
    [informer] = sources.informers()
    stop = informer.stop = cluster.stop = SimulatedStop(300.0, lambda: len(cluster.calls))
    informer.run(watch_timeout=1.0, recheck=1.0)
    assert_about_one_request_a_second(stop, len(cluster.calls))
    assert {call.verb for call in cluster.calls} == {"list", "watch"}


def test_the_registration_watch_under_a_permanent_gone_backs_off() -> None:
    """The registration watcher follows the same bound."""
    management = always_gone()
    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": "edge-1", "namespace": "c5c3-clusters", "labels": {REGISTRATION_LABEL: "x"}},
              "data": {"kubeconfig": base64.b64encode(b"x").decode()}}
    management.inner.create(secret)

    class Nobody:
        def engage(self, *args: Any, **kwargs: Any) -> None: ...

        def disengage(self, name: str) -> None: ...

    registrations = Registrations(management, "c5c3-clusters", Nobody(), lambda r: memory(), log=LOG)
    stop = management.stop = SimulatedStop(300.0, lambda: len(management.calls))
    registrations.run(stop, watch_timeout=1.0)
    assert_about_one_request_a_second(stop, len(management.calls))


def test_an_informer_whose_watches_end_before_their_first_event_backs_off() -> None:
    """A watch cut right after its headers (200, then closed with no event) is a failure: about a request a second,
    not a re-open at once; the informer counts as failing from FAILING_AFTER failures in a row, and each failure is
    counted by reason."""
    cluster = CutWatches(memory(), cluster_name="")
    metrics = Metrics(CollectorRegistry())
    sources = Sources({widget_kind().key: widget_kind()}, WorkQueue(SimulatedClock(START)), log=LOG, metrics=metrics)
    sources.add_cluster("", cluster)
    [informer] = sources.informers()
    stop = informer.stop = cluster.stop = SimulatedStop(300.0, lambda: len(cluster.calls))
    informer.run(watch_timeout=1.0, recheck=1.0)
    assert_about_one_request_a_second(stop, len(cluster.calls))
    assert [call.verb for call in cluster.calls].count("list") == 1, "a watch that ended is resumed, not re-listed"
    assert informer.backoff.failing and informer.backoff.streak >= FAILING_AFTER
    watches = [call for call in cluster.calls if call.verb == "watch"]
    failures = metrics.watch_failures.labels(cluster="", kind="Widget", reason="ended")._value.get()
    assert failures == len(watches)


def test_the_first_event_ends_a_streak_of_failures() -> None:
    """A watch that delivers an event (a bookmark too) is working again: the streak ends, it is no longer failing,
    and a stream that then ends is re-opened at once."""
    backoff = Backoff(rand=lambda: 0.0)
    waits = [backoff.ended(0, lasted=0.01, timeout=300.0) for _ in range(FAILING_AFTER)]
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert backoff.failing
    cluster = memory()
    sources = Sources({widget_kind().key: widget_kind()}, WorkQueue(SimulatedClock(START)), log=LOG)
    sources.add_cluster("", cluster)
    [informer] = sources.informers()
    informer._list()
    informer.backoff = backoff
    informer._drain(iter([{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}}]), backoff=backoff)
    assert backoff.streak == 0 and not backoff.failing
    assert backoff.ended(1, lasted=0.01, timeout=300.0) == 0.0


@pytest.mark.parametrize(("lasted", "timeout"), [(300.0, 300.0), (5.0, 5.0), (30.0, 300.0), (31.0, None)])
def test_a_quiet_watch_that_lasted_is_no_failure(lasted: float, timeout: float | None) -> None:
    """A stream without an event that lasted its whole timeout, or QUIET seconds, watched a quiet kind (a real API
    server sends no bookmark for a kind that has not changed): no wait, and the streak of failures ends."""
    backoff = Backoff()
    backoff.after_failure()
    assert backoff.ended(0, lasted=lasted, timeout=timeout) == 0.0
    assert backoff.streak == 0


@pytest.mark.parametrize(("lasted", "timeout"), [(0.0, 300.0), (4.9, 5.0), (29.0, 300.0), (0.5, None)])
def test_a_stream_cut_before_its_first_event_is_a_failure(lasted: float, timeout: float | None) -> None:
    backoff = Backoff()
    assert backoff.ended(0, lasted=lasted, timeout=timeout) >= 1.0
    assert backoff.streak == 1


def test_the_registration_watch_whose_watches_end_before_their_first_event_backs_off() -> None:
    """The registration watch follows the same bound, and counts as failing."""
    management = CutWatches(memory(), cluster_name="")

    class Nobody:
        def engage(self, *args: Any, **kwargs: Any) -> None: ...

        def disengage(self, name: str) -> None: ...

    registrations = Registrations(management, "c5c3-clusters", Nobody(), lambda r: memory(), log=LOG)
    stop = management.stop = SimulatedStop(300.0, lambda: len(management.calls))
    registrations.run(stop, watch_timeout=1.0)
    assert_about_one_request_a_second(stop, len(management.calls))
    assert registrations.backoff.failing


def test_warnings_about_one_cluster_at_most_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    """A cluster that cannot be reached: one warning a minute, naming it, saying how many were held back."""
    broken = FaultyCluster(memory("edge-1"), cluster_name="edge-1")
    broken.inject(verb="list", error="ServerError", times=10**9)
    stop = SimulatedStop(300.0, lambda: len(broken.calls))
    limiter = WarningLimiter(clock=lambda: stop.now)
    sources = Sources({widget_kind().key: widget_kind()}, WorkQueue(SimulatedClock(START)), log=LOG,
                      warnings=limiter)
    sources.add_cluster("edge-1", broken)
    [informer] = sources.informers()
    informer.stop = stop
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        informer.run(watch_timeout=1.0, recheck=1.0)
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(broken.calls) >= 10
    assert 1 <= len(lines) <= 300 / 60 + 1, lines
    assert all("cluster 'edge-1'" in line for line in lines)
    assert "more like it in the last minute not shown" in lines[-1]


def test_the_limiter_counts_per_cluster_with_an_injected_clock() -> None:
    now = [0.0]
    limiter = WarningLimiter(clock=lambda: now[0])
    assert limiter.allow("edge-1") == 0
    assert limiter.allow("edge-2") == 0
    now[0] = 59.0
    assert limiter.allow("edge-1") is None
    assert limiter.allow("edge-1") is None
    now[0] = 60.0
    assert limiter.allow("edge-1") == 2
    assert limiter.allow("edge-2") == 0


def test_urllib3_retry_warnings_are_not_written() -> None:
    """The HTTP library's per-retry warnings (no cluster named) never reach the operator's log."""
    import io
    import socket

    import urllib3

    from engine import logs
    from engine.expr.functions import SecretSink

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: connections are refused
    out = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        logs.configure("info", sink=SecretSink(), stream=out)
        with pytest.raises(urllib3.exceptions.MaxRetryError):
            urllib3.PoolManager().request("GET", f"http://127.0.0.1:{port}/", retries=urllib3.Retry(3))
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
    assert "Retrying" not in out.getvalue()
