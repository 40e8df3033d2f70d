"""Which watches fail now, per cluster: the runtime's informers, the registration watch and a cluster client's own
informers (found under its wrappers), and the gauge that exports them."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from prometheus_client import CollectorRegistry, generate_latest
from runtime_kit import START, memory, widget_kind

from engine.cluster.faults import FaultyCluster
from engine.cluster.retry import FAILING_AFTER, Backoff
from engine.metrics import FailingWatchesCollector
from engine.runtime.queue import WorkQueue
from engine.runtime.watch_health import failing_watches
from engine.runtime.watches import Sources
from engine.testing.clock import SimulatedClock

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
