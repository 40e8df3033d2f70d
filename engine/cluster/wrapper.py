"""A Cluster that hands every call to the cluster it wraps, through one hook.

Wrappers that watch or guard calls differ only in what they do around a call: ``FaultyCluster``
records each call and fails chosen ones (scenarios), a shard member's fence refuses writes once its
tenure lapsed. This base forwards the Cluster protocol once; a wrapper overrides ``_call`` alone.
Discovery (``resource_info``, ``serves``) is not a call either wrapper sees: it goes straight through.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import Any, TypeVar

from engine.cluster.api import Cluster, LabelSelector, Obj, ObjectList, PatchType, ResourceInfo, Verb, WatchEvent

T = TypeVar("T")

WRITES: frozenset[Verb] = frozenset({"create", "update", "patch", "apply", "delete"})


class ClusterWrapper:
    """Forwards every call to ``inner`` through ``_call``; as it stands, a wrapper that changes nothing."""

    def __init__(self, inner: Cluster, *, cluster_name: str) -> None:
        self.inner = inner
        self.name = cluster_name

    def _call(self, verb: Verb, api_version: str, kind: str, namespace: str | None, name: str | None,
              send: Callable[[], T], **extra: Any) -> T:
        """Around one call: ``send`` makes it; ``extra`` describes it (subresource, field manager, ...)."""
        return send()

    def _call_obj(self, verb: Verb, obj: Obj, send: Callable[[], T], **extra: Any) -> T:
        meta = obj.get("metadata") or {}
        return self._call(verb, str(obj.get("apiVersion", "")), str(obj.get("kind", "")), meta.get("namespace"),
                          meta.get("name"), send, **extra)

    # Reader

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, *, live: bool = False,
            carries: Collection[str] = ()) -> Obj:
        return self._call("get", api_version, kind, namespace, name,
                          lambda: self.inner.get(api_version, kind, namespace, name, live=live, carries=carries),
                          live=live or None)

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, labels: LabelSelector = None,
             fields: str | None = None, live: bool = False,
             reads: Collection[tuple[str, ...]] | None = None) -> ObjectList:
        return self._call("list", api_version, kind, namespace, None,
                          lambda: self.inner.list(api_version, kind, namespace, labels=labels, fields=fields,
                                                  live=live, reads=reads),
                          live=live or None)

    # Writer

    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        return self._call_obj("create", obj, lambda: self.inner.create(obj, field_manager=field_manager))

    def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        return self._call_obj("update", obj, lambda: self.inner.update(obj, field_manager=field_manager))

    def update_status(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        return self._call_obj("update", obj, lambda: self.inner.update_status(obj, field_manager=field_manager),
                              subresource="status")

    def patch(self, api_version: str, kind: str, namespace: str | None, name: str, patch: Any, *,
              patch_type: PatchType = "merge", status: bool = False, field_manager: str | None = None) -> Obj:
        return self._call("patch", api_version, kind, namespace, name,
                          lambda: self.inner.patch(api_version, kind, namespace, name, patch, patch_type=patch_type,
                                                   status=status, field_manager=field_manager),
                          subresource="status" if status else None, patch_type=patch_type)

    def apply(self, obj: Obj, *, field_manager: str, force: bool = False, status: bool = False) -> Obj:
        return self._call_obj("apply", obj,
                              lambda: self.inner.apply(obj, field_manager=field_manager, force=force, status=status),
                              subresource="status" if status else None, field_manager=field_manager, force=force)

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj | None:
        return self._call("delete", api_version, kind, namespace, name,
                          lambda: self.inner.delete(api_version, kind, namespace, name))

    # Watcher

    def watch(self, api_version: str, kind: str, namespace: str | None = None, *,
              resource_version: str | None = None, labels: LabelSelector = None, timeout: float | None = None,
              bookmarks: bool = False) -> Iterator[WatchEvent]:
        return self._call("watch", api_version, kind, namespace, None,
                          lambda: self.inner.watch(api_version, kind, namespace, resource_version=resource_version,
                                                   labels=labels, timeout=timeout, bookmarks=bookmarks),
                          resource_version=resource_version)

    # Discovery: straight through

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        return self.inner.resource_info(api_version, kind)

    def serves(self, api_version: str, kind: str) -> bool:
        return self.inner.serves(api_version, kind)


def _conforms(cluster: ClusterWrapper) -> Cluster:
    """Never called: mypy proves here that ClusterWrapper satisfies the Cluster protocol."""
    return cluster
