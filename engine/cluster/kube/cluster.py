"""KubeCluster: the Cluster interface on a real API server, through the official client.

Writes and watches go to the API server; reads are answered from informer caches kept current by watches, so a
converged pass reads from memory, and a read right after a write waits until the watch has delivered that write
(read-your-writes). The class is built in layers, one module each: ``cluster_base`` (state, wire, live reads),
``cluster_cache`` (watches and informer caches), ``cluster_reads``, ``cluster_writes``; this module adds the
lifecycle and discovery.
"""

from __future__ import annotations

import builtins
import dataclasses
import shutil
from collections.abc import Mapping, Sequence

from engine.cluster.api import (
    ApiError,
    Cluster,
    Obj,
    PrinterColumn,
    ResourceInfo,
    WatchFeed,
    WriteObserver,
)
from engine.cluster.kube.cluster_base import CRD, DISCOVERY_PREFIX, POOL_SIZE, SETTLE_TIMEOUT, WATCH_TIMEOUT
from engine.cluster.kube.cluster_writes import KubeWrites
from engine.cluster.kube.errors import no_resource
from engine.cluster.kube.informer import FedInformer, Informer
from engine.cluster.kube.store import version_number
from engine.cluster.projection import Path as ReadPath
from engine.cluster.projection import tree

__all__ = ["DISCOVERY_PREFIX", "POOL_SIZE", "SETTLE_TIMEOUT", "WATCH_TIMEOUT", "KubeCluster"]


