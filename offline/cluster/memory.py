"""An in-memory Kubernetes API: one store per cluster, with the semantics the engine relies on.

Tests, scenarios and the HTTP emulator run the engine against this instead of a real API server, so it gets
right what a naive dict store gets wrong: resourceVersion and conflicts, generation, the status subresource,
finalizers, ownerReference garbage collection, Server-Side Apply, CRD admission, built-in kinds typed as their
Go types, no-op writes, and watch from a resourceVersion. This module is the store and the write path, under one
lock; the kinds it serves (``memory_kinds``), admission (``memory_admit``), what writes do to an object's fields
(``memory_objects``) and the event log its watches read (``memory_events``) are modules of their own.

Simplified on purpose: no namespace lifecycle, no version conversion, no deletecollection, no paging; garbage
collection and a CRD's (un)serving happen in the write itself, where a real server's controllers act moments
later. The contract suite (tests/cluster/contract) holds the rest to a real API server.
"""
from __future__ import annotations

import builtins
import random
import threading
import uuid
from collections.abc import Callable, Collection, Iterator
from typing import Any, Literal

from engine.clock import Clock, format_time
from engine.cluster import ssa
from engine.cluster.api import (
    AlreadyExists,
    BadRequest,
    Cause,
    Cluster,
    Invalid,
    LabelSelector,
    NoSuchResource,
    NotFound,
    Obj,
    ObjectList,
    PatchType,
    ResourceInfo,
    ServerError,
    WatchEvent,
)
from engine.cluster.patches import Unexplained, json_copy
from engine.cluster.readonly import handed_out
from engine.cluster.selectors import (
    parse_fields,
    parse_labels,
)
from offline.cluster import builtin
from offline.cluster.crd_decode import decode as decode_crd
from offline.cluster.limits import check_depth
from offline.cluster.memory_admit import (
    admit,
    admit_crd,
    check_finalizers,
    check_precondition,
    check_update_preconditions,
)
from offline.cluster.memory_events import Event, EventLog
from offline.cluster.memory_kinds import KindTable
from offline.cluster.memory_objects import (
    SYSTEM_META,
    content,
    given_managed_fields,
    keep_server_fields,
    metadata_repeats,
    patched_body,
    spec,
    take_managed_fields,
    take_status,
    timeless,
    typed_patch_error,
)
from offline.cluster.served_kinds import (
    CRD_KIND,
    ServedKind,
    error_details,
    invalid,
    not_found,
    unconditional,
)

UNKNOWN_MANAGER = "unknown"
"""The field manager of a non-apply write whose caller names none."""

