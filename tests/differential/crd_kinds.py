"""The custom kinds the CRD-admission differential cases write, installed once per session on every leg, the
runners that send those cases, and the differences of custom-resource admission kept on purpose.

``Widget`` exercises what a CRD's schema does to a write: defaults (nested, in map-list items), pruning,
preserved and embedded fields, int-or-string, nullable fields, bounds, enums, patterns, formats, set and map
lists, CEL rules with messages, message expressions, reasons and field paths, transition rules on ``oldSelf``,
a status subresource, printer columns. ``Ratchet`` has two versions of one stored kind, ``v1`` loose and ``v2``
strict (a rule on its name as well), so an object written through ``v1`` can be updated through ``v2``: validation
ratcheting, and what no ratcheting keeps.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from tests.differential.harness import APPLY, MERGE, Call, Case, Kept, Leg, Runner, call
from tests.differential.kept import KEPT

Obj = dict[str, Any]

GROUP = "crd.diff.example.com"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = f"/apis/{GROUP}/v1/namespaces/{{ns}}/widgets"
RATCHETS_V1 = f"/apis/{GROUP}/v1/namespaces/{{ns}}/ratchets"
RATCHETS_V2 = f"/apis/{GROUP}/v2/namespaces/{{ns}}/ratchets"
INSTALL_PATIENCE = 60.0
"""Seconds the real server has to serve a created CRD's kinds."""

_PORT = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string", "maxLength": 8}, "port": {"type": "integer", "default": 80},
    "protocol": {"type": "string", "default": "TCP", "enum": ["TCP", "UDP"]}},
    "x-kubernetes-validations": [
        {"rule": "self.port > 0", "message": "port must be positive"},
        {"rule": "self.name != 'fixed' || self.port == oldSelf.port", "message": "the fixed port stays"}]}

WIDGET_SPEC: Obj = {
    "type": "object", "required": ["size"],
    "x-kubernetes-validations": [
        {"rule": "self.size <= self.max", "message": "size above max", "fieldPath": ".size"},
        {"rule": "self.mode != 'locked' || self.size == 0", "reason": "FieldValueForbidden",
         "messageExpression": "'a ' + self.mode + ' widget has size 0'"},
    ],
    "properties": {
        "size": {"type": "integer", "minimum": 0},
        "max": {"type": "integer", "default": 10, "maximum": 100},
        "mode": {"type": "string", "enum": ["fast", "slow", "locked"], "default": "fast"},
        "name": {"type": "string", "maxLength": 12, "pattern": "^[a-z][a-z0-9-]*$",
                 "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]},
        "generation": {"type": "integer",
                       "x-kubernetes-validations": [{"rule": "self >= oldSelf", "message": "may only grow"}]},
        "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1},
        "bounded": {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 9}]},
        "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "when": {"type": "string", "format": "date-time"},
        "every": {"type": "string", "format": "duration",
                  "x-kubernetes-validations": [{"rule": "self >= duration('1m')", "message": "at least a minute"}]},
        "tags": {"type": "array", "maxItems": 4, "x-kubernetes-list-type": "set",
                 "items": {"type": "string", "maxLength": 8}},
        "ports": {"type": "array", "maxItems": 4, "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"], "items": _PORT},
        "labels": {"type": "object", "maxProperties": 3, "additionalProperties": {"type": "string", "maxLength": 10}},
        "nested": {"type": "object", "default": {}, "properties": {
            "a": {"type": "string", "default": "x"}, "b": {"type": "integer", "nullable": True}}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "x-kubernetes-preserve-unknown-fields": True},
        "maybe": {"type": "string", "nullable": True},
        "grace": {"type": "string", "maxLength": 8, "x-kubernetes-validations": [
            {"rule": "!oldSelf.hasValue() || self == oldSelf.value()", "optionalOldSelf": True,
             "message": "grace is fixed once set"},
            {"rule": "oldSelf.orValue('') != 'locked'", "optionalOldSelf": True, "message": "grace was locked"}]},
    },
}
WIDGET_SCHEMA: Obj = {"type": "object", "properties": {
    "spec": WIDGET_SPEC,
    "status": {"type": "object", "properties": {
        "phase": {"type": "string"}, "ready": {"type": "boolean"}, "observedGeneration": {"type": "integer"}}}}}


