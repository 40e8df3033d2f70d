"""The third leg of the differential test: a MemoryCluster driven through its own interface (create, get, list,
update, patch, apply, delete, watch), each request of a case mapped onto the call that means the same, the
result shaped as the API server would send it. Requests with no counterpart (tables, dry-run, field validation,
field-selected watches, DeleteOptions) answer ``UNMAPPED`` and are compared on the HTTP legs only.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import yaml

from engine.cluster.api import ApiError, NotFound, ResourceInfo
from engine.cluster.patches import json_patch, merge_patch
from offline.cluster.admission.warnings import collecting
from offline.cluster.memory import MemoryCluster
from offline.emulator.rest import SCALED, addressed, list_item, list_metadata, scale_of
from offline.emulator.routes import Target, parse_route
from tests.differential.harness import (
    APPLY,
    COMPACT,
    JSON,
    JSON_PATCH,
    MERGE,
    STRATEGIC,
    UNMAPPED,
    USER_AGENT,
    Answer,
    Call,
    Obj,
)

_PATCH_TYPES = {MERGE: "merge", JSON_PATCH: "json", STRATEGIC: "strategic"}
_UNMAPPED_QUERY = {"propagationPolicy", "gracePeriodSeconds", "sendInitialEvents", "resourceVersionMatch", "limit",
                   "continue"}
"""Parameters the interface has no counterpart for."""


class MemoryLeg:
    """A leg answering through ``MemoryCluster``'s methods rather than HTTP. It has no warnings to give: its
    answers are compared without them. Fields validation is the HTTP layer's: a write it would refuse for
    undeclared fields (Strict, or any server-side apply of a built-in kind) is not made here."""

    warns = False

    def __init__(self, cluster: MemoryCluster, name: str = "memory") -> None:
        self.name = name
        self.cluster = cluster

    def close(self) -> None:
        pass

    def send(self, request: Call) -> Answer:
        if request.method == COMPACT:
            self.cluster.compact(int((request.body or {}).get("revision") or 0) or None)
            return Answer(0, "compacted")
        answer = self._answer(request)
        if answer is UNMAPPED and request.is_watch and request.sentinel is not None:
            self._make_sentinel(request)  # the HTTP legs make it whether or not the watch is compared here
        return answer

    def _make_sentinel(self, request: Call) -> None:
        route = parse_route(request.path)
        info = self._info(route) if isinstance(route, Target) else None
        if info is not None and isinstance(route, Target) and request.sentinel is not None:
            self.cluster.create(_addressed(request.sentinel, info, route), field_manager=USER_AGENT)

    def _answer(self, request: Call) -> Answer:
        if "Table" in request.accept and request.method == "GET" and not request.is_watch:
            plain = self._answer(replace(request, accept=JSON))  # the same read, for the steps that refer to it
            return replace(plain, compared=False) if plain is not UNMAPPED else plain
        route = parse_route(request.path)
        query = dict(request.query)
        if (not isinstance(route, Target) or "Table" in request.accept or set(query) & _UNMAPPED_QUERY
                or route.subresource not in (None, "status", "scale")):
            return UNMAPPED
        info = self._info(route)
        if info is None or query.get("fieldValidation") not in (None, "", "Ignore", "Warn", "Strict"):
            return UNMAPPED
        if "dryRun" in query:
            return self._dry_run(request, route, query)
        told = self._told(request, info, route)
        with collecting() as said:
            try:
                answer = self._send(request, route, info, query)
            except ApiError as err:
                answer = Answer(err.code, err.status())
                if request.method == "PATCH" and isinstance(err, NotFound):
                    told = ()  # nothing was patched: no field was met
        if answer is UNMAPPED or not (told or said):
            return answer
        return Answer(answer.code, answer.body, (*told, *said), answer.events)

    def _dry_run(self, request: Call, route: Target, query: dict[str, str]) -> Answer:
        """``dryRun=All`` through the interface: the write on ``scratch()``, answered as nothing was stored."""
        if query["dryRun"] != "All":
            return UNMAPPED
        plain = replace(request, query=tuple((key, value) for key, value in request.query if key != "dryRun"))
        answer = MemoryLeg(self.cluster.scratch(), self.name).send(plain)
        body = answer.body
        if answer is UNMAPPED or answer.code not in (200, 201) or not isinstance(body, dict) or (
                body.get("kind") == "Status"):
            return answer
        meta = dict(body.get("metadata") or {})
        info = self._info(route)
        try:
            assert info is not None
            live = self.cluster.get(info.api_version, info.kind, route.namespace, str(meta.get("name") or ""))
            meta["resourceVersion"] = live["metadata"]["resourceVersion"]
        except (ApiError, AssertionError):
            meta.pop("resourceVersion", None)
        return Answer(answer.code, {**body, "metadata": meta}, answer.warnings)

    def _info(self, route: Target) -> ResourceInfo | None:
        for info in self.cluster.resources():
            if info.api_version == route.api_version and info.plural == route.plural:
                return info
        return None

    def _send(self, request: Call, route: Target, info: ResourceInfo, query: dict[str, str]) -> Answer:
        method, manager = request.method, query.get("fieldManager") or USER_AGENT
        status = route.subresource == "status"
        body = _body(request)
        if route.subresource == "scale":
            return self._scale(request, route, info, body, manager)
        if method in ("POST", "PUT", "PATCH") and (isinstance(body, dict) or request.content_type == JSON_PATCH):
            strict = query.get("fieldValidation") == "Strict" or request.content_type == APPLY
            result = body
            if strict and request.content_type == JSON_PATCH and route.name is not None:
                try:
                    result = json_patch(self.cluster.get(info.api_version, info.kind, route.namespace, route.name),
                                        body)
                except ApiError:
                    result = None
            if strict and isinstance(result, dict) and self.cluster.unknown_fields(
                    {**result, "apiVersion": info.api_version, "kind": info.kind}):
                return UNMAPPED
        if route.name is None:
            if method == "POST" and not status:
                return Answer(201, self.cluster.create(_addressed(body, info, route), field_manager=manager))
            if method == "GET" and request.is_watch:
                return self._watch(request, route, info, query)
            if method == "GET":
                listed = self.cluster.list(info.api_version, info.kind, route.namespace,
                                           labels=query.get("labelSelector") or None,
                                           fields=query.get("fieldSelector") or None)
                items = [list_item(info, obj) for obj in listed.items]
                return Answer(200, {"kind": f"{info.kind}List", "apiVersion": info.api_version,
                                    "metadata": list_metadata(info, listed.resource_version), "items": items})
            return UNMAPPED
        if method == "GET" and not status:
            return Answer(200, self.cluster.get(info.api_version, info.kind, route.namespace, route.name))
        if method == "PUT":
            obj = _addressed(body, info, route)
            if status:
                return Answer(200, self.cluster.update_status(obj, field_manager=manager))
            return Answer(200, self.cluster.update(obj, field_manager=manager))
        if method == "PATCH" and request.content_type == APPLY:
            if not query.get("fieldManager"):
                return UNMAPPED
            existed = self._exists(info, route)
            applied = self.cluster.apply(_addressed(body, info, route), field_manager=manager,
                                         force=query.get("force") in ("true", "1"), status=status)
            return Answer(200 if existed else 201, applied)
        if method == "PATCH" and request.content_type in _PATCH_TYPES and "force" not in query:
            patch_type: Any = _PATCH_TYPES[request.content_type]
            return Answer(200, self.cluster.patch(info.api_version, info.kind, route.namespace, route.name, body,
                                                  patch_type=patch_type, status=status, field_manager=manager))
        if method == "DELETE" and not status and body is None:
            live = self.cluster.get(info.api_version, info.kind, route.namespace, route.name)
            held = self.cluster.delete(info.api_version, info.kind, route.namespace, route.name)
            if held is not None:
                return Answer(200, held)
            details = {"name": route.name, "group": info.group, "kind": info.plural, "uid": live["metadata"]["uid"]}
            return Answer(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                "details": {key: value for key, value in details.items() if value}})
        return UNMAPPED

    def _told(self, request: Call, info: ResourceInfo, route: Target) -> tuple[str, ...]:
        """What the API server's default field validation (Warn) tells of a write's unknown fields (a merge patch's
        nulls remove fields: none the object will have)."""
        if request.method not in ("POST", "PUT") and request.content_type != MERGE:
            return ()
        body = _body(request)
        body = _without_nulls(body) if request.content_type == MERGE else body
        if not isinstance(body, dict):
            return ()
        addressed = {**body, "apiVersion": info.api_version, "kind": info.kind}
        return tuple(f'unknown field "{path}"' for path in self.cluster.unknown_fields(addressed))

    def _scale(self, request: Call, route: Target, info: ResourceInfo, body: Any, manager: str) -> Answer:
        """``/scale`` through the interface: the Scale read from the object, replicas written with ``scale``."""
        if (info.api_version, info.kind) not in SCALED or route.name is None:
            return UNMAPPED
        current = scale_of(self.cluster.get(info.api_version, info.kind, route.namespace, route.name))
        if request.method == "GET":
            return Answer(200, current)
        if request.method == "PUT" and isinstance(body, dict):
            wanted = body
        elif request.method == "PATCH" and request.content_type == MERGE and isinstance(body, dict):
            wanted = merge_patch(current, body)
        elif request.method == "PATCH" and request.content_type == JSON_PATCH:
            wanted = json_patch(current, body)
        else:
            return UNMAPPED
        spec, meta = wanted.get("spec") or {}, wanted.get("metadata") or {}
        scaled = self.cluster.scale(info.api_version, info.kind, route.namespace, route.name,
                                    int(spec.get("replicas") or 0), field_manager=manager,
                                    resource_version=str(meta.get("resourceVersion") or "") or None)
        return Answer(200, scale_of(scaled))

    def _exists(self, info: ResourceInfo, route: Target) -> bool:
        assert route.name is not None
        try:
            self.cluster.get(info.api_version, info.kind, route.namespace, route.name)
        except NotFound:
            return False
        return True

    def _watch(self, request: Call, route: Target, info: ResourceInfo, query: dict[str, str]) -> Answer:
        if query.get("fieldSelector"):
            return UNMAPPED
        try:
            events = self.cluster.watch(info.api_version, info.kind, route.namespace,
                                        resource_version=query.get("resourceVersion") or None,
                                        labels=query.get("labelSelector") or None, timeout=0,
                                        bookmarks=query.get("allowWatchBookmarks") in ("true", "1"))
        except ApiError as err:
            if err.code == 410:
                return Answer(200, None, (), [{"type": "ERROR", "object": err.status()}])
            raise
        if request.sentinel is not None:
            self.cluster.create(_addressed(request.sentinel, info, route), field_manager=USER_AGENT)
        seen: list[Obj] = []
        for event in events:
            obj = event["object"]
            if request.sentinel is not None and obj["metadata"].get("name") == request.sentinel["metadata"]["name"]:
                break
            seen.append({"type": event["type"], "object": {"kind": info.kind, **obj}
                         if event["type"] != "BOOKMARK" else obj})
        return Answer(200, None, (), seen)


def _body(request: Call) -> Any:
    if request.body is None:
        return None
    if isinstance(request.body, str):
        return yaml.safe_load(request.body) if request.content_type == APPLY else json.loads(request.body)
    return request.body


def _without_nulls(body: Any) -> Any:
    """A merge patch's null removes a field: it is none the object will have."""
    if isinstance(body, dict):
        return {key: _without_nulls(value) for key, value in body.items() if value is not None}
    return body


def _addressed(body: Any, info: ResourceInfo, route: Target) -> Obj:
    """The body as the HTTP layer hands it on (kind, apiVersion, namespace and name checked against the URL and
    filled from it): the same function, so a mismatch is refused alike."""
    return addressed(body, info, route)


__all__ = ["JSON", "MemoryLeg"]