class KubeCluster(KubeWrites):
    """One cluster reached through one ApiClient (never the library's global default).

    Writes and watches go to the API server. Reads are answered by an informer cache per
    (kind, namespace scope), started on the first read of the kind and kept current by a watch,
    so a converged pass reads from memory; a kind the runtime watches anyway is kept by the
    runtime's watch instead (``share_watch``: one watch per kind); ``live=True`` reads, and reads outside the namespaces
    the cache covers, go to the server. A kind can be cached by label (``scope_by_labels``): one
    label-selected informer per scope (a label key, or a selector such as a shard member's ``key=value``),
    so objects in none of the scopes are never held in memory; a get they do not answer goes to the
    server (the object may exist outside them) unless the caller says the object carries the keys a
    scope requires (``carries``), and a list answers from a scope only when every object its selector
    matches is in it (``scopes``). A kind can also be kept projected (``project_reads``, decision 0040): every
    object, but only the fields some lists read; such a list, when no label scope answers it, is answered there,
    and a get the label scopes miss is NotFound when that cache does not hold the object either. A read right
    after a write waits until the watch has delivered that write (see ``store``), so the engine reads its own
    writes while every list stays a consistent snapshot a watch can resume from.
    """

    # -----------------------------------------------------------------------
    # Lifecycle.

    def has_synced(self) -> bool:
        """True when every informer started so far has its initial list (readiness)."""
        with self._lock:
            informers = [*self._informers.values(), *self._projected.values()]
        return all(i.has_synced() or i.dead for i in informers)

    def stop(self) -> None:
        """Stop every informer thread and close idle connections; later reads go live. Safe to call twice."""
        with self._lock:
            self._stopped = True
            informers = [*self._informers.values(), *self._projected.values()]
            self._informers.clear()
            self._projected.clear()
            self._by_kind = None
        for informer in informers:
            informer.stop()
        self.api_client.rest_client.close()  # idle pooled connections; a later call opens new ones
        if self._tmpdir is not None:
            self._tmpdir.remove()
        if self._private_dir is not None:
            shutil.rmtree(self._private_dir, ignore_errors=True)
        self._tmpdir = self._private_dir = None

    def informers(self) -> builtins.list[Informer | FedInformer]:
        """The informers running now, projected ones included (for probes and tests)."""
        with self._lock:
            return [i for i in (*self._informers.values(), *self._projected.values()) if not i.dead]

    def cached_keys(self) -> builtins.list[tuple[str, builtins.list[tuple[str, str]]]]:
        """(kind, the keys of the objects its informer holds) per running informer (the cached-objects metric)."""
        with self._lock:
            running = [(key[1], informer) for key, informer in self._informers.items() if not informer.dead]
        return [(kind, informer.store.keys()) for kind, informer in running]

    def scope_by_labels(self, scopes: Mapping[tuple[str, str], Sequence[str]]) -> None:
        """Cache the objects of these (apiVersion, kind) only when they are in one of the label scopes: a label
        key (decision 14), or a selector such as a shard member's ``key=value`` (``scopes``).

        Call it before the first read; an all-objects informer of such a kind already running is dropped, and so is
        one of a scope the kind no longer has (a shard member's old name after it rejoined under a new one)."""
        with self._lock:
            self._label_scopes = {(api_version.rpartition("/")[0], kind): tuple(keys)
                                  for (api_version, kind), keys in scopes.items() if keys}
            stale = [key for key in self._informers
                     if (key[3] is None and self._keys_of(key[0], key[1]))
                     or (key[3] is not None and key[3] not in self._keys_of(key[0], key[1]))]
            dropped = [self._informers.pop(key) for key in stale]
            self._by_kind = None
        for informer in dropped:
            informer.stop()

    def project_reads(self, projections: Mapping[tuple[str, str], Sequence[ReadPath]],
                      labels: Mapping[tuple[str, str], Sequence[str]] | None = None,
                      unstamped: Mapping[tuple[str, str], str] | None = None) -> None:
        """Answer the lists of these (apiVersion, kind) that say they read only some paths of each object (``list``'s
        ``reads``), when no label scope answers them, from a cache of every object cut down to these paths
        (``engine.cluster.projection``; decision 0040). A list whose reads these paths do not cover, or that says
        nothing of its reads, is answered as before. Call it before the first read; a changed projection's cache
        is dropped (the next read starts it again).

        labels: per kind, label keys: its projected caches then hold only the objects carrying one of them (one
        cache per key), as its label scopes would without a shard member's stamp (decision 0067). A get those
        scopes miss asks them whether the object exists at all: where none holds it, no request is needed.

        unstamped: per kind, a label selector its projected caches add (a shard member's ``!<shard label>``,
        decision 0075): they then hold only the objects no member stamped, and a get they miss is NotCached (the
        object may exist stamped), never NotFound."""
        wanted = {(api_version.rpartition("/")[0], kind): tuple(paths) for (api_version, kind), paths in
                  projections.items()}
        by_label = {(api_version.rpartition("/")[0], kind): tuple(keys)
                    for (api_version, kind), keys in (labels or {}).items() if keys}
        beside = {(api_version.rpartition("/")[0], kind): selector
                  for (api_version, kind), selector in (unstamped or {}).items() if selector}
        with self._lock:
            changed = {group_kind for group_kind in {*beside, *self._projection_unstamped}
                       if beside.get(group_kind) != self._projection_unstamped.get(group_kind)}
            self._projections = wanted
            self._projection_labels = by_label
            self._projection_unstamped = beside
            stale = [key for key, informer in self._projected.items()
                     if (key[0].rpartition("/")[0], key[1]) not in wanted
                     or (key[0].rpartition("/")[0], key[1]) in changed
                     or informer.store.shape != tree(wanted[(key[0].rpartition("/")[0], key[1])])
                     or key[3] not in by_label.get((key[0].rpartition("/")[0], key[1]), (None,))]
            dropped = [self._projected.pop(key) for key in stale]
            self._by_kind = None
        for informer in dropped:
            informer.stop()

    def share_watch(self, api_version: str, kind: str, namespace: str | None, label: str | None) -> WatchFeed | None:
        """Let the caller's watch of this kind keep the read cache of the same scope and label, instead of a
        watch of the cluster's own (one watch per kind: the runtime's informers call it as they are built).

        namespace: the caller's scope (None: every namespace); label: the label scope it selects on (None: every
        object). None when the cache would not answer reads of that scope (caching off, a namespace the
        cache does not cover as such, or a selector that is not one of the kind's ``scope_by_labels``
        scopes): the caller watches alone. An informer of the cluster's own already running for that scope
        stops; reads wait for the caller's first list."""
        if not self._cache or (namespace is None) != (self._namespaces is None):
            return None
        if (label is not None or self._keys_of(api_version, kind)) and label not in self._keys_of(api_version, kind):
            return None  # a scope no read is answered from (the cache of a label-scoped kind is by its scopes)
        if namespace is not None and self._namespaces is not None and namespace not in self._namespaces:
            return None
        key = (api_version, kind, namespace, label)
        where = f" in {namespace}" if namespace else ""
        labelled = f" labelled {label}" if label else ""
        fed = FedInformer(f"{kind}.{api_version}{where}{labelled} on {self.name or 'the management cluster'}")
        with self._lock:
            if self._stopped:
                return None
            previous = self._informers.get(key)
            self._informers[key] = fed
            self._by_kind = None
        if previous is not None:
            previous.stop()
        return fed

    def observe_writes(self, observer: WriteObserver | None) -> None:
        """Tell ``observer`` of every named write (create with a name, update, status, patch, apply) as it is sent
        and answered, and of every object a get or list found (the runtime recognises the watch events that
        echo a pass's own writes, and those a running pass already saw)."""
        self._write_observer = observer

    def expect_seen(self, api_version: str, kind: str, namespace: str | None, resource_version: str,
                    obj: Obj | None = None) -> None:
        """Cached reads of this kind wait until the cache has seen ``resource_version``.

        The runtime watches on its own streams; it calls this for every event before queueing
        the orders the event wakes, so a pass never reads a cache older than what woke it. ``obj``
        (the event's object) lets a label-scoped kind wait only on the caches that see that object."""
        version = version_number(resource_version)
        if version is None:
            return
        for informer in self._covering(api_version, kind, namespace or None, obj):
            informer.store.expect_version(version)

    # -----------------------------------------------------------------------
    # Discovery.

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        """What the server's discovery says now, with printer columns from the kind's CRD when readable."""
        entries = self._wire.group_version(api_version)
        main = next((e for e in entries or [] if e.get("kind") == kind and "/" not in str(e.get("name", ""))), None)
        if main is None:
            self._wire.forget(api_version, kind)
            raise no_resource()
        plural = str(main["name"])
        info = ResourceInfo(
            api_version=api_version,
            kind=kind,
            plural=plural,
            namespaced=bool(main.get("namespaced")),
            status_subresource=any(e.get("name") == f"{plural}/status" for e in entries or []),
            singular=str(main.get("singularName") or kind.lower()),
            short_names=tuple(str(n) for n in main.get("shortNames") or ()),
            categories=tuple(str(c) for c in main.get("categories") or ()),
        )
        if not info.group:
            return info
        return dataclasses.replace(info, printer_columns=self._printer_columns(info))

    def _printer_columns(self, info: ResourceInfo) -> tuple[PrinterColumn, ...]:
        try:
            crd = self._live_get("apiextensions.k8s.io/v1", CRD[1], None, f"{info.plural}.{info.group}")
        except ApiError:  # a built-in group (no CRD), or no right to read CRDs: no columns
            return ()
        for version in (crd.get("spec") or {}).get("versions") or []:
            if isinstance(version, dict) and version.get("name") == info.version:
                return tuple(
                    PrinterColumn(
                        name=str(c.get("name", "")), type=str(c.get("type", "")), json_path=str(c.get("jsonPath", "")),
                        description=str(c.get("description", "")), priority=int(c.get("priority") or 0),
                        format=str(c.get("format", "")),
                    )
                    for c in version.get("additionalPrinterColumns") or [] if isinstance(c, dict)
                )
        return ()

    def serves(self, api_version: str, kind: str) -> bool:
        """Discovery's answer, remembered (``ServedKinds``): a pass that reads it makes no request."""
        known = self._served.known(api_version, kind)
        if known is not None:
            return known
        entries = self._wire.group_version(api_version)
        served = any(e.get("kind") == kind and "/" not in str(e.get("name", "")) for e in entries or [])
        if not served:
            self._wire.forget(api_version, kind)
        self._served.note(api_version, kind, served)
        return served


def _conforms(cluster: KubeCluster) -> Cluster:
    """Never called: mypy proves here that KubeCluster satisfies the Cluster protocol."""
    return cluster
