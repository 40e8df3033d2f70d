"""KubeCluster: the Cluster interface on a real API server, through the official client.

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

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import logging
import shutil
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.dynamic.resource import Resource

from engine.cluster.api import (
    ApiError,
    BadRequest,
    Cause,
    Cluster,
    Invalid,
    LabelSelector,
    NotCached,
    NotFound,
    Obj,
    ObjectList,
    PatchType,
    PrinterColumn,
    ResourceInfo,
    WatchEvent,
    WatchFeed,
    WriteObserver,
)
from engine.cluster.kube.errors import no_resource
from engine.cluster.kube.informer import FedInformer, Informer
from engine.cluster.kube.owned_dirs import OwnedDir
from engine.cluster.kube.requests import RequestObserver, observe_requests
from engine.cluster.kube.scopes import answers, holds, trusted
from engine.cluster.kube.served import UNSERVED_RECHECK, ServedKinds
from engine.cluster.kube.store import Expectation, Store, interned, key_of, slim_metadata, version_number
from engine.cluster.kube.transport import install
from engine.cluster.kube.wire import REQUEST_TIMEOUT, ResumingStream, Verb, WatchStream, Wire
from engine.cluster.projection import Path as ReadPath
from engine.cluster.projection import covers, tree
from engine.cluster.readonly import handed_out
from engine.cluster.selectors import FieldSelector, Selector, parse_fields, parse_labels

POOL_SIZE = 64
"""Connections per ApiClient: every informer holds one for its watch, requests need the rest."""

WATCH_TIMEOUT = 300.0
"""Seconds one informer watch lasts before it resumes from its resourceVersion."""

SETTLE_TIMEOUT = 5.0
"""Seconds a cached read waits for the watch to deliver this cluster's own writes before reading live."""

CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")

DISCOVERY_PREFIX = "engine-discovery-"
"""The private temporary folders of the discovery cache (``OwnedDir``: a starting operator removes those a
killed one left, ``sweep_dead``)."""

Scope = str | None
"""The namespace an informer covers, or None for all namespaces (and cluster-scoped kinds)."""

InformerKey = tuple[str, str, Scope, str | None]
"""(apiVersion, kind, namespace scope, label scope the informer selects on (``scopes``) or None for every object)."""


