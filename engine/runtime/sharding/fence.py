"""The fence: a shard member's pass sends nothing once the tenure that admitted it has lapsed.

A member stops *starting* passes at its renew deadline R (counted from the start of its last successful Lease
renewal), and the leader hands its orders to another member no earlier than the lease duration D after that
start. A pass already running at R (blocked on a slow call, or the whole process paused) would otherwise go on
writing into the new owner's pass. So every request a pass sends goes through this fence: it asks the member, on
the member's own clock and with no request, whether the tenure still holds, and refuses the request when it does
not. The pass then ends in an error (no status is written either: that is a write too) and is not run under that
tenure again. A write that passed the fence was sent before R, so it has D - R to reach the API server before
another member may start (decision 0033). Reads are refused too: a lapsed member's pass stops at its next request
instead of going on reading under the new name the member rejoins with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from engine.cluster.api import ApiError, Cluster, Verb
from engine.cluster.registry import ClusterSet
from engine.cluster.wrapper import WRITES, ClusterWrapper

T = TypeVar("T")

Check = Callable[[bool], None]
"""Raises ``Fenced`` when the member may no longer send a request (the argument: whether it is a write)."""


class Fenced(ApiError):
    """A request refused before it was sent: this member's shard tenure has lapsed."""

    code, reason = 503, "ShardTenureLapsed"


class FencedCluster(ClusterWrapper):
    """A Cluster whose requests (reads, writes, watches) first pass the member's fence; discovery goes straight
    through."""

    def __init__(self, inner: Cluster, check: Check) -> None:
        super().__init__(inner, cluster_name=inner.name)
        self._check = check

    def _call(self, verb: Verb, api_version: str, kind: str, namespace: str | None, name: str | None,
              send: Callable[[], T], **extra: Any) -> T:
        self._check(verb in WRITES)
        return send()

    def __getattr__(self, name: str) -> Any:
        """Anything else the client offers (cache hooks, ``stop``) is the inner cluster's."""
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)


class FencedClusters(ClusterSet):
    """A pass's view of the ClusterSet: every cluster it resolves is fenced; everything else is the set's."""

    def __init__(self, inner: ClusterSet, check: Check) -> None:  # no super().__init__: the set is ``inner``
        self._inner = inner
        self._check = check

    def resolve(self, name: str) -> Cluster:
        return FencedCluster(self._inner.resolve(name), self._check)

    def engage(self, name: str, cluster: Cluster) -> None:
        self._inner.engage(name, cluster)

    def disengage(self, name: str) -> None:
        self._inner.disengage(name)

    def unusable(self, name: str, why: str) -> None:
        self._inner.unusable(name, why)

    def registered(self, name: str) -> bool:
        return self._inner.registered(name)

    def reachable(self, name: str) -> bool:
        return self._inner.reachable(name)

    def names(self) -> list[str]:
        return self._inner.names()

    def reachable_names(self) -> list[str]:
        return self._inner.reachable_names()

    def __iter__(self) -> Iterator[tuple[str, Cluster]]:
        return iter([(name, FencedCluster(cluster, self._check)) for name, cluster in self._inner])
