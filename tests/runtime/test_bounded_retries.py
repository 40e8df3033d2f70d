"""Bounded retries: a watch that always answers Gone costs about one request a second, and warnings
about one cluster are written at most once a minute. Waits are simulated (a stop event whose wait
takes no time and adds to a simulated clock), so nothing here is timed."""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any

import pytest
from runtime_kit import START, memory, widget_kind

from engine.cluster.faults import FaultyCluster
from engine.cluster.retry import WarningLimiter
from engine.runtime.clusters import REGISTRATION_LABEL, Registrations
from engine.runtime.queue import WorkQueue
from engine.runtime.watches import Sources
from engine.testing.clock import SimulatedClock

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
