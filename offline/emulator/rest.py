"""The Kubernetes REST API over one MemoryCluster: a request in, a reply or an event stream out.

No sockets here (``server`` does HTTP): this decides what each path and verb means, checks the
body against the URL as the API server does, and words every refusal as a Status document.
The cluster does the rest (admission, conflicts, finalizers, SSA), so the emulator and the
in-memory cluster cannot disagree.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import yaml

from engine.clock import Clock
from engine.cluster.api import (
    ApiError,
    BadRequest,
    Cause,
    Conflict,
    Invalid,
    MethodNotAllowed,
    NoSuchResource,
    NotFound,
    Obj,
    PatchType,
    ResourceInfo,
    UnsupportedMediaType,
)
from engine.cluster.patches import json_patch, merge_patch
from engine.cluster.selectors import FieldSelector, parse_fields
from offline.cluster import builtin
from offline.cluster.admission.warnings import collecting
from offline.cluster.memory import MemoryCluster
from offline.cluster.memory_objects import typed_patch_error
from offline.emulator import discovery, events, protobuf
from offline.emulator.printers import builtin_table, selector_text
from offline.emulator.routes import Document, Target, parse_route
from offline.emulator.table import to_table, wanted_table
from offline.emulator.watch import Alive, EventSource, WatchSpec, open_watch

MERGE = ("application/merge-patch+json", "application/strategic-merge-patch+json")
STRATEGIC = MERGE[1]
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
TRUE = ("true", "1")
FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


@dataclass(frozen=True)
class Request:
    """One HTTP request, as the server read it."""

    method: str
    path: str
    query: Mapping[str, str] = field(default_factory=dict)
    content_type: str = ""
    accept: str = ""
    body: bytes = b""
    user_agent: str = ""

    @property
    def field_manager(self) -> str | None:
        """The fieldManager parameter or, as the API server falls back, the User-Agent up to its first ``/``."""
        return self.query.get("fieldManager") or self.user_agent.split("/", 1)[0][:128] or None


@dataclass(frozen=True)
class Reply:
    """A complete answer: a JSON document, or plain text; warnings go out as ``Warning`` headers."""

    code: int
    body: Obj | str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stream:
    """A watch answer: events until the source ends or the client hangs up."""

    events: EventSource


def not_served() -> NotFound:
    return NoSuchResource()


def status_document(code: int, reason: str, message: str) -> Obj:
    """A failure Status for codes our errors do not name (401, 413)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class _YamlLoader(yaml.SafeLoader):
    """YAML as the API server reads it: timestamps stay strings."""


_YamlLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class Rest:
    """Answers requests against one cluster; ``clock`` dates the Age column of tables."""

    def __init__(self, cluster: MemoryCluster, *, clock: Clock) -> None:
        self.cluster = cluster
        self.clock = clock

    def handle(self, request: Request) -> Reply | Stream:
        """The answer to a request; every refusal is a Reply carrying a Status."""
        try:
            route = parse_route(request.path)
            if route is None:
                raise not_served()
            if isinstance(route, Document):
                if request.method != "GET":
                    raise MethodNotAllowed("the server does not allow this method on the requested resource")
                return Reply(200, self._document(route))
            return self._resource(request, route)
        except ApiError as err:
            return Reply(err.code, err.status())

    # -------------------------------------------------------------------
    # Discovery.

    def _document(self, route: Document) -> Obj | str:
        resources = self.cluster.resources()
        found: Obj | str | None
        if route.name == "version":
            found = dict(discovery.VERSION)
        elif route.name == "health":
            found = "ok"
        elif route.name == "root":
            groups = sorted({f"/apis/{i.api_version}" for i in resources if i.group})
            found = {"paths": ["/api", "/api/v1", "/apis", "/openapi/v3", "/version", "/healthz", "/readyz", *groups]}
        elif route.name == "api":
            found = discovery.api_versions()
        elif route.name == "apis":
            found = discovery.api_group_list(resources)
        elif route.name == "group":
            found = discovery.api_group(resources, route.arg)
        elif route.name == "resources":
            found = discovery.api_resource_list(resources, route.arg)
        elif route.name == "openapi":
            found = discovery.openapi_root(resources, self.cluster.schemas())
        else:
            found = discovery.openapi_group_version(resources, route.arg, self.cluster.schemas())
        if found is None:
            raise not_served()
        return found

    # -------------------------------------------------------------------
    # Resources.

    def _resource(self, request: Request, target: Target) -> Reply | Stream:
        method, query = request.method, request.query
        if "dryRun" in query or _delete_options_dry_run(request):
            return self._dry_run(request, target)
        info = self._resolve(target, request)
        body = _parse_body(request) if method in ("POST", "PUT", "PATCH", "DELETE") else None
        unknown = self._unknown_fields(request, info, body, target)
        told = tuple(f'unknown field "{path}"' for path in unknown)  # fieldValidation=Warn: each dropped field told
        with collecting() as admission_said:
            try:
                answer = self._dispatch(request, info, target, body)
            except ApiError as err:  # a refused write still tells its unknown fields, unless nothing was patched
                answer = Reply(err.code, err.status())
                if method == "PATCH" and isinstance(err, NotFound):
                    told = ()
        if (told or admission_said) and isinstance(answer, Reply):
            return replace(answer, warnings=(*told, *admission_said))
        return answer

    def _dry_run(self, request: Request, target: Target) -> Reply | Stream:
        """``dryRun=All``: the request carried out on a scratch copy of the cluster, so the answer is the
        real one (admission, conflicts, defaults) and nothing is stored or watched."""
        wanted = request.query.get("dryRun", "All")
        if wanted != "All":
            raise options_invalid(request.method, "dryRun", f'Unsupported value: ["{wanted}"]: supported values: "All"')
        query = {key: value for key, value in request.query.items() if key != "dryRun"}
        if _delete_options_dry_run(request):  # the rest of the DeleteOptions (preconditions) still holds
            options = {key: value for key, value in _parse_body(request).items() if key != "dryRun"}
            request = replace(request, content_type="application/json", body=json.dumps(options).encode())
        scratch = Rest(self.cluster.scratch(), clock=self.clock)
        answer = scratch._resource(replace(request, query=query), target)
        if isinstance(answer, Reply) and isinstance(answer.body, dict) and answer.code in (200, 201) and (
                answer.body.get("kind") != "Status"):
            answer = replace(answer, body=self._unstored(answer.body, target, request.method))
        return answer

    def _unstored(self, obj: Obj, target: Target, method: str) -> Obj:
        """A dry run's answer as the API server gives it: nothing was stored, so a new object has no
        resourceVersion and a changed one keeps the stored one."""
        meta = dict(obj.get("metadata") or {})
        live = None
        if target.name is not None or method != "POST":
            try:
                info = self._resolve(target, Request("GET", ""))
                live = self.cluster.get(info.api_version, info.kind, target.namespace,
                                        target.name or str(meta.get("name") or ""))
            except ApiError:
                live = None
        if live is None:
            meta.pop("resourceVersion", None)
        else:
            meta["resourceVersion"] = live["metadata"].get("resourceVersion")
        return {**obj, "metadata": meta}

    def _unknown_fields(self, request: Request, info: ResourceInfo, body: Any, target: Target) -> list[str]:
        """Fields of a write's body the kind's schema does not declare, under ``fieldValidation``: Strict
        (kubectl's default) refuses them with their paths, Warn (the API server's default) returns them
        to be sent as warnings, Ignore drops them silently."""
        mode = request.query.get("fieldValidation") or "Warn"
        if mode not in FIELD_VALIDATION and request.method in OPTIONS and request.method != "DELETE":
            raise options_invalid(request.method, "fieldValidation", f'Unsupported value: "{mode}": supported '
                                  'values: "", "Ignore", "Strict", "Warn"')
        media = request.content_type.partition(";")[0].strip().lower()
        if media == APPLY and request.method == "PATCH" and isinstance(body, dict):  # whatever the mode
            refused = typed_patch_error(body, info.api_version, info.kind, self.cluster.apply_problems(
                {**body, "apiVersion": info.api_version, "kind": info.kind}))
            if refused is not None:
                raise refused
        if mode == "Ignore" or request.method not in ("POST", "PUT", "PATCH") or media == APPLY:
            return []
        if media == JSON_PATCH:
            return self._json_patched_unknown(info, target, body, mode)
        if not isinstance(body, dict):
            return []
        if media in MERGE:
            body = _without_nulls(body)  # a null removes a field: it is not one the object will have
        if media == STRATEGIC:
            body = _without_directives(body)
        unknown = self.cluster.unknown_fields({**body, "apiVersion": info.api_version, "kind": info.kind})
        if unknown and mode == "Strict" and media in (MERGE[0], STRATEGIC) and request.method == "PATCH":
            live = self.cluster.get(info.api_version, info.kind, target.namespace, target.name or "")
            custom = builtin.kind_schema(info.api_version, info.kind) is None  # stored as JSON, every key sorted
            raise _strict_patch_refusal(json.loads(json.dumps(live, sort_keys=True)) if custom else live, body,
                                        unknown, media)
        if unknown and mode == "Strict":
            found = ", ".join(f'unknown field "{path}"' for path in unknown)
            raise BadRequest(f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
                             f"strict decoding error: {found}")
        return unknown

    def _json_patched_unknown(self, info: ResourceInfo, target: Target, body: Any, mode: str) -> list[str]:
        """A JSON patch's undeclared fields are those of the patched object (the API server decodes the result);
        Strict refuses them quoting the patched object's JSON."""
        if target.name is None or target.subresource is not None:
            return []
        try:
            live = self.cluster.get(info.api_version, info.kind, target.namespace, target.name)
            patched = json_patch(live, body)
        except ApiError:
            return []  # the write itself answers the error
        if not isinstance(patched, dict):
            return []
        unknown = self.cluster.unknown_fields({**patched, "apiVersion": info.api_version, "kind": info.kind})
        if unknown and mode == "Strict":
            errors = ", ".join(f'unknown field "{path}"' for path in unknown)
            quoted = json.dumps(_touched_by_operations(patched, body), separators=(",", ":"))
            detail = f"Invalid value: {json.dumps(quoted)}: strict decoding error: {errors}"
            raise Invalid(f' "" is invalid: patch: {detail}', causes=[Cause("patch", detail, "FieldValueInvalid")])
        return unknown

    def _dispatch(self, request: Request, info: ResourceInfo, target: Target, body: Any) -> Reply | Stream:
        method, query = request.method, request.query
        if events.is_core(info):
            return self._core_events(request, info, target, body)
        if target.subresource == "scale" and target.name is not None and (info.api_version, info.kind) in SCALED:
            return self._scale(request, info, target, body)
        if target.subresource is not None and (target.subresource != "status" or not info.status_subresource
                                               or target.name is None):
            raise not_served()
        if target.namespace and not info.namespaced:
            raise not_served()
        if info.namespaced and not target.namespace and (target.name or method == "POST"):
            raise not_served()
        if target.name is None:
            if method == "GET":
                return self._watch(request, info, target) if query.get("watch") in TRUE else self._list(
                    request, info, target)
            if method == "POST":
                return self._create(request, info, target, body)
            if method == "DELETE":
                return self._delete_collection(request, info, target)
        elif method == "GET":
            obj = self.cluster.get(info.api_version, info.kind, target.namespace, target.name)
            return Reply(200, self._view(request, info, [obj], obj["metadata"].get("resourceVersion")) or obj)
        elif method == "PUT":
            return self._update(request, info, target, body)
        elif method == "PATCH":
            return self._patch(request, info, target, body)
        elif method == "DELETE" and target.subresource is None:
            return self._delete(info, target, body)
        raise MethodNotAllowed("the server does not allow this method on the requested resource")

    def _resolve(self, target: Target, request: Request) -> ResourceInfo:
        """The served kind a path names; in a permissive cluster a write may name one not yet holding
        objects, by the kind in its body."""
        for info in self.cluster.resources():
            if info.api_version == target.api_version and info.plural == target.plural:
                return info
        try:
            body = _parse_body(request) if request.method in ("POST", "PATCH") else None
        except ApiError:
            body = None  # a body we cannot read names no kind: the path stays unknown
        kind_hint = body.get("kind") if isinstance(body, dict) else None
        if isinstance(kind_hint, str) and kind_hint and self.cluster.serves(target.api_version, kind_hint):
            info = self.cluster.resource_info(target.api_version, kind_hint)
            if info.plural == target.plural:
                return info
        raise not_served()

    def _view(self, request: Request, info: ResourceInfo, objects: list[Obj], rv: str | None) -> Obj | None:
        """The objects as a Table when the client asks for one, else None."""
        version = wanted_table(request.accept)
        if version is None:
            return None
        include = request.query.get("includeObject", "Metadata")
        printed = builtin_table(info.api_version, info.kind, objects, table_version=version, now=self.clock.now(),
                                resource_version=rv, include_object=include)
        if printed is not None:
            return printed
        return to_table(info, objects, api_version=version, now=self.clock.now(), resource_version=rv,
                        include_object=request.query.get("includeObject", "Metadata"))

    def _list(self, request: Request, info: ResourceInfo, target: Target) -> Reply:
        fields = field_selector(info, request.query.get("fieldSelector"))
        stored = self._stored(info)
        listed = self.cluster.list(stored.api_version, stored.kind, target.namespace,
                                   labels=request.query.get("labelSelector") or None)
        found = [events.to_core(obj) for obj in listed.items] if stored is not info else listed.items
        found = [obj for obj in found if fields.matches(obj)]
        table = self._view(request, info, found, listed.resource_version)
        if table is not None:
            return Reply(200, table)
        items = [list_item(info, obj) for obj in found]
        return Reply(200, {"kind": f"{info.kind}List", "apiVersion": info.api_version,
                           "metadata": list_metadata(info, listed.resource_version), "items": items})

    def _stored(self, info: ResourceInfo) -> ResourceInfo:
        """Where a kind's objects are kept: core v1 Events in the events.k8s.io/v1 store, others in their own."""
        return self.cluster.resource_info(*events.STORED) if events.is_core(info) else info

    def _core_events(self, request: Request, info: ResourceInfo, target: Target, body: Any) -> Reply | Stream:
        """Core v1 Events, a view of the events.k8s.io/v1 store: each object converted on its way in and out."""
        method, stored = request.method, self._stored(info)
        if method == "GET" and target.name is None:
            return self._watch(request, info, target) if request.query.get("watch") in TRUE else self._list(
                request, info, target)
        if method == "GET":
            assert target.name is not None
            obj = events.to_core(self.cluster.get(stored.api_version, stored.kind, target.namespace, target.name))
            return Reply(200, self._view(request, info, [obj], obj["metadata"].get("resourceVersion")) or obj)
        manager = request.field_manager
        if method == "POST" and target.name is None:
            created = self.cluster.create(events.to_stored(addressed(body, info, target)), field_manager=manager)
            return Reply(201, events.to_core(created))
        if method == "PUT" and target.subresource is None:
            updated = self.cluster.update(events.to_stored(addressed(body, info, target)), field_manager=manager)
            return Reply(200, events.to_core(updated))
        if method == "DELETE" and target.subresource is None:
            return self._delete(stored, target, body) if target.name else self._delete_collection(
                request, stored, target)
        if method == "PATCH" and target.name is not None and target.subresource is None:
            return self._patch_core_event(request, info, target, body)
        raise MethodNotAllowed("the server does not allow this method on the requested resource")

    def _patch_core_event(self, request: Request, info: ResourceInfo, target: Target, body: Any) -> Reply:
        """A merge, strategic merge (an Event has no merge-keyed lists, so the same) or JSON patch of the
        core view of a stored Event, written back as the events.k8s.io/v1 Event it is (as client-go's
        recorder patches a series' count and lastTimestamp)."""
        assert target.name is not None
        media = request.content_type.partition(";")[0].strip().lower()
        if media not in (*MERGE, JSON_PATCH):
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format - accepted media types include: {JSON_PATCH}, "
                f"{MERGE[0]}, {MERGE[1]}")
        stored = self._stored(info)
        live = events.to_core(self.cluster.get(stored.api_version, stored.kind, target.namespace, target.name))
        patched = json_patch(live, body) if media == JSON_PATCH else merge_patch(live, body)
        if not isinstance(patched, dict):
            raise BadRequest("the patch does not leave an object")
        manager = request.field_manager
        updated = self.cluster.update(events.to_stored(addressed(patched, info, target)), field_manager=manager)
        return Reply(200, events.to_core(updated))

    def _watch(self, request: Request, info: ResourceInfo, target: Target) -> Stream:
        query = request.query
        timeout: float | None = None
        if query.get("timeoutSeconds"):
            try:
                timeout = float(int(query["timeoutSeconds"]))
            except ValueError:
                raise BadRequest(f"invalid timeoutSeconds {query['timeoutSeconds']!r}") from None
        fields = field_selector(info, query.get("fieldSelector"))
        stored = self._stored(info)
        spec = WatchSpec(
            info=stored, namespace=target.namespace, resource_version=query.get("resourceVersion") or None,
            labels=query.get("labelSelector") or None, fields=fields if stored is info else FieldSelector(),
            timeout=timeout if timeout and timeout > 0 else None,
            bookmarks=query.get("allowWatchBookmarks") in TRUE,
            send_initial_events=query.get("sendInitialEvents") in TRUE,
        )
        source = open_watch(self.cluster, spec)
        if stored is not info:
            source = _core_event_stream(source, fields)
        if wanted_table(request.accept) is None:
            return Stream(source)

        def tables(alive: Alive) -> Iterator[Obj]:
            for event in source(alive):
                if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                    event = {"type": event["type"], "object": self._view(request, info, [event["object"]], None)}
                yield event

        return Stream(tables)

    def _create(self, request: Request, info: ResourceInfo, target: Target, body: Any) -> Reply:
        obj = addressed(body, info, target)
        return Reply(201, self.cluster.create(obj, field_manager=request.field_manager))

    def _update(self, request: Request, info: ResourceInfo, target: Target, body: Any) -> Reply:
        obj = addressed(body, info, target)
        manager = request.field_manager
        if target.subresource == "status":
            return Reply(200, self.cluster.update_status(obj, field_manager=manager))
        return Reply(200, self.cluster.update(obj, field_manager=manager))

    def _patch(self, request: Request, info: ResourceInfo, target: Target, body: Any) -> Reply:
        assert target.name is not None
        media = request.content_type.partition(";")[0].strip().lower()
        manager = request.field_manager
        force = request.query.get("force")
        status = target.subresource == "status"
        if media == APPLY:
            manager = request.query.get("fieldManager") or None  # no User-Agent fallback for apply
            if not manager:
                raise _patch_options_invalid("fieldManager", "Required value: is required for apply patch")
            obj = addressed(body, info, target)
            existed = self._exists(info, target)
            applied = self.cluster.apply(obj, field_manager=manager, force=force in TRUE, status=status)
            return Reply(200 if existed else 201, applied)
        if force:
            raise _patch_options_invalid("force", "Forbidden: may not be specified for non-apply patch")
        patch_type: PatchType | Literal["strategic"]
        if media == STRATEGIC:
            patch_type = "strategic"
        elif media in MERGE:
            patch_type = "merge"
        elif media == JSON_PATCH:
            patch_type = "json"
        else:
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format - accepted media types include: {JSON_PATCH}, "
                f"{MERGE[0]}, {APPLY}, {MERGE[1]}")
        return Reply(200, self.cluster.patch(info.api_version, info.kind, target.namespace, target.name, body,
                                             patch_type=patch_type, status=status, field_manager=manager))

    def _scale(self, request: Request, info: ResourceInfo, target: Target, body: Any) -> Reply:
        """A Deployment's ``/scale``: its replicas as an autoscaling/v1 Scale, read, replaced or patched."""
        assert target.name is not None
        current = scale_of(self.cluster.get(info.api_version, info.kind, target.namespace, target.name))
        if request.method == "GET":
            return Reply(200, current)
        if request.method == "PUT":
            wanted = body if isinstance(body, dict) else {}
        elif request.method == "PATCH":
            media = request.content_type.partition(";")[0].strip().lower()
            if media == JSON_PATCH:
                wanted = json_patch(current, body)
            elif media in MERGE:
                wanted = merge_patch(current, body)
            else:
                raise UnsupportedMediaType(
                    f"the body of the request was in an unknown format - accepted media types include: "
                    f"{JSON_PATCH}, {MERGE[0]}, {APPLY}, {MERGE[1]}")
        else:
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        meta: Obj = wanted["metadata"] if isinstance(wanted.get("metadata"), dict) else {}
        spec: Obj = wanted["spec"] if isinstance(wanted.get("spec"), dict) else {}
        replicas = spec.get("replicas")
        scaled = self.cluster.scale(info.api_version, info.kind, target.namespace, target.name, int(replicas or 0),
                                    field_manager=request.field_manager,
                                    resource_version=str(meta.get("resourceVersion") or "") or None)
        return Reply(200, scale_of(scaled))

    def _exists(self, info: ResourceInfo, target: Target) -> bool:
        assert target.name is not None
        try:
            self.cluster.get(info.api_version, info.kind, target.namespace, target.name)
        except NotFound:
            return False
        return True

    def _delete(self, info: ResourceInfo, target: Target, body: Any) -> Reply:
        assert target.name is not None
        live = self.cluster.get(info.api_version, info.kind, target.namespace, target.name)
        preconditions = body.get("preconditions") if isinstance(body, dict) else None
        if isinstance(preconditions, dict):
            for key, label, hint in (("uid", "UID", "deleted and then recreated"),
                                     ("resourceVersion", "ResourceVersion", "modified")):
                wanted, actual = preconditions.get(key), live["metadata"].get(key)
                if wanted and str(wanted) != str(actual):
                    raise Conflict(f'Operation cannot be fulfilled on {info.kind} "{target.name}": the {label} in the '
                                   f"precondition ({wanted}) does not match the {label} in record ({actual}). The "
                                   f"object might have been {hint}", details={"name": target.name,
                                                                             "group": info.group, "kind": info.kind})
        held = self.cluster.delete(info.api_version, info.kind, target.namespace, target.name)
        if held is not None:
            return Reply(200, held)
        return Reply(200, _success(info, target.name, str(live["metadata"].get("uid") or "")))

    def _delete_collection(self, request: Request, info: ResourceInfo, target: Target) -> Reply:
        listed = self.cluster.list(info.api_version, info.kind, target.namespace,
                                   labels=request.query.get("labelSelector") or None,
                                   fields=request.query.get("fieldSelector") or None)
        items = []
        for obj in listed.items:
            meta = obj["metadata"]
            try:
                held = self.cluster.delete(info.api_version, info.kind, meta.get("namespace"), meta["name"])
            except NotFound:
                continue
            items.append(held if held is not None else obj)
        return Reply(200, {"kind": f"{info.kind}List", "apiVersion": info.api_version,
                           "metadata": {"resourceVersion": listed.resource_version}, "items": items})