class KubeCluster:
    """One cluster reached through one ApiClient (never the library's global default)."""

    def __init__(
        self,
        name: str,
        api_client: ApiClient,
        *,
        cache: bool = True,
        discovery_cache_dir: Path | None = None,
        namespaces: Sequence[str] | None = None,
        watch_timeout: float = WATCH_TIMEOUT,
        settle_timeout: float = SETTLE_TIMEOUT,
        request_timeout: float = REQUEST_TIMEOUT,
        log: logging.Logger | None = None,
        on_request: RequestObserver | None = None,
        private_dir: str | None = None,
        unserved_recheck: float = UNSERVED_RECHECK,
    ) -> None:
        """namespaces: the only namespaces the cache covers (reads elsewhere, and of cluster-scoped
        kinds, go live); None covers the whole cluster. discovery_cache_dir: where the
        DynamicClient keeps its discovery file; None uses a private temporary directory.
        request_timeout: seconds a request (not a watch) may take before it fails as Timeout.
        on_request: told of every HTTP request (verb, code, seconds), for the API request metrics.
        private_dir: a directory of the client's own files (certificates), removed by ``stop``.
        unserved_recheck: seconds discovery's "not served" stands before ``serves`` asks again."""
        self.name = name
        self.api_client = api_client
        self._cache = cache
        self._namespaces = None if namespaces is None else frozenset(namespaces)
        self._watch_timeout = watch_timeout
        self._settle_timeout = settle_timeout
        self._log = log or logging.getLogger(f"engine.cluster.kube.{name or 'management'}")
        install(api_client, POOL_SIZE)
        if on_request is not None:
            observe_requests(api_client, on_request)
        self._private_dir = private_dir
        self._tmpdir: OwnedDir | None = None
        if discovery_cache_dir is None:
            self._tmpdir = OwnedDir(DISCOVERY_PREFIX)
            cache_dir = self._tmpdir.path
        else:
            cache_dir = Path(discovery_cache_dir)
            cache_dir.mkdir(parents=True, exist_ok=True)
        host = str(api_client.configuration.host or "")
        digest = hashlib.sha256(f"{name}\0{host}".encode()).hexdigest()[:16]
        self._wire = Wire(api_client, cache_dir / f"discovery-{digest}.json", request_timeout=request_timeout)
        self._served = ServedKinds(recheck=unserved_recheck)
        self._lock = threading.Lock()
        self._informers: dict[InformerKey, Informer | FedInformer] = {}
        self._by_kind: dict[tuple[str, str], builtins.list[tuple[InformerKey, Informer | FedInformer]]] | None = None
        """The informers by (group, kind), rebuilt after ``_informers`` changes (``_covering`` runs per event)."""
        self._starting: dict[InformerKey, threading.Lock] = {}
        self._label_scopes: dict[tuple[str, str], tuple[str, ...]] = {}
        """(group, kind) -> the label scopes whose objects alone are cached (``scope_by_labels``, ``scopes``)."""
        self._projections: dict[tuple[str, str], tuple[ReadPath, ...]] = {}
        """(group, kind) -> the paths a projected cache of every object keeps (``project_reads``)."""
        self._projection_labels: dict[tuple[str, str], tuple[str, ...]] = {}
        """(group, kind) -> the label keys its projected caches select by, one cache each (absent: one cache of
        every object)."""
        self._projected: dict[tuple[str, str, Scope, str | None], Informer] = {}
        """The projected informers, by (apiVersion, kind, namespace scope, label key or None)."""
        self._stopped = False
        self._write_observer: WriteObserver | None = None

    def __repr__(self) -> str:
        return f"<KubeCluster {self.name or '(management)'} {self.api_client.configuration.host}>"

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
                      labels: Mapping[tuple[str, str], Sequence[str]] | None = None) -> None:
        """Answer the lists of these (apiVersion, kind) that say they read only some paths of each object (``list``'s
        ``reads``), when no label scope answers them, from a cache of every object cut down to these paths
        (``engine.cluster.projection``; decision 0040). A list whose reads these paths do not cover, or that says
        nothing of its reads, is answered as before. Call it before the first read; a changed projection's cache
        is dropped (the next read starts it again).

        labels: per kind, label keys: its projected caches then hold only the objects carrying one of them (one
        cache per key), as its label scopes would without a shard member's stamp (decision 0067). A get those
        scopes miss asks them whether the object exists at all: where none holds it, no request is needed."""
        wanted = {(api_version.rpartition("/")[0], kind): tuple(paths) for (api_version, kind), paths in
                  projections.items()}
        by_label = {(api_version.rpartition("/")[0], kind): tuple(keys)
                    for (api_version, kind), keys in (labels or {}).items() if keys}
        with self._lock:
            self._projections = wanted
            self._projection_labels = by_label
            stale = [key for key, informer in self._projected.items()
                     if (key[0].rpartition("/")[0], key[1]) not in wanted
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

    # -----------------------------------------------------------------------
    # The wire, watched for a kind leaving the server.

    def _call(self, verb: Verb, api_version: str, kind: str, **params: Any) -> Any:
        try:
            return self._wire.call(verb, api_version, kind, **params)
        except NotFound as err:
            self._kind_may_have_left(api_version, kind, err)
            raise

    def _open_watch(self, api_version: str, kind: str, namespace: str | None, **params: Any) -> WatchStream:
        try:
            return self._wire.watch(api_version, kind, namespace, **params)
        except NotFound as err:
            self._kind_may_have_left(api_version, kind, err)
            raise

    def _resource(self, api_version: str, kind: str) -> Resource:
        try:
            return self._wire.resource(api_version, kind)
        except NotFound as err:
            self._kind_may_have_left(api_version, kind, err)
            raise

    def _kind_may_have_left(self, api_version: str, kind: str, err: NotFound) -> None:
        """A 404 that names no object says the kind is no longer served: discovery is asked again. (Inline
        try/except, not a context manager: every request passes here twice.)"""
        if not err.details.get("name"):
            self._served.forget(api_version, kind)

    # -----------------------------------------------------------------------
    # Reads.

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, *, live: bool = False,
            carries: Collection[str] = ()) -> Obj:
        resource = self._resource(api_version, kind)  # resolved once for the namespace and the cache (every read)
        if not resource.namespaced:
            namespace = None
        elif not namespace:
            raise self._namespace_required(resource, api_version)
        observer = self._write_observer
        if observer is None:
            return self._get(api_version, kind, namespace, name, live, carries, resource)
        try:
            found = self._get(api_version, kind, namespace, name, live, carries, resource)
        except NotFound:
            observer.read(api_version, kind, namespace, name, None)
            raise
        observer.read(api_version, kind, namespace, name, found)
        return found

    def _get(self, api_version: str, kind: str, namespace: str | None, name: str, live: bool,
             carries: Collection[str], resource: Resource) -> Obj:
        labels = () if live else self._keys_of(api_version, kind)
        if labels:
            return handed_out(self._labelled_get(api_version, kind, namespace, name, labels, carries))
        informer = None if live else self._informer(api_version, kind, namespace, reading=(namespace or "", name),
                                                    resource=resource)
        if informer is None:
            return handed_out(self._live_get(api_version, kind, namespace, name))
        found = informer.store.get((namespace or "", name))  # read-only (decision 37)
        if found is None:
            raise self._not_found(api_version, kind, name)
        return found

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        labels: LabelSelector = None,
        fields: str | None = None,
        live: bool = False,
        reads: Collection[ReadPath] | None = None,
    ) -> ObjectList:
        found = self._list(api_version, kind, namespace, labels=labels, fields=fields, live=live, reads=reads)
        observer = self._write_observer
        if observer is not None:
            for item in found.items:
                meta = item.get("metadata") or {}
                observer.read(api_version, kind, meta.get("namespace"), str(meta.get("name") or ""), item)
        return found

    def _list(self, api_version: str, kind: str, namespace: str | None, *, labels: LabelSelector,
              fields: str | None, live: bool, reads: Collection[ReadPath] | None) -> ObjectList:
        selector = parse_labels(labels)
        resource = self._resource(api_version, kind)
        namespace = (namespace or None) if resource.namespaced else None
        field_selector: FieldSelector | None = None
        if not live and self._cache:
            try:
                field_selector = parse_fields(fields)
            except BadRequest:
                field_selector = None  # a field this side cannot match: the server decides
        label = self._answering_label(api_version, kind, selector)
        informer: Informer | FedInformer | None = None
        if field_selector is not None and label != "":
            informer = self._informer(api_version, kind, namespace, label, listing=selector)
        elif field_selector is not None and reads is not None:
            informer = self._projected_informer(api_version, kind, namespace, reads)
        if informer is None or field_selector is None:
            answer = self._live_list(api_version, kind, namespace, labels=str(selector) or None, fields=fields)
            return ObjectList([handed_out(item) for item in answer.items], answer.resource_version)
        items, position = informer.store.select(namespace, selector, field_selector)  # read-only (decision 37)
        return ObjectList(items, position)

    def _labelled_get(self, api_version: str, kind: str, namespace: str | None, name: str,
                      labels: Sequence[str], carries: Collection[str]) -> Obj:
        """A get of a label-scoped kind: from the cache of a label the object carries, else from the server
        (a miss does not mean absent: the object may exist without the labels), unless the caller says
        the object it wants carries one of the labels: then that label's cache alone answers."""
        known = [label for label in labels if trusted(label, carries)]
        for label in known or labels:
            informer = self._informer(api_version, kind, namespace, label, (namespace or "", name))
            if informer is None:
                break
            found = informer.store.get((namespace or "", name))
            if found is not None:
                return found
        else:
            if known:
                missed = self._not_found(api_version, kind, name)
                raise NotCached(str(missed), details=missed.details)
            self._absent_from_projections(api_version, kind, namespace, name, carries)
        return self._live_get(api_version, kind, namespace, name)

    def _absent_from_projections(self, api_version: str, kind: str, namespace: str | None, name: str,
                                 carries: Collection[str]) -> None:
        """Raise when the projected caches of the kind say no object of the name exists where the label scopes
        missed it: NotFound when a cache of every object misses it; NotCached (it may exist without the labels)
        when the caches of the labels the caller says it carries all miss it. Return (read the server) when one
        holds it or none can tell."""
        labels = self._projection_labels.get((api_version.rpartition("/")[0], kind))
        key = (namespace or "", name)
        if labels is None:
            projected = self._projected_informer(api_version, kind, namespace, ())
            if projected is not None and projected.store.uid_at(key) is None:
                raise self._not_found(api_version, kind, name)  # a cache of every object of the kind misses it
            return
        carried = [label for label in labels if trusted(label, carries)]
        for label in carried:
            projected = self._projected_informer(api_version, kind, namespace, (), label)
            if projected is None or projected.store.uid_at(key) is not None:
                return
        if carried:
            missed = self._not_found(api_version, kind, name)
            raise NotCached(str(missed), details=missed.details)

    def _answering_label(self, api_version: str, kind: str, selector: Selector) -> str | None:
        """The label scope whose cache answers a list of a label-scoped kind: one whose objects include every
        object the selector matches; "" when there is none (the server answers);
        None when the kind is not label-scoped."""
        keys = self._keys_of(api_version, kind)
        if not keys:
            return None
        return next((key for key in keys if answers(key, selector)), "")

    def _keys_of(self, api_version: str, kind: str) -> tuple[str, ...]:
        return self._label_scopes.get((api_version.rpartition("/")[0], kind), ())

    def _live_get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj:
        found = self._call("get", api_version, kind, namespace=namespace, name=name)
        return self._out(found, api_version, kind)

    def _live_list(self, api_version: str, kind: str, namespace: str | None, *, labels: str | None = None,
                   fields: str | None = None) -> ObjectList:
        params: dict[str, Any] = {}
        if labels:
            params["label_selector"] = labels
        if fields:
            params["field_selector"] = fields
        answer = self._call("get", api_version, kind, namespace=namespace, **params) or {}
        items = [interned(self._out(item, api_version, kind)) for item in answer.get("items") or []]
        items.sort(key=key_of)
        return ObjectList(items, str((answer.get("metadata") or {}).get("resourceVersion") or ""))

    # -----------------------------------------------------------------------
    # Writes.

    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        api_version, kind, namespace, name = self._identify(obj, need_name=False)
        return self._write(api_version, kind, namespace, name, lambda: self._call(
            "create", api_version, kind, namespace=namespace, body=obj, **_manager(field_manager)))

    def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        api_version, kind, namespace, name = self._identify(obj)
        body = _without_managed_fields(obj)
        return self._write(api_version, kind, namespace, name, lambda: self._call(
            "replace", api_version, kind, namespace=namespace, name=name, body=body, **_manager(field_manager)))

    def update_status(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        api_version, kind, namespace, name = self._identify(obj)
        body = _without_managed_fields(obj)
        return self._write(api_version, kind, namespace, name, lambda: self._call(
            "replace", api_version, kind, namespace=namespace, name=name, body=body, subresource="status",
            **_manager(field_manager)))

    def patch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        status: bool = False,
        field_manager: str | None = None,
    ) -> Obj:
        namespace = self._namespace(api_version, kind, namespace)
        if patch_type == "merge":
            if not isinstance(patch, dict):
                raise BadRequest("a merge patch must be a JSON object")
            content_type = "application/merge-patch+json"
        elif patch_type == "json":
            if not isinstance(patch, list):
                raise BadRequest("a JSON patch must be a list of operations")
            content_type = "application/json-patch+json"
            if not patch:  # nothing to do; the client would send an empty list as an empty object
                return self._live_get(api_version, kind, namespace, name)
        else:
            raise BadRequest(f"unsupported patch type {patch_type!r}")
        return self._write(api_version, kind, namespace, name, lambda: self._call(
            "patch", api_version, kind, namespace=namespace, name=name, body=patch,
            subresource="status" if status else None, content_type=content_type, **_manager(field_manager)))

    def apply(self, obj: Obj, *, field_manager: str, force: bool = False, status: bool = False) -> Obj:
        api_version, kind, namespace, name = self._identify(obj)
        return self._write(api_version, kind, namespace, name, lambda: self._call(
            "server_side_apply", api_version, kind, namespace=namespace, name=name, body=obj,
            subresource="status" if status else None, field_manager=field_manager,
            force_conflicts=True if force else None))

    def _write(self, api_version: str, kind: str, namespace: str | None, name: str, send: Callable[[], Any]) -> Obj:
        """Send a write and take its answer (``_written``), telling the write observer of both."""
        observer = self._write_observer
        ticket = observer.sending(api_version, kind, namespace, name) if observer is not None and name else None
        try:
            obj = self._written(api_version, kind, send())
        except BaseException:
            if observer is not None and ticket is not None:
                observer.answered(ticket, None)
            raise
        if observer is not None and ticket is not None:
            observer.answered(ticket, obj)
        return obj

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj | None:
        """Delete now; an object finalizers hold is returned as it now is (with its deletionTimestamp).

        The write observer is told of the delete like any write, with that object as the answer: the watch
        event carrying it (the deletionTimestamp set) only echoes the delete. A delete that removed the object
        at once answers nothing to compare with (its DELETED event wakes the order as any delete's did)."""
        namespace = self._namespace(api_version, kind, namespace)
        observer = self._write_observer
        ticket = observer.sending(api_version, kind, namespace, name) if observer is not None else None
        held: Obj | None = None
        try:
            answer = self._call("delete", api_version, kind, namespace=namespace, name=name)
            if isinstance(answer, dict) and answer.get("kind") != "Status":
                meta = answer.get("metadata") or {}
                if meta.get("deletionTimestamp") and meta.get("finalizers"):
                    held = self._written(api_version, kind, answer)
        finally:
            if observer is not None and ticket is not None:
                observer.answered(ticket, held, deleted=True)
        if held is not None:
            return held
        uid = None
        if isinstance(answer, dict):
            uid = ((answer.get("details") or {}) if answer.get("kind") == "Status" else
                   (answer.get("metadata") or {})).get("uid")
        self._expect_gone(api_version, kind, namespace, name, uid, answer)
        return None

    def _written(self, api_version: str, kind: str, answer: Any) -> Obj:
        """A write's answer: reads now wait for the watch to deliver it; a CRD write changes discovery."""
        obj = self._out(answer, api_version, kind)
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            # The write removed the last finalizer of a deleting object: it is gone now.
            self._expect_gone(api_version, kind, meta.get("namespace"), str(meta.get("name")), meta.get("uid"), obj)
            return obj
        version = version_number(meta.get("resourceVersion"))
        if version is not None:
            labels = meta.get("labels")
            expected = Expectation(version=version, about=key_of(obj),
                                   labels=labels if isinstance(labels, dict) else {},
                                   since=time.monotonic())  # stamped here, not copied by each store
            for informer in self._covering(api_version, kind, meta.get("namespace"), obj):
                informer.store.expect(expected)
        if (api_version.rpartition("/")[0], kind) == CRD:
            self._wire.forget()
            self._served.forget()
        return obj

    def _expect_gone(self, api_version: str, kind: str, namespace: str | None, name: str, uid: Any,
                     answer: Any) -> None:
        meta = (answer.get("metadata") or {}) if isinstance(answer, dict) and answer.get("kind") != "Status" else {}
        version = version_number(meta.get("resourceVersion"))
        key = (namespace or "", name)
        for informer in self._covering(api_version, kind, namespace, {"metadata": {"namespace": namespace,
                                                                                   "name": name}}):
            known = str(uid) if uid else informer.store.uid_at(key)
            informer.store.expect(Expectation(version=version, gone=key, uid=known, since=time.monotonic()))
        if (api_version.rpartition("/")[0], kind) == CRD:
            self._wire.forget()
            self._served.forget()

    # -----------------------------------------------------------------------
    # Watch.

    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        labels: LabelSelector = None,
        timeout: float | None = None,
        bookmarks: bool = False,
    ) -> Iterator[WatchEvent]:
        """A live watch (never the cache). Without a timeout it resumes across server-side ends."""
        params: dict[str, Any] = {}
        selector = str(parse_labels(labels))
        if selector:
            params["label_selector"] = selector

        def open_from(rv: str | None) -> WatchStream:
            extra = {"resource_version": rv} if rv else {}
            return self._open_watch(api_version, kind, namespace or None, timeout=timeout, bookmarks=bookmarks,
                                    strip_managed_fields=self._cache, **params, **extra)

        if timeout is None:
            return ResumingStream(open_from, resource_version)
        return open_from(resource_version)

    # -----------------------------------------------------------------------
    # The cache.

    def _scope(self, namespaced: bool, namespace: str | None) -> tuple[bool, Scope]:
        """Whether the cache covers a read, and the informer scope that answers it."""
        if not self._cache:
            return False, None
        if self._namespaces is None:
            return True, None
        if namespaced and namespace in self._namespaces:
            return True, namespace
        return False, None

    def _informer(self, api_version: str, kind: str, namespace: str | None,
                  label: str | None = None, reading: tuple[str, str] | None = None,
                  listing: Selector | None = None, resource: Resource | None = None) -> Informer | FedInformer | None:
        """The synced informer that answers a read (started now if need be), or None to read live.

        label: the label scope the informer selects on (a label-scoped kind); None: every object. reading: the object a
        get reads (it waits for this cluster's writes of that object only); listing: a list's label selector (it waits
        for the writes of objects in its namespace it selects before or after them); neither: it waits for all.
        resource: the kind's, when the caller has resolved it already."""
        if resource is None:
            resource = self._resource(api_version, kind)
        if not self._cache:
            return None
        if self._namespaces is None:
            scope: Scope = None  # (``_scope``, inline: every cached read)
        else:
            covered, scope = self._scope(bool(resource.namespaced), namespace)
            if not covered:
                return None
        key = (api_version, kind, scope, label)
        informer = self._informers.get(key)  # one dict read needs no lock (stop clears the dict, then _stopped says so)
        if self._stopped:
            return None
        if informer is None or informer.dead:
            with self._lock:
                starting = self._starting.setdefault(key, threading.Lock())
            with starting:
                with self._lock:
                    informer = self._informers.get(key)
                if informer is None or informer.dead:
                    informer = self._start(api_version, kind, scope, label)
                    if informer is None:
                        return None
        if isinstance(informer, FedInformer) and not informer.wait_listed(self._settle_timeout):
            return None  # the feeding watch has not listed (or its kind is unserved, or it ended): read live
        if not informer.store.settle(self._settle_timeout, reading,
                                     None if listing is None else (namespace, listing)):
            self._log.warning("%r: the watch did not deliver this cluster's writes within %.1fs; reading live",
                              informer, self._settle_timeout)
            return None
        return informer

    def _projected_informer(self, api_version: str, kind: str, namespace: str | None,
                            reads: Collection[ReadPath], label: str | None = None) -> Informer | None:
        """The synced projected informer of a kind whose kept paths cover ``reads`` (started now if need be), or
        None (no projection of the kind, paths it does not keep, or a cache that does not cover the read).
        label: the label key it selects by (None: the one of every object, if the kind's are not by label)."""
        group = api_version.rpartition("/")[0]
        paths = self._projections.get((group, kind))
        if paths is None or not covers(paths, reads) or label not in self._projection_labels.get((group, kind),
                                                                                               (None,)):
            return None
        resource = self._resource(api_version, kind)
        covered, scope = self._scope(bool(resource.namespaced), namespace)
        if not covered:
            return None
        key = (api_version, kind, scope, label)
        with self._lock:
            if self._stopped:
                return None
            informer = self._projected.get(key)
        if informer is None or informer.dead:
            with self._lock:
                starting = self._starting.setdefault((api_version, kind, scope, f"\0projected {label or ''}"),
                                                     threading.Lock())
            with starting:
                with self._lock:
                    informer = self._projected.get(key)
                if informer is None or informer.dead:
                    informer = self._start_projected(api_version, kind, scope, paths, label)
                    if informer is None:
                        return None
        if not informer.store.settle(self._settle_timeout):
            self._log.warning("%r: the watch did not deliver this cluster's writes within %.1fs; reading live",
                              informer, self._settle_timeout)
            return None
        return informer

    def _start_projected(self, api_version: str, kind: str, scope: Scope,
                         paths: Sequence[ReadPath], label: str | None = None) -> Informer | None:
        where = f" in {scope}" if scope else ""
        labelled = f" labelled {label}" if label else ""
        selector = {"label_selector": label} if label else {}
        shape = tree(paths)  # the watch cuts each object down to it before walking it (the store keeps it so)
        informer = Informer(
            f"{kind}.{api_version}{where}{labelled} projected on {self.name or 'the management cluster'}",
            lambda: self._live_list(api_version, kind, scope, labels=label),
            lambda rv: self._open_watch(api_version, kind, scope, timeout=self._watch_timeout, bookmarks=True,
                                        shape=shape, **selector, **({"resource_version": rv} if rv else {})),
            log=self._log, cluster=self.name, store=Store(shape), timeout=self._watch_timeout,
        )
        informer.start()
        with self._lock:
            if self._stopped or self._projections.get((api_version.rpartition("/")[0], kind)) != tuple(paths):
                stopped = True
            else:
                stopped = False
                self._projected[(api_version, kind, scope, label)] = informer
                self._by_kind = None
        if stopped:
            informer.stop()
            return None
        return informer

    def _start(self, api_version: str, kind: str, scope: Scope, label: str | None) -> Informer | FedInformer | None:
        where = f" in {scope}" if scope else ""
        labelled = f" labelled {label}" if label else ""
        selector = {"label_selector": label} if label else {}
        informer = Informer(
            f"{kind}.{api_version}{where}{labelled} on {self.name or 'the management cluster'}",
            lambda: self._live_list(api_version, kind, scope, labels=label),
            lambda rv: self._open_watch(api_version, kind, scope, timeout=self._watch_timeout, bookmarks=True,
                                        strip_managed_fields=True, **selector,
                                        **({"resource_version": rv} if rv else {})),
            log=self._log, cluster=self.name, timeout=self._watch_timeout,
        )
        informer.start()  # the first list: its errors (NotFound for an unserved kind) are the read's
        with self._lock:
            shared = self._informers.get((api_version, kind, scope, label))
            if self._stopped or (isinstance(shared, FedInformer) and not shared.dead):
                stopped = True  # stopped meanwhile, or a watch shared meanwhile: that one answers
            else:
                stopped = False
                self._informers[(api_version, kind, scope, label)] = informer
                self._by_kind = None
        if stopped:
            informer.stop()
            return None if self._stopped else shared
        return informer

    def _covering(self, api_version: str, kind: str, namespace: str | None,
                  obj: Obj | None = None) -> builtins.list[Informer | FedInformer]:
        """Informers whose objects include this one's: same group and kind, scope all or its namespace, and
        for a label-scoped informer, ``obj`` carries its label or it holds ``obj`` now (it will see it go)."""
        group = api_version.rpartition("/")[0]
        meta = (obj or {}).get("metadata") or {}
        labels = meta.get("labels") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        with self._lock:
            if self._by_kind is None:
                self._by_kind = {}
                for entry in self._informers.items():
                    self._by_kind.setdefault((entry[0][0].rpartition("/")[0], entry[0][1]), []).append(entry)
                for (api_version, projected_kind, scope, label), projected in self._projected.items():
                    self._by_kind.setdefault((api_version.rpartition("/")[0], projected_kind), []).append(
                        ((api_version, projected_kind, scope, label), projected))
            return [
                informer for (_, _, scope, label), informer in self._by_kind.get((group, kind), ())
                if (scope is None or scope == namespace) and not informer.dead
                and (label is None or (obj is not None
                                       and (holds(label, labels) or informer.store.uid_at(key) is not None)))
            ]

    # -----------------------------------------------------------------------
    # Helpers.

    def _namespace(self, api_version: str, kind: str, namespace: str | None) -> str | None:
        """The namespace a call on one object addresses: required for namespaced kinds, dropped otherwise."""
        resource = self._resource(api_version, kind)
        if not resource.namespaced:
            return None
        if not namespace:
            raise self._namespace_required(resource, api_version)
        return namespace

    @staticmethod
    def _namespace_required(resource: Resource, api_version: str) -> BadRequest:
        return BadRequest(f"{_resource_name(resource.name, api_version)} is namespaced: a namespace is required")

    def _identify(self, obj: Obj, *, need_name: bool = True) -> tuple[str, str, str | None, str]:
        """apiVersion, kind, namespace and name of an object body, checked as the API server checks them."""
        if not isinstance(obj, dict):
            raise BadRequest("the object must be a JSON object")
        for key in ("apiVersion", "kind"):
            if not obj.get(key) or not isinstance(obj[key], str):
                raise BadRequest(f"Object '{'Kind' if key == 'kind' else key}' is missing in the request body")
        meta = obj.get("metadata", {})
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be a JSON object")
        api_version, kind = obj["apiVersion"], obj["kind"]
        namespace = self._namespace(api_version, kind, meta.get("namespace") or None)
        name = str(meta.get("name") or "")
        if need_name and not name:
            group = api_version.rpartition("/")[0]
            qualified = f"{kind}.{group}" if group else kind
            raise Invalid(f'{qualified} "" is invalid: metadata.name: Required value: name is required',
                          causes=[Cause("metadata.name", "Required value: name is required", "FieldValueRequired")],
                          details={"name": "", "group": group, "kind": kind})
        return api_version, kind, namespace, name

    def _out(self, obj: Any, api_version: str, kind: str) -> Obj:
        """An answer as this cluster returns it: with apiVersion and kind (list items of built-in kinds
        lack them) and, when caching, with only the Apply entries of managedFields (as the cache keeps them),
        so reads and write answers compare equal."""
        if not isinstance(obj, dict):
            raise BadRequest(f"the server answered with {type(obj).__name__}, not an object")
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
        if self._cache and isinstance(obj.get("metadata"), dict):
            obj["metadata"] = slim_metadata(obj["metadata"])
        return obj

    def _not_found(self, api_version: str, kind: str, name: str) -> NotFound:
        resource = self._resource(api_version, kind)
        group = api_version.rpartition("/")[0]
        return NotFound(f'{_resource_name(resource.name, api_version)} "{name}" not found',
                        details={"name": name, "group": group, "kind": resource.name})


def _resource_name(plural: str, api_version: str) -> str:
    """The resource as the API server's errors spell it: ``secrets`` or ``widgets.example.com``."""
    group = api_version.rpartition("/")[0]
    return f"{plural}.{group}" if group else plural


def _manager(field_manager: str | None) -> dict[str, str]:
    return {"field_manager": field_manager} if field_manager else {}


def _conforms(cluster: KubeCluster) -> Cluster:
    """Never called: mypy proves here that KubeCluster satisfies the Cluster protocol."""
    return cluster


def _without_managed_fields(obj: Obj) -> Obj:
    """A PUT body without metadata.managedFields, so the server keeps the stored ones. The cache keeps
    only the Apply entries (store.stripped): sent back, that cut list would replace the object's
    managedFields and drop every other manager's entries."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}

