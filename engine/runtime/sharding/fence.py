"""The write fence: a shard member's pass writes nothing once the member's tenure has lapsed.

A member stops *starting* passes at its renew deadline R (counted from the start of its last successful
Lease renewal), and the leader hands its orders to another member no earlier than the lease duration D
after that start. A pass already running at R (blocked on a slow call, or the whole process paused)
would otherwise go on writing into the new owner's pass. So every write a pass sends goes through this
fence: it asks the member, on the member's own clock and with no request, whether the tenure still
holds, and refuses the write when it does not. The pass then ends in an error (no status is written
either: that is a write too) and is not run here again. A write that passed the fence was sent before
R, so it has D - R to reach the API server before another member may start (decision 0033).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import Any

from engine.cluster.api import (
    ApiError,
    Cluster,
    LabelSelector,
    Obj,
    ObjectList,
    PatchType,
    ResourceInfo,
    WatchEvent,
)
from engine.cluster.registry import ClusterSet

Check = Callable[[], None]
"""Raises ``Fenced`` when the member may no longer write."""


class Fenced(ApiError):
    """A write refused before it was sent: this member's shard tenure has lapsed."""

    code, reason = 503, "ShardTenureLapsed"


class FencedCluster:
    """A Cluster whose writes first pass the member's fence; reads, watches and discovery go straight through."""

    def __init__(self, inner: Cluster, check: Check) -> None:
        self.inner = inner
        self.name = inner.name
        self._check = check

    # Reader, Watcher, Discovery: straight through

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, *, live: bool = False,
            carries: Collection[str] = ()) -> Obj:
        return self.inner.get(api_version, kind, namespace, name, live=live, carries=carries)

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, labels: LabelSelector = None,
             fields: str | None = None, live: bool = False) -> ObjectList:
        return self.inner.list(api_version, kind, namespace, labels=labels, fields=fields, live=live)

    def watch(self, api_version: str, kind: str, namespace: str | None = None, *,
              resource_version: str | None = None, labels: LabelSelector = None, timeout: float | None = None,
              bookmarks: bool = False) -> Iterator[WatchEvent]:
        return self.inner.watch(api_version, kind, namespace, resource_version=resource_version, labels=labels,
                                timeout=timeout, bookmarks=bookmarks)

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        return self.inner.resource_info(api_version, kind)

    def serves(self, api_version: str, kind: str) -> bool:
        return self.inner.serves(api_version, kind)

    # Writer: each through the fence

    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        self._check()
        return self.inner.create(obj, field_manager=field_manager)

    def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        self._check()
        return self.inner.update(obj, field_manager=field_manager)

    def update_status(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        self._check()
        return self.inner.update_status(obj, field_manager=field_manager)

    def patch(self, api_version: str, kind: str, namespace: str | None, name: str, patch: Any, *,
              patch_type: PatchType = "merge", status: bool = False, field_manager: str | None = None) -> Obj:
        self._check()
        return self.inner.patch(api_version, kind, namespace, name, patch, patch_type=patch_type, status=status,
                                field_manager=field_manager)

    def apply(self, obj: Obj, *, field_manager: str, force: bool = False, status: bool = False) -> Obj:
        self._check()
        return self.inner.apply(obj, field_manager=field_manager, force=force, status=status)

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj | None:
        self._check()
        return self.inner.delete(api_version, kind, namespace, name)

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