_GENERATED_CHARS = "bcdfghjklmnpqrstvwxz2456789"


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
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._rv = 0
        self._kinds = KindTable(permissive=permissive)
        self._stores: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {}
        self._events = EventLog(self._changed, event_log_size)

    # -----------------------------------------------------------------------
    # Discovery.

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        with self._lock:
            return self._kinds.lookup(api_version, kind, namespaced=True).info

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
            found = {key: k.info for key, k in self._kinds.served()}
            if self._kinds.permissive:
                owned = {k.store for _, k in self._kinds.served()}
                for store_key, store in self._stores.items():
                    if store and store_key not in owned:
                        obj = next(iter(store.values()))
                        found.setdefault((obj["apiVersion"], obj["kind"]), self._kinds.of_stored(store_key, obj).info)
            return [info for key, info in sorted(found.items()) if key not in self._kinds.unserved]

    def unserve(self, api_version: str, kind: str) -> None:
        """From now on the kind answers NotFound to every call; its objects stay stored."""
        with self._lock:
            self._kinds.unserved.add((api_version, kind))

    def serve(self, api_version: str, kind: str) -> None:
        """Undo ``unserve``."""
        with self._lock:
            self._kinds.unserved.discard((api_version, kind))

    def schemas(self) -> dict[tuple[str, str], Obj]:
        """The openAPIV3Schema of every served kind that has one (CRD versions), by (apiVersion, kind)."""
        with self._lock:
            return {key: json_copy(k.admission.schema) for key, k in self._kinds.served()
                    if k.admission is not None and key not in self._kinds.unserved}

    def apply_problems(self, obj: Obj) -> builtins.list[str]:
        """What typing an apply configuration of the object's kind finds (undeclared fields, repeated set or
        map-list entries), in structured-merge-diff's words; an apply with any is refused (``typed_patch_error``)."""
        with self._lock:
            k = self._kinds.lookup(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""), namespaced=True)
        if k.admission is not None:
            return k.admission.apply_problems(obj)
        return [f".{path}: field not declared in schema" for path in self.unknown_fields(obj)]

    def unknown_fields(self, obj: Obj) -> builtins.list[str]:
        """The fields of a write's body that its kind's schema does not declare (``spec.rotaton``),
        which admission would prune; [] for kinds without a schema (built-in and permissive kinds)."""
        with self._lock:
            k = self._kinds.lookup(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""), namespaced=True)
        if k.info.kind == CRD_KIND and k.info.group == "apiextensions.k8s.io":
            return decode_crd(obj).unknown
        if k.admission is not None:
            return k.admission.unknown_fields(obj)
        return builtin.unknown_fields(obj) or []

    def compact(self, revision: int | None = None) -> None:
        """Forget the events up to ``revision`` (default: all so far), as etcd's compaction does: a watch from an
        older resourceVersion is Gone."""
        with self._lock:
            self._events.compact(self._rv if revision is None else min(revision, self._rv))

    def scratch(self) -> MemoryCluster:
        """A copy to try a write on (server-side dry run): the same kinds and objects, the same next
        resourceVersion, no watchers and no event log. Stored objects are shared: no write changes one
        in place, each stores a new object."""
        with self._lock:
            copy = MemoryCluster(self.name, clock=self._clock, permissive=self._kinds.permissive,
                                 event_log_size=self._events.size, uids=self._new_uid)
            copy._rv = copy._events.compacted = self._rv
            copy._kinds = self._kinds.copy()
            copy._stores = {key: dict(store) for key, store in self._stores.items()}
            return copy

    # -----------------------------------------------------------------------
    # Reads.

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, *, live: bool = False,
            carries: Collection[str] = ()) -> Obj:
        """The stored object; live and carries are ignored: every read here is live."""
        with self._lock:
            k = self._kinds.lookup(api_version, kind, namespaced=bool(namespace))
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
            k = self._kinds.lookup(api_version, kind, namespaced=bool(namespace))
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
            new = admit(k, new, None, now=self._now())
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
            check_update_preconditions(k, obj, old)
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
                raise NoSuchResource()
            old = self._existing(k, namespace, name)
            check_update_preconditions(k, obj, old)
            new = json_copy(old)
            take_status(new, obj)
            return self._update(k, old, new, field_manager, subresource="status")

    def scale(self, api_version: str, kind: str, namespace: str | None, name: str, replicas: int, *,
              field_manager: str | None = None, resource_version: str | None = None) -> Obj:
        """Set ``spec.replicas`` through the scale subresource (recorded as a ``scale`` write, as the API server
        records it); ``resource_version``, when given, must be the stored one."""
        with self._lock:
            k = self._kinds.lookup(api_version, kind, namespaced=bool(namespace))
            old = self._existing(k, self._scope(k, namespace), name)
            check_precondition(k, {"metadata": {"resourceVersion": resource_version}}, old)
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
            k = self._kinds.lookup(api_version, kind, namespaced=bool(namespace))
            if status and not k.info.status_subresource:
                raise NoSuchResource()
            namespace = self._scope(k, namespace)
            old = self._existing(k, namespace, name)
            patched = patched_body(k, old, patch, patch_type)
            if not isinstance(patched, dict):
                raise Invalid("the patched object is not a JSON object")
            check_precondition(k, patched, old)
            meta: Obj = patched["metadata"] if isinstance(patched.get("metadata"), dict) else {}
            if k.needs_resource_version and not meta.get("resourceVersion"):
                raise unconditional(k, name)
            if meta.get("uid") and meta["uid"] != old["metadata"].get("uid"):
                cause = Cause("metadata.uid", f'Invalid value: "{meta["uid"]}": field is immutable')
                raise invalid(k.info, name, [cause] * metadata_repeats(k))
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
                raise NoSuchResource()
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
                    raise not_found(k, name)
                if k.info.status_subresource:
                    applied.pop("status", None)
                new = ssa.apply_patch(None, applied, field_manager, force=force, now=self._now(),
                                      list_map_keys=k.list_keys)
                self._prepare_create(k, new, namespace, keep_managed=True)
                new = admit(k, new, None, now=self._now(), applied=True)
                builtin.prepare_for_create(new)
                return self._commit(k, None, new)
            check_precondition(k, applied, live)
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
            k = self._kinds.lookup(api_version, kind, namespaced=bool(namespace))
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
                new = admit_crd(new, None, now=self._now())
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
            k = self._kinds.lookup(api_version, kind, namespaced=bool(namespace))
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
                self._events.check_not_compacted(cursor)
        return self._events.stream(k, scope, selector, cursor, initial, timeout=timeout, bookmarks=bookmarks,
                                   view=self._out, revision=lambda: self._rv)

    # -----------------------------------------------------------------------
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
        k = self._kinds.lookup(obj["apiVersion"], obj["kind"], namespaced=bool(namespace))
        name = meta.get("name") or ""
        if need_name and not name:
            raise invalid(k.info, "", [Cause("metadata.name", "Required value: name is required",
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
            raise not_found(k, name)
        return found

    def _check_not_taken(self, k: ServedKind, new: Obj) -> None:
        """AlreadyExists when an object of the kind has the new one's namespace and name; the API server's
        message says when that object is being deleted (held by finalizers)."""
        meta = new["metadata"]
        taken = self._stores.get(k.store, {}).get((meta.get("namespace") or "", meta["name"]))
        if taken is not None:
            deleting = "object is being deleted: " if taken["metadata"].get("deletionTimestamp") else ""
            raise AlreadyExists(f'{deleting}{k.info.resource} "{meta["name"]}" already exists',
                                details=error_details(k, meta["name"]))

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
                raise invalid(k.info, "", [Cause("metadata.name", "Required value: name or generateName is required",
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
        check_finalizers(k, old, new)
        if k.is_namespace:  # as the API server's namespace strategy: spec.finalizers and status are its own
            for key in ("spec", "status"):
                if key in old:
                    new[key] = json_copy(old[key])
        new = admit(k, new, old, now=self._now(), status=subresource == "status", applied=applied)
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
            self._kinds.install(new)
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
            self._purge(self._kinds.uninstall(meta["name"]))
        self._collect(str(meta.get("uid") or ""))

    def _purge(self, stores: set[tuple[str, str]]) -> None:
        """A deleted CRD takes its objects with it (the API server's customresourcecleanup)."""
        for store in stores:
            for obj in [o for _, o in sorted(self._stores.get(store, {}).items())]:
                self._remove(self._kinds.of_stored(store, obj), obj)

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
                k = self._kinds.of_stored(store_key, obj)
                kept = [r for r in refs if isinstance(r, dict) and str(r.get("uid")) in live]
                if kept:
                    new = json_copy(obj)
                    new["metadata"]["ownerReferences"] = kept
                    self._commit(k, obj, new)
                else:
                    self._delete(k, obj)

    def _log(self, kind: str, k: ServedKind, obj: Obj, old: Obj | None) -> None:
        self._events.record(Event(self._rv, kind, k.store, obj["metadata"].get("namespace") or None, obj, old))

    # -----------------------------------------------------------------------
    # Small helpers.

    def _now(self) -> str:
        return format_time(self._clock.now())

    def _out(self, k: ServedKind, obj: Obj) -> Obj:
        out = json_copy(obj)
        out["apiVersion"] = k.info.api_version
        return out


def _conforms(cluster: MemoryCluster) -> Cluster:
    """Never called: mypy proves here that MemoryCluster satisfies the Cluster protocol."""
    return cluster
