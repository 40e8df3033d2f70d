"""An in-memory Kubernetes API: one store per cluster, with the semantics the engine relies on.

Tests, scenarios and the HTTP emulator run the engine against this instead of a real API
server, so it has to get right what a naive dict store gets wrong: resourceVersion and
conflicts, generation, the status subresource, finalizers, ownerReference garbage
collection, Server-Side Apply (through ``ssa``), CRD admission (through ``admission``), built-in kinds
decoded, defaulted and encoded as their Go types (``builtin``), strategic merge patch (``strategic``),
no-op writes that change nothing, and watch from a resourceVersion with a bounded log.

Simplified on purpose: no namespace lifecycle (objects may live in a namespace that does
not exist, and deleting a Namespace does not empty it), no version conversion (every
served version of a CRD reads the same stored object), no deletecollection, no paging, no
schemas for built-in kinds; garbage collection and a CRD's (un)serving happen in the write
itself, where a real server's controllers act moments later. The contract suite
(tests/cluster/contract) holds the rest to a real API server.
"""

from __future__ import annotations

import builtins
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from engine.clock import Clock, format_time
from engine.cluster import builtin, ssa
from engine.cluster.admission.fielderrors import go_value
from engine.cluster.api import (
    AlreadyExists,
    BadRequest,
    Cause,
    Cluster,
    Conflict,
    Gone,
    Invalid,
    LabelSelector,
    NoSuchResource,
    NotFound,
    Obj,
    ObjectList,
    PatchType,
    ResourceInfo,
    ServerError,
    UnsupportedMediaType,
    WatchEvent,
)
from engine.cluster.crd_check import CRD_INFO, compile_crd, crd_decoding_error, invalid
from engine.cluster.crd_decode import decode as decode_crd
from engine.cluster.crd_decode import drop_unknown
from engine.cluster.limits import check_depth, int64_or_float
from engine.cluster.memory_objects import (
    SYSTEM_META,
    content,
    given_managed_fields,
    keep_server_fields,
    metadata_repeats,
    spec,
    take_managed_fields,
    take_status,
    timeless,
    typed_patch_error,
)
from engine.cluster.patches import Unexplained, go_json_type, json_copy, json_patch, merge_patch
from engine.cluster.readonly import handed_out
from engine.cluster.selectors import (
    SUBDOMAIN_MSG,
    Selector,
    is_subdomain,
    label_key_errors,
    label_value_errors,
    namespace_name_errors,
    parse_fields,
    parse_labels,
)
from engine.cluster.served_kinds import (
    BUILTIN_KINDS,
    CRD_KIND,
    ServedKind,
)
from engine.cluster.strategic import strategic_merge

UNKNOWN_MANAGER = "unknown"
"""The field manager of a non-apply write whose caller names none."""

