"""The custom kinds the CRD-admission differential cases write, installed once per session on every leg.

``Widget`` exercises what a CRD's schema does to a write: defaults (nested, in map-list items), pruning,
preserved and embedded fields, int-or-string, nullable fields, bounds, enums, patterns, formats, set and map
lists, CEL rules with messages, message expressions, reasons and field paths, transition rules on ``oldSelf``,
a status subresource, printer columns. ``Ratchet`` has two versions of one stored kind, ``v1`` loose and ``v2``
strict, so an object written through ``v1`` can be updated through ``v2``: validation ratcheting.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tests.differential.harness import Call, Leg

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
    "items": {"type": "array", "items": {"type": "string"}}}}}}
_STRICT: Obj = {"type": "object", "properties": {"spec": {
    "type": "object",
    "x-kubernetes-validations": [{"rule": "!has(self.limit) || self.limit % 2 == 0", "message": "limit is even"}],
    "properties": {
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