def list_metadata(info: ResourceInfo, resource_version: str) -> dict[str, Any]:
    """A list's metadata: a custom resource's list also says there is nothing to continue, as the API server's does."""
    if builtin.kind_schema(info.api_version, info.kind) is None:
        return {"continue": "", "resourceVersion": resource_version}
    return {"resourceVersion": resource_version}


FIELD_LABELS: dict[tuple[str, str], tuple[str, ...]] = {
    ("v1", "Secret"): ("type", "metadata.namespace", "metadata.name"),
    ("v1", "Namespace"): ("status.phase", "metadata.name"),
    ("v1", "Service"): ("metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"),
    events.CORE: events.CORE_FIELDS,
    events.STORED: events.STORED_FIELDS,
}
"""The kinds with field label conversions of their own, and the fields each selects by (Kubernetes'
``AddFieldLabelConversionsFor*``); every other kind selects by name and namespace."""


def field_selector(info: ResourceInfo, text: str | None) -> FieldSelector:
    """A list's or watch's field selector, checked against the fields the kind selects by."""
    own = FIELD_LABELS.get((info.api_version, info.kind))
    if own is None:  # a custom resource's refusal is worded as a kind with its own conversion words it
        return parse_fields(text or None, labelled=builtin.kind_schema(info.api_version, info.kind) is None)
    return parse_fields(text or None, own, labelled=True)


