"""Which watches are failing now: the runtime's informers, the registration watch and each cluster client's own.

A watch is failing once its backoff counts ``engine.cluster.retry.FAILING_AFTER`` failures in a row (a Gone, a
stream that ended before its first event, any other error) and until it delivers an event again. The operator
exports the count per cluster (``<p>_watches_failing{cluster}``) and fails /readyz while a watch of the management
cluster fails: a replica whose watches cannot follow the cluster sees no change there, and should say so.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.cluster.api import MANAGEMENT_CLUSTER, Cluster
from engine.runtime.watches import Sources


def failing_watches(sources: Sources, clusters: Iterable[tuple[str, Cluster]],
                    registrations: Any | None = None) -> dict[str, int]:
    """Cluster name -> how many of its watches fail now; every engaged cluster (and the management one) is named.

    registrations: the registration watch (its ``backoff``), counted on the management cluster."""
    counts: dict[str, int] = {MANAGEMENT_CLUSTER: 0}
    for name, cluster in clusters:
        counts.setdefault(name, 0)
        informers = getattr(_client(cluster), "informers", None)
        for informer in informers() if callable(informers) else ():
            if _failing(informer):
                counts[name] += 1
    for informer in sources.informers():
        if informer.backoff.failing:
            counts[informer.cluster_name] = counts.get(informer.cluster_name, 0) + 1
    if registrations is not None and _failing(registrations):
        counts[MANAGEMENT_CLUSTER] += 1
    return counts


def _failing(watcher: object) -> bool:
    backoff = getattr(watcher, "backoff", None)
    return bool(getattr(backoff, "failing", False))


def _client(cluster: object) -> object:
    """The client under any wrappers (a shard member's fence, a fault recorder): what holds the informers."""
    for _ in range(8):
        if callable(getattr(cluster, "informers", None)) or not hasattr(cluster, "inner"):
            return cluster
        cluster = cluster.inner
    return cluster
