"""The base of a KubeCluster: its settings and state, the wire (requests and watches, each noticing a kind that
left the server), live reads, and the checks of an object body as the API server makes them.

``KubeCluster`` is built in layers, one module each: this base, the informer caches and watches
(``cluster_cache``), the reads (``cluster_reads``), the writes (``cluster_writes``), and the cluster's lifecycle and
discovery (``cluster``). Each layer extends the one below, so no two of them import each other.
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.dynamic.resource import Resource

from engine.cluster.api import (
    BadRequest,
    Cause,
    Invalid,
    NotFound,
    Obj,
    ObjectList,
    WriteObserver,
)
from engine.cluster.kube.informer import FedInformer, Informer
from engine.cluster.kube.owned_dirs import OwnedDir
from engine.cluster.kube.requests import RequestObserver, observe_requests
from engine.cluster.kube.served import UNSERVED_RECHECK, ServedKinds
from engine.cluster.kube.store import interned, key_of, slim_metadata
from engine.cluster.kube.transport import install
from engine.cluster.kube.wire import REQUEST_TIMEOUT, Verb, WatchStream, Wire
from engine.cluster.projection import Path as ReadPath

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


class KubeBase:
    """What every part of a KubeCluster stands on: its settings and state, the wire, live reads, object checks."""

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
        self._projection_unstamped: dict[tuple[str, str], str] = {}
        """(group, kind) -> a selector its projected caches add; a get they miss is NotCached (``project_reads``)."""
        self._projected: dict[tuple[str, str, Scope, str | None], Informer] = {}
        """The projected informers, by (apiVersion, kind, namespace scope, label key or None)."""
        self._stopped = False
        self._write_observer: WriteObserver | None = None

    def __repr__(self) -> str:
        return f"<KubeCluster {self.name or '(management)'} {self.api_client.configuration.host}>"

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
    # Live reads.

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