def _strict_patch_refusal(live: Obj, body: Any, unknown: list[str], media: str) -> Invalid:
    """A Strict patch whose result has undeclared fields, as the API server refuses it (422, field ``patch``):
    a strategic merge patch quoted as Go prints the decoded patch, a merge patch as the patched object's JSON
    (json-patch re-encodes the levels the patch touched, keys sorted; the others keep the stored order)."""
    errors = ", ".join(f'unknown field "{path}"' for path in unknown)
    quoted = _go_map(body) if media == STRATEGIC else json.dumps(
        _touched_sorted(merge_patch(live, body), body), separators=(",", ":"))
    detail = f"Invalid value: {json.dumps(quoted)}: strict decoding error: {errors}"
    return Invalid(f' "" is invalid: patch: {detail}', causes=[Cause("patch", detail, "FieldValueInvalid")])


def _touched_sorted(value: Any, patch: Any) -> Any:
    """value with the keys of every map the merge patch reaches sorted, the others as they are."""
    if not isinstance(value, dict) or not isinstance(patch, dict):
        return value
    return {key: _touched_sorted(value[key], patch.get(key)) for key in sorted(value)}


def _touched_by_operations(value: Any, operations: Any) -> Any:
    """value with the keys of the root and of every map a JSON patch operation's path goes through sorted (the
    levels json-patch re-encodes), the others as they are."""
    touched: set[tuple[str, ...]] = {()}
    for op in operations if isinstance(operations, list) else []:
        parts = str(op.get("path", "")).split("/")[1:] if isinstance(op, dict) else []
        touched |= {tuple(parts[:at]) for at in range(len(parts))}

    def walk(node: Any, path: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            keys = sorted(node) if path in touched else list(node)
            return {key: walk(node[key], (*path, key)) for key in keys}
        if isinstance(node, list):
            return [walk(item, (*path, str(at))) for at, item in enumerate(node)]
        return node

    return walk(value, ())


def _go_map(value: Any) -> str:
    """A decoded JSON value as Go's ``%+v`` prints it (``map[a:1 b:[x y]]``)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{_go_map(item)}" for key, item in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_map(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "<nil>" if value is None else str(value)


SCALED = {("apps/v1", "Deployment")}
"""Built-in kinds with a scale subresource."""


def scale_of(obj: Obj) -> Obj:
    """An object's autoscaling/v1 Scale: its identity, desired and observed replicas and its pod selector."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {key: meta[key] for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if key in meta},
            "spec": {"replicas": int(spec.get("replicas") or 0)},
            "status": {"replicas": int((obj.get("status") or {}).get("replicas") or 0),
                       "selector": selector_text(spec.get("selector"))}}