def widget_crd() -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{
                     "name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": WIDGET_SCHEMA},
                     "subresources": {"status": {}},
                     "additionalPrinterColumns": [
                         {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                         {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
                         {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
                         {"name": "When", "type": "date", "jsonPath": ".spec.when"},
                         {"name": "Ports", "type": "string", "jsonPath": ".spec.ports[*].name", "priority": 1},
                         {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}]}}


_LOOSE: Obj = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "limit": {"type": "integer"}, "note": {"type": "string"}, "other": {"type": "integer"},
    "items": {"type": "array", "items": {"type": "string"}}, "code": {"x-kubernetes-int-or-string": True},
    "ref": {"x-kubernetes-int-or-string": True}}}}}
_STRICT: Obj = {"type": "object", "x-kubernetes-validations": [
    {"rule": "size(self.metadata.name) <= 9", "message": "metadata.name must be at most 9 bytes"}],
    "properties": {"spec": {
    "type": "object",
    "x-kubernetes-validations": [
        {"rule": "!has(self.limit) || self.limit % 2 == 0", "message": "limit is even"},
        {"rule": "!has(self.other) || self.other != 7", "fieldPath": ".other", "message": "other is not 7"}],
    "properties": {
        "code": {"x-kubernetes-int-or-string": True,
                 "x-kubernetes-validations": [{"rule": "self > 0", "message": "code is positive"}]},
        "ref": {"type": "object", "properties": {"name": {"type": "string"}}, "x-kubernetes-validations": [
            {"rule": "self.name == oldSelf.name", "message": "ref.name is immutable"}]},
        "limit": {"type": "integer", "maximum": 10},
        "note": {"type": "string", "maxLength": 3},
        "other": {"type": "integer"},
        "items": {"type": "array", "maxItems": 2, "items": {"type": "string", "enum": ["a", "b"]}}}}}}


def ratchet_crd() -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"ratchets.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": "ratchets", "singular": "ratchet", "kind": "Ratchet", "listKind": "RatchetList"},
                 "versions": [
                     {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": _LOOSE}},
                     {"name": "v2", "served": True, "storage": False, "schema": {"openAPIV3Schema": _STRICT}}]}}


def widget(name: str = "w", **spec: Any) -> Obj:
    return widget_of(name, spec)


def widget_of(name: str, spec: Obj) -> Obj:
    """A Widget with any spec (one with a ``name`` field too)."""
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def ratchet(name: str = "r", version: str = "v1", **spec: Any) -> Obj:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "Ratchet", "metadata": {"name": name}, "spec": spec}


def install(legs: Sequence[Leg]) -> None:
    """Create the CRDs on every leg (unless there already), then wait until the real server serves their kinds."""
    for leg in legs:
        for crd in (widget_crd(), ratchet_crd()):
            made = leg.send(Call("POST", CRDS, crd))
            if made.code not in (201, 409):
                raise AssertionError(f"{leg.name}: {crd['metadata']['name']} not installed: {made.as_json()}")
    deadline = time.monotonic() + INSTALL_PATIENCE
    for leg in legs:
        for path in (WIDGETS, RATCHETS_V1, RATCHETS_V2):
            while leg.send(Call("GET", path.replace("{ns}", "default"))).code != 200:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{leg.name}: {path} not served within {INSTALL_PATIENCE} s")
                time.sleep(0.2)


W = WIDGETS + "/w"


def merge(path: str, body: object, **query: str) -> Call:
    return call("PATCH", path, body, content_type=MERGE, **query)


def apply(path: str, body: object, **query: str) -> Call:
    return call("PATCH", path, body, content_type=APPLY, fieldManager="tester", **query)