_GENERATED_CHARS = "bcdfghjklmnpqrstvwxz2456789"
STRATEGIC_UNSUPPORTED = ("the body of the request was in an unknown format - accepted media types include: "
                         "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
"""What the API server answers a strategic merge patch of a custom resource (415)."""

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server puts on every Namespace: its name."""


def _no_resource() -> NotFound:
    return NoSuchResource()


@dataclass(frozen=True)
class _Event:
    """One entry of the event log; ``old`` lets label-filtered watches see objects leave."""

    rv: int
    type: str
    store: tuple[str, str]
    namespace: str | None
    obj: Obj
    old: Obj | None


class MemoryCluster:
    """One in-memory cluster, thread-safe (one lock), every returned object a deep copy; what a read answers is
    still read-only to its caller, as with the kube cluster's cache (``engine.cluster.readonly``)."""

    def __init__(self, name: str = "", *, clock: Clock, permissive: bool = False,
                 event_log_size: int = 10000, uids: Callable[[], str] | None = None) -> None:
        """permissive=True: a kind with no installed CRD is served anyway as a custom resource
        with a status subresource and no schema (namespaced when the object or call has a
        namespace, plural = lowercase kind + "s"), as scenarios need for external kinds.
        permissive=False: unknown kinds are NotFound, as on a real API server.
        uids: where new uids come from (default random uuid4); scenarios pass a seeded one so a
        file runs the same passes every time (rules may derive jitter from a uid)."""
        self.name = name
        self._new_uid: Callable[[], str] = uids or (lambda: str(uuid.uuid4()))
        self._clock = clock
        self._permissive = permissive
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._rv = 0
        self._kinds: dict[tuple[str, str], ServedKind] = {
            (i.api_version, i.kind): ServedKind(i, None, builtin.list_keys(i.api_version, i.kind))
            for i in BUILTIN_KINDS}
        self._crds: dict[str, list[tuple[str, str]]] = {}
        self._unserved: set[tuple[str, str]] = set()
        self._stores: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {}
        self._events: deque[_Event] = deque()
        self._event_log_size = event_log_size
        self._compacted = 0

    # -----------------------------------------------------------------------
    # Discovery.

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        with self._lock:
            return self._kind(api_version, kind, namespaced=True).info

    def serves(self, api_version: str, kind: str) -> bool:
        try:
            self.resource_info(api_version, kind)
        except NotFound:
            return False
        return True

    def resources(self) -> builtins.list[ResourceInfo]:
        """Every kind served now, for discovery documents (the HTTP emulator): built-in kinds, the
        served versions of installed CRDs and, in a permissive cluster, the guessed kinds that
        hold objects. Sorted by apiVersion, then kind."""
        with self._lock:
            found = {key: k.info for key, k in self._kinds.items()}
            if self._permissive:
                owned = {k.store for k in self._kinds.values()}
                for store_key, store in self._stores.items():
                    if store and store_key not in owned:
                        obj = next(iter(store.values()))
                        found.setdefault((obj["apiVersion"], obj["kind"]), self._kind_of(store_key, obj).info)
            return [info for key, info in sorted(found.items()) if key not in self._unserved]

    def unserve(self, api_version: str, kind: str) -> None:
        """From now on the kind answers NotFound to every call; its objects stay stored."""
        with self._lock:
            self._unserved.add((api_version, kind))

    def serve(self, api_version: str, kind: str) -> None:
        """Undo ``unserve``."""
        with self._lock:
            self._unserved.discard((api_version, kind))

    def schemas(self) -> dict[tuple[str, str], Obj]:
        """The openAPIV3Schema of every served kind that has one (CRD versions), by (apiVersion, kind)."""
        with self._lock:
            return {key: json_copy(k.admission.schema) for key, k in self._kinds.items()
                    if k.admission is not None and key not in self._unserved}

    def apply_problems(self, obj: Obj) -> builtins.list[str]:
        """What typing an apply configuration of the object's kind finds (undeclared fields, repeated set or
        map-list entries), in structured-merge-diff's words; an apply with any is refused (``typed_patch_error``)."""
        with self._lock:
            k = self._kind(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""), namespaced=True)
        if k.admission is not None:
            return k.admission.apply_problems(obj)
        return [f".{path}: field not declared in schema" for path in self.unknown_fields(obj)]

    def unknown_fields(self, obj: Obj) -> builtins.list[str]:
        """The fields of a write's body that its kind's schema does not declare (``spec.rotaton``),
        which admission would prune; [] for kinds without a schema (built-in and permissive kinds)."""
        with self._lock:
            k = self._kind(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""), namespaced=True)
        if k.info.kind == CRD_KIND and k.info.group == "apiextensions.k8s.io":
            return decode_crd(obj).unknown
        if k.admission is not None:
            return k.admission.unknown_fields(obj)
        return builtin.unknown_fields(obj) or []

    def compact(self, revision: int | None = None) -> None:
        """Forget the events up to ``revision`` (default: all so far), as etcd's compaction does: a watch from an
        older resourceVersion is Gone."""
        with self._lock:
            until = self._rv if revision is None else min(revision, self._rv)
            while self._events and self._events[0].rv <= until:
                self._events.popleft()
            self._compacted = max(self._compacted, until)

    def scratch(self) -> MemoryCluster:
        """A copy to try a write on (server-side dry run): the same kinds and objects, the same next
        resourceVersion, no watchers and no event log. Stored objects are shared: no write changes one
        in place, each stores a new object."""
        with self._lock:
            copy = MemoryCluster(self.name, clock=self._clock, permissive=self._permissive,
                                 event_log_size=self._event_log_size, uids=self._new_uid)
            copy._rv = copy._compacted = self._rv
            copy._kinds = dict(self._kinds)
            copy._crds = {name: list(keys) for name, keys in self._crds.items()}
            copy._unserved = set(self._unserved)
            copy._stores = {key: dict(store) for key, store in self._stores.items()}
            return copy

    # -----------------------------------------------------------------------
    # Reads.

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, *, live: bool = False,
            carries: Collection[str] = ()) -> Obj:
        """The stored object; live and carries are ignored: every read here is live."""
        with self._lock:
            k = self._kind(api_version, kind, namespaced=bool(namespace))
            return handed_out(self._out(k, self._existing(k, self._scope(k, namespace), name)))

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        labels: LabelSelector = None,
        fields: str | None = None,
        live: bool = False,
        reads: Collection[tuple[str, ...]] | None = None,
    ) -> ObjectList:
        """reads: ignored (every object is at hand whole)."""
        selector = parse_labels(labels)
        with self._lock:
            k = self._kind(api_version, kind, namespaced=bool(namespace))
            # A custom resource's fields are refused in its own words; a built-in kind's by the default conversion.
            field_selector = parse_fields(fields, labelled=k.custom)
            scope = namespace if k.info.namespaced else None
            items = [
                handed_out(self._out(k, obj))
                for (ns, _), obj in sorted(self._stores.get(k.store, {}).items())
                if (not scope or ns == scope) and selector.matches_object(obj) and field_selector.matches(obj)
            ]
            return ObjectList(items, str(self._rv))

    # -----------------------------------------------------------------------
    # Writes.

    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        check_depth(obj)
        with self._lock:
            k, namespace, _ = self._identify(obj, need_name=False)
            new = json_copy(obj)
            given_version = (obj.get("metadata") or {}).get("resourceVersion")
            self._prepare_create(k, new, namespace, keep_managed=False, check_exists=False)
            new = self._admit(k, new, None)
            if given_version not in (None, "", "0"):
                raise ServerError("resourceVersion should not be set on objects to be created")
            self._check_not_taken(k, new)  # as the API server: admission refuses before storage finds the name taken
            new = ssa.record_update(builtin.empty(k.info.api_version, k.info.kind), new,
                                    field_manager or UNKNOWN_MANAGER, now=self._now(), list_map_keys=k.list_keys)
            builtin.prepare_for_create(new)  # the strategy's own fields (a Namespace's finalizer): nobody owns them
            return self._commit(k, None, new)

    def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        check_depth(obj)
        with self._lock:
            k, namespace, name = self._identify(obj)
            old = self._existing(k, namespace, name)
            self._check_update_preconditions(k, obj, old)
            new = json_copy(obj)
            keep_server_fields(new, old)
            if k.info.status_subresource:
                take_status(new, old)
            given = given_managed_fields(obj)
            if given is None:
                return self._update(k, old, new, field_manager, subresource=None)
            base = {**old, "metadata": {**old["metadata"], "managedFields": given}}
            return self._update(k, base, new, field_manager, subresource=None, stored=old)

    def update_status(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        check_depth(obj)
        with self._lock:
            k, namespace, name = self._identify(obj)
            if not k.info.status_subresource:
                raise _no_resource()
            old = self._existing(k, namespace, name)
            self._check_update_preconditions(k, obj, old)
            new = json_copy(old)
            take_status(new, obj)
            return self._update(k, old, new, field_manager, subresource="status")

    def scale(self, api_version: str, kind: str, namespace: str | None, name: str, replicas: int, *,
              field_manager: str | None = None, resource_version: str | None = None) -> Obj:
        """Set ``spec.replicas`` through the scale subresource (recorded as a ``scale`` write, as the API server
        records it); ``resource_version``, when given, must be the stored one."""
        with self._lock:
            k = self._kind(api_version, kind, namespaced=bool(namespace))
            old = self._existing(k, self._scope(k, namespace), name)
            self._check_precondition(k, {"metadata": {"resourceVersion": resource_version}}, old)
            new = json_copy(old)
            new.setdefault("spec", {})["replicas"] = replicas
            return self._update(k, old, new, field_manager, subresource="scale")

    def patch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType | Literal["strategic"] = "merge",
        status: bool = False,
        field_manager: str | None = None,
    ) -> Obj:
        """patch_type "strategic" (a strategic merge patch) is for built-in kinds only, as on the API server."""
        check_depth(patch, "the patch")
        with self._lock:
            k = self._kind(api_version, kind, namespaced=bool(namespace))
            if status and not k.info.status_subresource:
                raise _no_resource()
            namespace = self._scope(k, namespace)
            old = self._existing(k, namespace, name)
            if patch_type == "merge":
                if not isinstance(patch, dict):
                    raise BadRequest("error decoding patch: json: cannot unmarshal "
                                     f"{go_json_type(patch)} into Go value of type map[string]interface {{}}")
                patched = merge_patch(old, patch)
            elif patch_type == "strategic":
                schema = builtin.kind_schema(k.info.api_version, k.info.kind)
                if schema is None:
                    raise UnsupportedMediaType(STRATEGIC_UNSUPPORTED)
                patched = strategic_merge(old, patch, schema)
            elif patch_type == "json":
                patched = json_patch(old, patch)
            else:
                raise BadRequest(f"unsupported patch type {patch_type!r}")
            if not isinstance(patched, dict):
                raise Invalid("the patched object is not a JSON object")
            self._check_precondition(k, patched, old)
            meta: Obj = patched["metadata"] if isinstance(patched.get("metadata"), dict) else {}
            if k.needs_resource_version and not meta.get("resourceVersion"):
                raise self._unconditional(k, name)
            if meta.get("uid") and meta["uid"] != old["metadata"].get("uid"):
                cause = Cause("metadata.uid", f'Invalid value: "{meta["uid"]}": field is immutable')
                raise self._invalid(k, name, [cause] * metadata_repeats(k))
            if meta.get("name") != name or (k.info.namespaced and meta.get("namespace") != namespace):
                raise BadRequest(f"the name of the object ({meta.get('name')}) does not match the name on the URL"
                                 f" ({name})")
            if status:
                new = json_copy(old)
                take_status(new, patched)
            else:
                new = patched
                keep_server_fields(new, old)
                if k.info.status_subresource:
                    take_status(new, old)
            return self._update(k, old, new, field_manager, subresource="status" if status else None)

    def apply(self, obj: Obj, *, field_manager: str, force: bool = False, status: bool = False) -> Obj:
        check_depth(obj)
        with self._lock:
            k, namespace, name = self._identify(obj)
            if status and not k.info.status_subresource:
                raise _no_resource()
            refused = typed_patch_error(obj, k.info.api_version, k.info.kind, self.apply_problems(obj))
            if refused is not None:
                raise refused
            live = self._stores.get(k.store, {}).get((namespace or "", name))
            applied = json_copy(obj)
            applied["metadata"]["namespace"] = namespace
            if namespace is None:
                applied["metadata"].pop("namespace")
            if live is None:
                if status:
                    raise self._not_found(k, name)
                if k.info.status_subresource:
                    applied.pop("status", None)
                new = ssa.apply_patch(None, applied, field_manager, force=force, now=self._now(),
                                      list_map_keys=k.list_keys)
                self._prepare_create(k, new, namespace, keep_managed=True)
                new = self._admit(k, new, None, applied=True)
                builtin.prepare_for_create(new)
                return self._commit(k, None, new)
            self._check_precondition(k, applied, live)
            subresource = "status" if status else None
            if k.info.status_subresource and not status:
                applied.pop("status", None)
            result = ssa.apply_patch(live, applied, field_manager, force=force, now=self._now(),
                                     subresource=subresource, list_map_keys=k.list_keys)
            if status:
                new = json_copy(live)
                take_status(new, result)
                take_managed_fields(new, result)
            else:
                new = result
                keep_server_fields(new, live, keep_managed=False)
                if k.info.status_subresource:
                    take_status(new, live)
            return self._update(k, live, new, field_manager, subresource=subresource, attributed=True, applied=True)

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj | None:
        with self._lock:
            k = self._kind(api_version, kind, namespaced=bool(namespace))
            old = self._existing(k, self._scope(k, namespace), name)
            return self._delete(k, old)

    # -----------------------------------------------------------------------
    # Scenario fixtures.

    def seed(self, obj: Obj) -> Obj:
        """Store an object as given, without admission (scenario fixtures): keep the metadata it
        carries, fill what it lacks as the API server would, record a watch event."""
        with self._lock:
            k, namespace, name = self._identify(obj)
            new = json_copy(obj)
            new["apiVersion"], new["kind"] = k.info.api_version, k.info.kind
            meta = new["metadata"]
            if namespace is None:
                meta.pop("namespace", None)
            meta.pop("resourceVersion", None)
            meta.setdefault("uid", self._new_uid())
            if k.has_generation:
                meta.setdefault("generation", 1)
            meta.setdefault("creationTimestamp", self._now())
            if k.info.kind == CRD_KIND and k.info.group == "apiextensions.k8s.io":
                new = self._admit_crd(new, None)
            old = self._stores.get(k.store, {}).get((namespace or "", name))
            return self._commit(k, old, new, seeded=True)

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
        """Checks the request now (NotFound, Gone, BadRequest raise here); the events come lazily."""
        selector = parse_labels(labels)
        with self._lock:
            k = self._kind(api_version, kind, namespaced=bool(namespace))
            scope = namespace if k.info.namespaced else None
            initial: list[WatchEvent] = []
            if resource_version in (None, "", "0"):
                cursor = self._rv
                initial = [
                    {"type": "ADDED", "object": handed_out(self._out(k, obj))}
                    for (ns, _), obj in sorted(self._stores.get(k.store, {}).items())
                    if (not scope or ns == scope) and selector.matches_object(obj)
                ]
            else:
                try:
                    cursor = int(str(resource_version))
                except ValueError:
                    raise Unexplained(f'resourceVersion: Invalid value: "{resource_version}": strconv.ParseUint: '
                                      f'parsing "{resource_version}": invalid syntax') from None
                self._check_not_compacted(cursor)
        return self._stream(k, scope, selector, cursor, initial, timeout, bookmarks)

    def _stream(self, k: ServedKind, scope: str | None, selector: Selector, cursor: int,
                initial: builtins.list[WatchEvent], timeout: float | None, bookmarks: bool) -> Iterator[WatchEvent]:
        deadline = None if timeout is None else time.monotonic() + timeout
        yield from initial
        while True:
            with self._changed:
                batch, cursor = self._events_after(k, scope, selector, cursor)
                while not batch:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        break
                    self._changed.wait(remaining)
                    batch, cursor = self._events_after(k, scope, selector, cursor)
            if not batch:
                break
            yield from batch
        if bookmarks:
            meta = {"resourceVersion": str(cursor)}
            yield {"type": "BOOKMARK", "object": {"apiVersion": k.info.api_version, "kind": k.info.kind,
                                                  "metadata": meta}}

    def _events_after(self, k: ServedKind, scope: str | None, selector: Selector,
                      cursor: int) -> tuple[builtins.list[WatchEvent], int]:
        """The events a watcher sees after cursor, and the resourceVersion it has now seen up to."""
        self._check_not_compacted(cursor)
        newer: builtins.list[_Event] = []
        for event in reversed(self._events):
            if event.rv <= cursor:
                break
            newer.append(event)
        out: list[WatchEvent] = []
        for event in reversed(newer):
            if event.store != k.store or (scope and event.namespace != scope):
                continue
            kind, obj = event.type, event.obj
            now_in = selector.matches_object(obj)
            if kind == "MODIFIED" and event.old is not None and not now_in:
                # Leaving the selection reads as a deletion of the object as it was, as the watch cache does.
                kind, obj = ("DELETED", event.old) if selector.matches_object(event.old) else ("", obj)
            elif kind == "MODIFIED" and event.old is not None and not selector.matches_object(event.old):
                kind = "ADDED"
            elif not now_in:
                kind = ""
            if kind:
                view = self._out(k, obj)
                view["metadata"]["resourceVersion"] = str(event.rv)
                out.append({"type": kind, "object": handed_out(view)})
        return out, max(cursor, self._rv)

    def _check_not_compacted(self, cursor: int) -> None:
        if cursor < self._compacted:
            raise Gone(f"too old resource version: {cursor} ({self._compacted + 1})")

    # -----------------------------------------------------------------------
    # Kinds.

    def _kind(self, api_version: str, kind: str, *, namespaced: bool) -> ServedKind:
        """The served kind, or NotFound as the API server answers for an unknown resource."""
        if (api_version, kind) in self._unserved:
            raise _no_resource()
        found = self._kinds.get((api_version, kind))
        if found is not None:
            return found
        group = api_version.rpartition("/")[0]
        if not self._permissive or any(k.store == (group, kind) for k in self._kinds.values()):
            raise _no_resource()
        lower = kind.lower()
        return ServedKind(ResourceInfo(api_version, kind, lower + "s", namespaced, True, lower), custom=True)

    def _install_crd(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        self._uninstall_crd(name)
        kinds = compile_crd(crd)
        for k in kinds:
            self._kinds[(k.info.api_version, k.info.kind)] = k
        self._crds[name] = [(k.info.api_version, k.info.kind) for k in kinds]

    def _uninstall_crd(self, name: str) -> set[tuple[str, str]]:
        """Stop serving a CRD's kinds; returns their stores."""
        stores = set()
        for key in self._crds.pop(name, []):
            k = self._kinds.pop(key, None)
            if k is not None:
                stores.add(k.store)
        return stores

    # -----------------------------------------------------------------------
    # The write pipeline.

    def _identify(self, obj: Obj, *, need_name: bool = True) -> tuple[ServedKind, str | None, str]:
        """The kind, namespace (None when cluster-scoped) and name an object body addresses."""
        if not isinstance(obj, dict):
            raise BadRequest("the object must be a JSON object")
        for key in ("apiVersion", "kind"):
            if not obj.get(key) or not isinstance(obj[key], str):
                raise BadRequest(f"Object '{'Kind' if key == 'kind' else key}' is missing in the request body")
        meta = obj.get("metadata", {})
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be a JSON object")
        namespace = meta.get("namespace") or None
        k = self._kind(obj["apiVersion"], obj["kind"], namespaced=bool(namespace))
        name = meta.get("name") or ""
        if need_name and not name:
            raise self._invalid(k, "", [Cause("metadata.name", "Required value: name is required",
                                              "FieldValueRequired")])
        return k, self._scope(k, namespace), name

    def _scope(self, k: ServedKind, namespace: str | None) -> str | None:
        if not k.info.namespaced:
            return None
        if not namespace:
            raise BadRequest(f"{k.info.resource} is namespaced: a namespace is required")
        return namespace

    def _existing(self, k: ServedKind, namespace: str | None, name: str) -> Obj:
        found = self._stores.get(k.store, {}).get((namespace or "", name))
        if found is None:
            raise self._not_found(k, name)
        return found

    def _check_not_taken(self, k: ServedKind, new: Obj) -> None:
        """AlreadyExists when an object of the kind has the new one's namespace and name; the API server's
        message says when that object is being deleted (held by finalizers)."""
        meta = new["metadata"]
        taken = self._stores.get(k.store, {}).get((meta.get("namespace") or "", meta["name"]))
        if taken is not None:
            deleting = "object is being deleted: " if taken["metadata"].get("deletionTimestamp") else ""
            raise AlreadyExists(f'{deleting}{k.info.resource} "{meta["name"]}" already exists',
                                details=self._details(k, meta["name"]))

    def _prepare_create(self, k: ServedKind, new: Obj, namespace: str | None, *, keep_managed: bool,
                        check_exists: bool = True) -> None:
        """Server-set fields on a new object; the body's own values for them are ignored."""
        new["apiVersion"], new["kind"] = k.info.api_version, k.info.kind
        meta = new.setdefault("metadata", {})
        for key in SYSTEM_META:
            if not (keep_managed and key == "managedFields"):
                meta.pop(key, None)
        meta.pop("selfLink", None)
        if namespace is None:
            meta.pop("namespace", None)
        else:
            meta["namespace"] = namespace
        if not meta.get("name"):
            prefix = meta.get("generateName") or ""
            if not prefix:
                raise self._invalid(k, "", [Cause("metadata.name", "Required value: name or generateName is required",
                                                  "FieldValueRequired")])
            meta["name"] = self._generate_name(k, namespace, str(prefix))
        if check_exists:
            self._check_not_taken(k, new)
        meta["uid"] = self._new_uid()
        meta["creationTimestamp"] = self._now()
        if k.has_generation:
            meta["generation"] = 1
        if k.info.status_subresource:
            new.pop("status", None)

    def _generate_name(self, k: ServedKind, namespace: str | None, prefix: str) -> str:
        taken = self._stores.get(k.store, {})
        while True:
            name = prefix[:58] + "".join(random.choices(_GENERATED_CHARS, k=5))
            if (namespace or "", name) not in taken:
                return name

    def _check_update_preconditions(self, k: ServedKind, body: Obj, old: Obj) -> None:
        """An update's preconditions: the body's uid, if any, is the stored one's; its resourceVersion, if any
        (and it must give one where the kind allows no unconditional update), is the stored one."""
        meta: Obj = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
        uid, stored_uid = meta.get("uid"), old["metadata"].get("uid")
        name = old["metadata"]["name"]
        if uid and uid != stored_uid:
            namespace = old["metadata"].get("namespace")
            key = "/".join(["/registry", *([k.info.group] if k.custom or k.info.kind == CRD_KIND else []),
                            k.info.plural, *([namespace] if namespace else []), name])
            raise Conflict(f'Operation cannot be fulfilled on {k.info.resource} "{name}": StorageError: invalid'
                           f" object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition"
                           f" failed: UID in precondition: {uid}, UID in object meta: {stored_uid}",
                           details=self._details(k, name))
        if k.needs_resource_version and not meta.get("resourceVersion"):
            raise self._unconditional(k, name)
        self._check_precondition(k, body, old)

    def _check_precondition(self, k: ServedKind, body: Obj, old: Obj) -> None:
        """A resourceVersion in the body must be the stored one (optimistic concurrency)."""
        meta: Obj = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
        given = meta.get("resourceVersion")
        if given and str(given) != old["metadata"]["resourceVersion"]:
            raise self._conflict(k, old["metadata"]["name"])

    def _update(self, k: ServedKind, old: Obj, new: Obj, field_manager: str | None, *,
                subresource: str | None, attributed: bool = False, stored: Obj | None = None,
                applied: bool = False) -> Obj:
        """Admit and store a changed object; a write that changes nothing stores nothing.

        ``stored``, when given, is the object in the store and ``old`` the one whose managedFields the
        bookkeeping continues from (a PUT that sent managedFields of its own). ``applied``: the result of a
        server-side apply, which is not decoded as a request body is (its nulls stay).
        """
        if stored is not None and stored["metadata"].get("managedFields") != old["metadata"].get("managedFields"):
            attributed = False
            new = ssa.record_update(old, new, field_manager or UNKNOWN_MANAGER, now=self._now(),
                                    subresource=subresource, list_map_keys=k.list_keys)
            return self._update(k, stored, new, field_manager, subresource=subresource, attributed=True)
        old = stored if stored is not None else old
        new["apiVersion"], new["kind"] = k.info.api_version, k.info.kind
        self._check_finalizers(k, old, new)
        if k.is_namespace:  # as the API server's namespace strategy: spec.finalizers and status are its own
            for key in ("spec", "status"):
                if key in old:
                    new[key] = json_copy(old[key])
        new = self._admit(k, new, old, status=subresource == "status", applied=applied)
        builtin.prepare_for_update(new, old)
        if k.has_generation and spec(new, k) != spec(old, k):
            new["metadata"]["generation"] = int(old["metadata"].get("generation") or 0) + 1
        if content(builtin.stored(new)) == content(old) and (
            not attributed or timeless(new) == timeless(old)
        ):  # only managedFields times changed: the API server keeps the old ones, a no-op (its timestamp transformer)
            return self._out(k, old)
        if not attributed and old["metadata"].get("managedFields"):
            # A scale write's entry carries no time: the API server converts it from the Scale's field set.
            new = ssa.record_update(old, new, field_manager or UNKNOWN_MANAGER,
                                    now=None if subresource == "scale" else self._now(),
                                    subresource=subresource, list_map_keys=k.list_keys)
        elif not attributed:
            new["metadata"].pop("managedFields", None)  # the API server does not start tracking on an update
        return self._commit(k, old, new)

    def _admit(self, k: ServedKind, new: Obj, old: Obj | None, *, status: bool = False, applied: bool = False) -> Obj:
        """Built-in checks, then the CRD's schema and CEL rules for the object's version."""
        if k.info.kind == CRD_KIND and k.info.group == "apiextensions.k8s.io":
            admitted = self._admit_crd(new, old)  # its own checks name its name's problems, with all the others
            self._validate_metadata(k, admitted, updating=old is not None)
            return admitted
        self._validate_metadata(k, new, updating=old is not None)
        if k.admission is not None:
            return k.admission.admit(int64_or_float(new), old, status=status, applied=applied)
        return builtin.admit(k.info.api_version, k.info.kind, new)

    def _admit_crd(self, crd: Obj, old: Obj | None) -> Obj:
        """Validate a CRD by compiling it (fields its type does not have are dropped, as the API server drops
        them), and fill the status the API server's controllers write."""
        refused = crd_decoding_error(crd, strict=False)
        if refused is not None:
            raise refused
        crd = drop_unknown(crd)
        if old is not None:
            self._check_crd_immutables(crd, old)
        compile_crd(crd)
        spec = crd["spec"]
        names = dict(spec["names"])
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
        storage = [v["name"] for v in spec["versions"] if v.get("storage")]
        stored = list(((old or {}).get("status") or {}).get("storedVersions") or [])
        conditions = ((old or {}).get("status") or {}).get("conditions") or [
            {"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": self._now()}
            for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                            ("Established", "InitialNamesAccepted", "the initial names have been accepted"))
        ]
        crd["status"] = {
            "acceptedNames": names,
            "conditions": conditions,
            "storedVersions": stored + [v for v in storage if v not in stored],
        }
        return crd

    def _check_crd_immutables(self, crd: Obj, old: Obj) -> None:
        """A CRD's group and plural never change, its scope and kind not once it is established (always, here)."""
        new_spec, old_spec = crd.get("spec") or {}, old.get("spec") or {}
        causes = []
        for path, new, before in (
            ("spec.scope", new_spec.get("scope"), old_spec.get("scope")),
            ("spec.names.kind", (new_spec.get("names") or {}).get("kind"), (old_spec.get("names") or {}).get("kind")),
            ("spec.group", new_spec.get("group"), old_spec.get("group")),
            ("spec.names.plural", (new_spec.get("names") or {}).get("plural"),
             (old_spec.get("names") or {}).get("plural")),
        ):
            if new != before:
                causes.append(Cause(path, f"Invalid value: {go_value(new)}: field is immutable"))
        if causes:
            raise invalid(CRD_INFO, str(crd["metadata"].get("name") or ""), causes)

    def _validate_metadata(self, k: ServedKind, obj: Obj, *, updating: bool) -> None:
        meta = obj["metadata"]
        name = str(meta.get("name") or "")
        causes: list[Cause] = []
        if k.is_namespace:
            if isinstance(meta.get("labels"), dict) or meta.get("labels") is None:
                meta["labels"] = {**(meta.get("labels") or {}), NAMESPACE_NAME_LABEL: name}
            causes += [Cause("metadata.name", f'Invalid value: "{name}": {problem}')
                       for problem in namespace_name_errors(name)]
        elif not is_subdomain(name):
            causes.append(Cause("metadata.name", f'Invalid value: "{name}": {SUBDOMAIN_MSG}'))
        labels = meta.get("labels") or {}
        if not isinstance(labels, dict):
            causes.append(Cause("metadata.labels", "Invalid value: must be a map of strings", "FieldValueTypeInvalid"))
            labels = {}
        for key, value in labels.items():
            for problem in label_key_errors(str(key), unit="bytes"):
                causes.append(Cause("metadata.labels", f'Invalid value: "{key}": {problem}'))
            if not isinstance(value, str):
                causes.append(Cause(f"metadata.labels.{key}", "Invalid value: must be a string",
                                    "FieldValueTypeInvalid"))
                continue
            for problem in label_value_errors(value, unit="bytes"):
                causes.append(Cause("metadata.labels", f'Invalid value: "{value}": {problem}'))
        if causes and updating and k.custom:
            causes = [c for c in causes for _ in range(3)]  # the custom resource strategy reports each three times
        if causes:
            raise self._invalid(k, name, causes)

    def _check_finalizers(self, k: ServedKind, old: Obj, new: Obj) -> None:
        """A deleting object accepts no new finalizer, as the API server enforces."""
        if not old["metadata"].get("deletionTimestamp"):
            return
        before = set(old["metadata"].get("finalizers") or [])
        added = [f for f in new["metadata"].get("finalizers") or [] if f not in before]
        if added:
            found = ", ".join(f'"{f}"' for f in added)
            cause = Cause("metadata.finalizers", "Forbidden: no new finalizers can be added if the object is being"
                          f" deleted, found new finalizers []string{{{found}}}", "FieldValueForbidden")
            raise self._invalid(k, old["metadata"]["name"], [cause] * metadata_repeats(k))

    def _delete(self, k: ServedKind, old: Obj) -> Obj | None:
        """Mark for deletion while finalizers remain (once); otherwise remove, then collect dependents."""
        meta = old["metadata"]
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return self._out(k, old)
            new = json_copy(old)
            new["metadata"]["deletionTimestamp"] = self._now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            # As the API server's BeforeDelete: marking an object deleted bumps its generation, if it has one.
            if meta.get("generation"):
                new["metadata"]["generation"] = int(meta["generation"]) + 1
            return self._commit(k, old, new)
        self._remove(k, old)
        return None

    def _commit(self, k: ServedKind, old: Obj | None, new: Obj, *, seeded: bool = False) -> Obj:
        """Store new under a fresh resourceVersion and log its event. The write that removes the
        last finalizer of a deleting object removes the object instead."""
        meta = new["metadata"]
        if old is not None and not seeded and meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(k, new)
            return self._out(k, new)
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        if not seeded:  # a seeded object is stored as given
            new = builtin.stored(new)  # also puts a built-in object's fields in its type's order, as answers have
            meta = new["metadata"]
        self._stores.setdefault(k.store, {})[(meta.get("namespace") or "", meta["name"])] = new
        self._log("ADDED" if old is None else "MODIFIED", k, new, old)
        if k.info.kind == CRD_KIND and k.info.group == "apiextensions.k8s.io":
            self._install_crd(new)
        return self._out(k, new)

    def _remove(self, k: ServedKind, obj: Obj) -> None:
        """Remove an object for good: DELETED event, its CRD's objects if it is one, its dependents."""
        meta = obj["metadata"]
        store = self._stores.get(k.store, {})
        key = (meta.get("namespace") or "", meta["name"])
        if store.get(key) is None:
            return
        del store[key]
        self._rv += 1
        gone = json_copy(obj)
        gone["metadata"]["resourceVersion"] = str(self._rv)
        self._log("DELETED", k, gone, None)
        if k.info.kind == CRD_KIND and k.info.group == "apiextensions.k8s.io":
            self._purge(self._uninstall_crd(meta["name"]))
        self._collect(str(meta.get("uid") or ""))

    def _purge(self, stores: set[tuple[str, str]]) -> None:
        """A deleted CRD takes its objects with it (the API server's customresourcecleanup)."""
        for store in stores:
            for obj in [o for _, o in sorted(self._stores.get(store, {}).items())]:
                self._remove(self._kind_of(store, obj), obj)

    def _collect(self, owner_uid: str) -> None:
        """Garbage collection: dependents of a vanished owner go once no live owner is left;
        a dependent with another live owner only loses the dangling reference."""
        if not owner_uid:
            return
        live = {str(o["metadata"].get("uid")) for store in self._stores.values() for o in store.values()}
        for store_key, store in list(self._stores.items()):
            for obj in [o for _, o in sorted(store.items())]:
                refs = obj["metadata"].get("ownerReferences") or []
                if not any(isinstance(r, dict) and r.get("uid") == owner_uid for r in refs):
                    continue
                if store.get((obj["metadata"].get("namespace") or "", obj["metadata"]["name"])) is not obj:
                    continue  # already collected through another path
                k = self._kind_of(store_key, obj)
                kept = [r for r in refs if isinstance(r, dict) and str(r.get("uid")) in live]
                if kept:
                    new = json_copy(obj)
                    new["metadata"]["ownerReferences"] = kept
                    self._commit(k, obj, new)
                else:
                    self._delete(k, obj)

    def _kind_of(self, store: tuple[str, str], obj: Obj) -> ServedKind:
        """The kind entry for a stored object, for writes the server makes on its own (GC)."""
        found = self._kinds.get((obj["apiVersion"], obj["kind"]))
        if found is not None:
            return found
        lower = store[1].lower()
        return ServedKind(ResourceInfo(obj["apiVersion"], obj["kind"], lower + "s",
                                       bool(obj["metadata"].get("namespace")), True, lower), custom=True)

    def _log(self, kind: str, k: ServedKind, obj: Obj, old: Obj | None) -> None:
        self._events.append(_Event(self._rv, kind, k.store, obj["metadata"].get("namespace") or None, obj, old))
        while len(self._events) > self._event_log_size:
            self._compacted = self._events.popleft().rv
        self._changed.notify_all()

    # -----------------------------------------------------------------------
    # Small helpers.

    def _now(self) -> str:
        return format_time(self._clock.now())

    def _out(self, k: ServedKind, obj: Obj) -> Obj:
        out = json_copy(obj)
        out["apiVersion"] = k.info.api_version
        return out

    def _details(self, k: ServedKind, name: str) -> Obj:
        return {"name": name, "group": k.info.group, "kind": k.info.plural}

    def _not_found(self, k: ServedKind, name: str) -> NotFound:
        return NotFound(f'{k.info.resource} "{name}" not found', details=self._details(k, name))

    def _unconditional(self, k: ServedKind, name: str) -> Invalid:
        """An update of a kind that needs a resourceVersion, without one."""
        cause = Cause("metadata.resourceVersion", "Invalid value: 0: must be specified for an update")
        return Invalid(f'{k.info.resource} "{name}" is invalid: {cause.field}: {cause.message}', causes=[cause],
                       details=self._details(k, name))

    def _conflict(self, k: ServedKind, name: str) -> Conflict:
        return Conflict(
            f'Operation cannot be fulfilled on {k.info.resource} "{name}": the object has been modified; '
            "please apply your changes to the latest version and try again",
            details=self._details(k, name),
        )

    def _invalid(self, k: ServedKind, name: str, causes: builtins.list[Cause]) -> Invalid:
        return invalid(k.info, name, causes)


def _conforms(cluster: MemoryCluster) -> Cluster:
    """Never called: mypy proves here that MemoryCluster satisfies the Cluster protocol."""
    return cluster