def list_item(info: ResourceInfo, obj: Obj) -> Obj:
    """An item of a list answer: a built-in kind's items carry no apiVersion and kind (the API server encodes its
    typed lists so), a custom resource's carry both."""
    if builtin.kind_schema(info.api_version, info.kind) is not None:
        return {key: value for key, value in obj.items() if key not in ("apiVersion", "kind")}
    return {"apiVersion": info.api_version, "kind": info.kind, **obj}


def _success(info: ResourceInfo, name: str, uid: str) -> Obj:
    details = {"name": name, "group": info.group, "kind": info.plural, "uid": uid}
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {key: value for key, value in details.items() if value}}


def _patch_options_invalid(field_name: str, message: str) -> Invalid:
    return options_invalid("PATCH", field_name, message)


OPTIONS = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions", "DELETE": "DeleteOptions"}


def options_invalid(method: str, field_name: str, message: str) -> Invalid:
    """A request option the API server refuses (422), named by the options kind of the verb."""
    kind = OPTIONS.get(method, "CreateOptions")
    reason = ("FieldValueRequired" if message.startswith("Required") else "FieldValueNotSupported"
              if message.startswith("Unsupported") else "FieldValueForbidden")
    return Invalid(f'{kind}.meta.k8s.io "" is invalid: {field_name}: {message}',
                   causes=[Cause(field_name, message, reason)], details={"group": "meta.k8s.io", "kind": kind})