def _versions_managed_fields(request: Call, path: str) -> bool:
    return f"/apis/{GROUP}/" in request.path and "/ratchets" in request.path and path.startswith(
        "body.metadata.managedFields")


def _applied_null_in_preserved_fields(request: Call, path: str) -> bool:
    return request.content_type == APPLY and (".extra." in path or ".f:extra." in path or ".template." in path
                                              or ".f:template." in path)


def _mistyped_apply(request: Call, path: str) -> bool:
    return request.content_type == APPLY and request.path.endswith("/widgets/typed")


CRD_KEPT: list[Kept] = [
    Kept("managedFields of an object written through two versions",
         "the API server keeps one managedFields entry per manager, operation and apiVersion; the memory cluster keeps "
         "one per manager and operation, labelled with the apiVersion of its latest write. Only a kind with several "
         "served versions shows it, and none of the project's has",
         _versions_managed_fields,
         Case("one manager, two versions", [call("POST", RATCHETS_V1, ratchet(other=1)),
                                            merge(RATCHETS_V2 + "/r", {"spec": {"other": 2}})])),
    Kept("an apply configuration with a value of the wrong type",
         "the API server types an apply configuration before merging it and answers a value of another type than the "
         "schema's with its 500 'failed to create typed patch object (...): .spec.size: expected numeric (int or "
         "float), got string' (structured-merge-diff's words, with Go's type names and value dumps); the emulators "
         "merge it and their admission refuses it as 422 Invalid naming the field and the type (as a create or update "
         "of the same value is refused). Only undeclared fields are typed like the API server (the 500)",
         _mistyped_apply,
         Case("a mistyped apply", [call("PATCH", WIDGETS + "/typed", {**widget("typed", size="one"), "metadata": {
             "name": "typed", "namespace": "{ns}"}}, content_type=APPLY, fieldManager="tester")])),
    Kept("a null applied inside preserved fields",
         "the API server keeps a null an apply configuration gives inside x-kubernetes-preserve-unknown-fields (and "
         "the applier owns it); the emulators' server-side apply drops nulls from every apply configuration "
         "(engine/cluster/ssa.py), as they are dropped from typed fields",
         _applied_null_in_preserved_fields,
         Case("a null in preserved fields, applied", [
             call("PATCH", W, {**widget(size=1, extra={"a": None, "b": 1}),
                               "metadata": {"name": "w", "namespace": "{ns}"}},
                  content_type=APPLY, fieldManager="tester")])),
]
"""Differences of custom-resource admission kept on purpose, each with its reason and a case that shows it."""


_RUNNERS: dict[tuple[int, str], Runner] = {}
"""One runner per session's legs and use: the fixtures below are imported into several test modules, and each
import is a fixture of its own; the runners (their namespace counters) must still be one."""


def _runner(legs: Sequence[Leg], prefix: str, kept: Sequence[Kept]) -> Runner:
    key = (id(legs[0]), prefix)
    if key not in _RUNNERS:
        if prefix == "c":
            install(legs)
        _RUNNERS[key] = Runner(legs, prefix=prefix, kept=kept)
    return _RUNNERS[key]


@pytest.fixture(scope="session")
def crd_runner(runner: Runner) -> Iterator[Runner]:
    """The three legs (the session's), the Widget and Ratchet CRDs installed on each, the kept differences excused."""
    yield _runner(runner.legs, "c", [*KEPT, *CRD_KEPT])


@pytest.fixture(scope="session")
def crd_http_runner(crd_runner: Runner, http_runner: Runner) -> Iterator[Runner]:
    """The real server and the emulator (the same as ``crd_runner``'s), for what only HTTP has."""
    yield _runner(http_runner.legs, "ch", [*KEPT, *CRD_KEPT])


@pytest.fixture(scope="session")
def crd_bare_runner(crd_runner: Runner) -> Runner:
    """The same legs with no difference excused."""
    return _runner(crd_runner.legs, "ck", ())
