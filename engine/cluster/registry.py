"""The set of clusters the operator can reach: the management cluster "" and engaged target clusters."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from engine.cluster.api import MANAGEMENT_CLUSTER, Cluster


class ClusterNotFound(LookupError):
    """The request names a cluster that is not engaged (deregistered between event and pass)."""


class ClusterSet:
    """Name to Cluster, safe to read while clusters engage and disengage."""

    def __init__(self, management: Cluster) -> None:
        self._lock = threading.Lock()
        self._clusters: dict[str, Cluster] = {MANAGEMENT_CLUSTER: management}

    @property
    def management(self) -> Cluster:
        return self.resolve(MANAGEMENT_CLUSTER)

    def resolve(self, name: str) -> Cluster:
        with self._lock:
            try:
                return self._clusters[name]
            except KeyError:
                raise ClusterNotFound(f"cluster {name!r} is not engaged") from None

    def engage(self, name: str, cluster: Cluster) -> None:
        with self._lock:
            self._clusters[name] = cluster

    def disengage(self, name: str) -> None:
        if name == MANAGEMENT_CLUSTER:
            raise ValueError("the management cluster cannot be disengaged")
        with self._lock:
            self._clusters.pop(name, None)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._clusters)

    def __iter__(self) -> Iterator[tuple[str, Cluster]]:
        with self._lock:
            return iter(sorted(self._clusters.items()))