def _parse_body(request: Request) -> Any:
    """The body as JSON (or YAML when the content type says so); None when empty."""
    if not request.body.strip():
        return None
    media = request.content_type.partition(";")[0].strip().lower()
    if media == protobuf.MEDIA_TYPE:
        return protobuf.decode(request.body)
    if "protobuf" in media or "cbor" in media:
        raise UnsupportedMediaType(f"the body of the request was in an unknown format: {media}")
    try:
        text = request.body.decode("utf-8")
        if "yaml" in media:
            return _json_or_yaml(text)
        return json.loads(text)
    except (UnicodeDecodeError, ValueError, yaml.YAMLError) as err:
        raise BadRequest(f"the request body could not be decoded: {err}") from None
    except RecursionError:
        raise BadRequest("the request body could not be decoded: it nests objects and lists too deeply") from None


def _json_or_yaml(text: str) -> Any:
    """A YAML body, read as JSON when it is JSON (what clients, client-go included, send as apply patches).

    JSON is YAML, but PyYAML reads YAML 1.1, where a number with an exponent and no dot or sign (``1e3``) is a
    string; in JSON, and to the API server, it is a number. Read as JSON it is also about 30 times cheaper."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            pass  # YAML's flow style, which JSON's parser does not read
    return yaml.load(text, Loader=_YamlLoader)


def _core_event_stream(source: EventSource, fields: FieldSelector) -> EventSource:
    """A watch of stored events.k8s.io/v1 Events as core v1 ones, filtered by a core field selector."""

    def converted(alive: Alive) -> Iterator[Obj]:
        for event in source(alive):
            obj = event.get("object")
            if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and isinstance(obj, dict):
                obj = events.to_core(obj)
                if not fields.matches(obj):
                    continue
                event = {**event, "object": obj}
            yield event

    return converted


def _delete_options_dry_run(request: Request) -> bool:
    """Whether a DELETE's DeleteOptions body asks for a dry run (kubectl delete --dry-run=server puts it there)."""
    if request.method != "DELETE" or b"dryRun" not in request.body:
        return False
    try:
        options = _parse_body(request)
    except ApiError:
        return False
    wanted = options.get("dryRun") if isinstance(options, dict) else None
    if isinstance(wanted, list) and wanted and wanted != ["All"]:
        raise options_invalid("DELETE", "dryRun", f'Unsupported value: {json.dumps(wanted, separators=(",", ":"))}: '
                              'supported values: "All"')
    return bool(wanted)


