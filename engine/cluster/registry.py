"""The set of clusters the operator can reach: the management cluster "" and engaged target clusters.

It also knows which target clusters are *registered* (a registration names them) and which of
those are *reachable* now: an engaged cluster is wrapped so every call reports whether its API
server answered (``engine.cluster.reachability``); a registration whose kubeconfig cannot be used
is registered and never reachable. The management cluster is always both.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from engine.cluster.api import MANAGEMENT_CLUSTER, Cluster
from engine.cluster.reachability import Tracked


class ClusterNotFound(LookupError):
    """The request names a cluster that is not engaged (deregistered between event and pass)."""


class ClusterSet:
    """Name to Cluster, safe to read while clusters engage and disengage."""

    def __init__(self, management: Cluster) -> None:
        self._lock = threading.Lock()
        self._clusters: dict[str, Cluster] = {MANAGEMENT_CLUSTER: management}
        self._down: dict[str, str] = {}
        """Registered target clusters that do not answer now (or cannot be engaged): name -> why."""

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
        """Add (or replace) a cluster; a target cluster is tracked for reachability from now on."""
        tracked = cluster if name == MANAGEMENT_CLUSTER else Tracked(cluster, self._answered(name))
        with self._lock:
            self._clusters[name] = tracked
            self._down.pop(name, None)

    def disengage(self, name: str) -> None:
        """Forget a target cluster: it is no longer registered."""
        if name == MANAGEMENT_CLUSTER:
            raise ValueError("the management cluster cannot be disengaged")
        with self._lock:
            self._clusters.pop(name, None)
            self._down.pop(name, None)

    def unusable(self, name: str, why: str) -> None:
        """A registration names the cluster but it cannot be engaged (its kubeconfig is refused)."""
        if name == MANAGEMENT_CLUSTER:
            return
        with self._lock:
            self._clusters.pop(name, None)
            self._down[name] = why

    def registered(self, name: str) -> bool:
        """A registration names it (reachable or not); the management cluster always is."""
        with self._lock:
            return name in self._clusters or name in self._down

    def reachable(self, name: str) -> bool:
        """Registered, engaged, and its API server answered the last call made to it."""
        with self._lock:
            return name in self._clusters and name not in self._down

    def names(self) -> list[str]:
        """Every engaged cluster, reachable or not, sorted (the management cluster "" first)."""
        with self._lock:
            return sorted(self._clusters)

    def reachable_names(self) -> list[str]:
        """The registered clusters that are reachable now, sorted (the management cluster "" first)."""
        with self._lock:
            return sorted(name for name in self._clusters if name not in self._down)

    def __iter__(self) -> Iterator[tuple[str, Cluster]]:
        with self._lock:
            return iter(sorted(self._clusters.items()))

    def _answered(self, name: str) -> Callable[[Tracked, bool, str], None]:
        def report(tracked: Tracked, answered: bool, why: str) -> None:
            if answered == (name not in self._down):  # unchanged: the common case takes no lock
                return
            with self._lock:
                if self._clusters.get(name) is not tracked:  # a replaced or forgotten client's late call
                    return
                if answered:
                    self._down.pop(name, None)
                else:
                    self._down[name] = why or "the API server did not answer"

        return report
