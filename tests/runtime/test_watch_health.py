"""Which watches fail now, per cluster: the runtime's informers, the registration watch and a cluster client's own
informers (found under its wrappers), and the gauge that exports them."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from runtime_kit import START, memory, widget_kind

from engine.cluster.kube import KubeCluster, api_client_from_kubeconfig
from engine.cluster.retry import FAILING_AFTER, Backoff
from engine.metrics import FailingWatchesCollector
from engine.runtime.clusters import Registrations
from engine.runtime.queue import WorkQueue
from engine.runtime.watch_health import failing_watches
from engine.runtime.watches import Sources
from offline.clock import SimulatedClock
from offline.cluster.faults import FaultyCluster
from offline.realkube import KubeServer

LOG = logging.getLogger("tests.runtime.watch_health")


def failing_backoff() -> Backoff:
    backoff = Backoff()
    for _ in range(FAILING_AFTER):
        backoff.after_failure()
    return backoff


def test_failing_watches_by_cluster() -> None:
    sources = Sources({widget_kind().key: widget_kind()}, WorkQueue(SimulatedClock(START)), log=LOG)
    sources.add_cluster("", memory())
    sources.add_cluster("edge-1", memory("edge-1"))
    client = SimpleNamespace(informers=lambda: [SimpleNamespace(backoff=failing_backoff()),
                                                SimpleNamespace(backoff=Backoff())])
    clusters = [("", memory()), ("edge-1", FaultyCluster(client, cluster_name="edge-1")),  # type: ignore[arg-type]
                ("edge-2", memory("edge-2"))]
    assert failing_watches(sources, clusters) == {"": 0, "edge-1": 1, "edge-2": 0}
    [management] = sources.informers("")
    for _ in range(FAILING_AFTER - 1):
        management.backoff.after_failure()
    registrations = SimpleNamespace(backoff=failing_backoff())
    assert failing_watches(sources, clusters, registrations) == {"": 1, "edge-1": 1, "edge-2": 0}
    management.backoff.after_failure()
    assert failing_watches(sources, clusters, registrations) == {"": 2, "edge-1": 1, "edge-2": 0}
    management.backoff.reset()
    assert failing_watches(sources, clusters) == {"": 0, "edge-1": 1, "edge-2": 0}


def test_the_gauge_names_every_cluster() -> None:
    registry = CollectorRegistry()
    registry.register(FailingWatchesCollector("c5c3_operator", lambda: {"": 0, "edge-1": 2}))
    text = generate_latest(registry).decode()
    assert 'c5c3_operator_watches_failing{cluster=""} 0.0' in text
    assert 'c5c3_operator_watches_failing{cluster="edge-1"} 2.0' in text


def test_a_quiet_watch_on_a_real_server_is_no_failure(real_cluster: Callable[[str], KubeServer],
                                                      tmp_path: Path) -> None:
    """A real API server ends a watch of a kind that has not changed at its timeout without a single event (no
    bookmark): the registration watch takes that for a quiet watch (re-opened at once), not for a failure."""
    server = real_cluster("management")
    client = KubeCluster("", api_client_from_kubeconfig(server.kubeconfig()), cache=False,
                         discovery_cache_dir=tmp_path / "discovery")

    class Nobody:
        def engage(self, *args: Any, **kwargs: Any) -> None: ...

        def disengage(self, name: str) -> None: ...

    registrations = Registrations(client, f"quiet-{uuid.uuid4().hex[:8]}", Nobody(), lambda r: memory(), log=LOG)
    opened: list[float] = []
    watch = client.watch

    def counted(*args: Any, **kwargs: Any) -> Any:
        opened.append(time.monotonic())
        return watch(*args, **kwargs)

    client.watch = counted  # type: ignore[method-assign]
    stop = threading.Event()
    thread = threading.Thread(target=registrations.run, args=(stop,), kwargs={"watch_timeout": 1.0}, daemon=True)
    thread.start()
    try:
        wait_for_count(opened, 4)
    finally:
        stop.set()
        registrations.stop()
        thread.join(10)
        client.stop()
    assert registrations.backoff.streak == 0, "a quiet watch that lasted its timeout was taken for a failure"


def wait_for_count(items: list[float], count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while len(items) < count:
        assert time.monotonic() < deadline, f"{len(items)} of {count} watches opened in {timeout}s"
        time.sleep(0.05)