def _without_nulls(value: Any) -> Any:
    """A merge patch without the fields it removes (set to null)."""
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    return value


def _without_directives(value: Any) -> Any:
    """A strategic merge patch without its directives (``$patch``, ``$setElementOrder/...``, ``$retainKeys``):
    what remains are the fields the patched object will have."""
    if isinstance(value, dict):
        return {key: _without_directives(item) for key, item in value.items() if not key.startswith("$")}
    if isinstance(value, list):
        return [_without_directives(item) for item in value]
    return value


def addressed(body: Any, info: ResourceInfo, target: Target) -> Obj:
    """The body as an object of the URL's kind, in the URL's namespace and under its name, or
    BadRequest where they disagree (as the API server checks)."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    obj: Obj = dict(body)
    kind = obj.get("kind") or info.kind
    if kind != info.kind:
        raise BadRequest(f"the kind of the object ({kind}) does not match the kind on the URL ({info.kind})")
    api_version = obj.get("apiVersion") or info.api_version
    if not isinstance(api_version, str) or api_version.rpartition("/")[0] != info.group:
        raise BadRequest(f"the API version of the object ({api_version}) does not match the API group on the URL"
                         f" ({info.group or 'core'})")
    obj["kind"], obj["apiVersion"] = info.kind, info.api_version
    meta = obj.get("metadata") if obj.get("metadata") is not None else {}
    if not isinstance(meta, dict):
        raise BadRequest("metadata must be a JSON object")
    meta = obj["metadata"] = dict(meta)
    if info.namespaced:
        if meta.get("namespace") and meta["namespace"] != target.namespace:
            raise BadRequest("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = target.namespace
    else:
        meta.pop("namespace", None)
    if target.name is not None:
        if meta.get("name") and meta["name"] != target.name:
            raise BadRequest(f"the name of the object ({meta['name']}) does not match the name on the URL"
                             f" ({target.name})")
        meta["name"] = target.name
    return obj

