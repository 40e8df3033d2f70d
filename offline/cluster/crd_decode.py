"""A CRD document as the API server decodes it into its Go types, before any validation.

A field of the wrong JSON type (``type: [string, "null"]``, ``served: "yes"``, ``required: true``) is refused
with a 400 and Go's ``json: cannot unmarshal ...`` words; a field the type does not have (``requried``,
``x-kubernetes-preserve-unknown-field``) is dropped, or refused under ``fieldValidation=Strict`` (kubectl's
default) with its path. This module knows the ``apiextensions.k8s.io/v1`` types and finds both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class Struct:
    """A Go struct: its name and its fields by JSON name."""

    name: str
    fields: dict[str, Any]


@dataclass(frozen=True)
class Slice:
    elem: Any
    go: str


@dataclass(frozen=True)
class Map:
    elem: Any
    go: str


@dataclass(frozen=True)
class Custom:
    """A type with its own decoding: a schema or a bool, a schema or a list of schemas, anything (JSON)."""

    kind: str


STRING, BOOL, INT32, INT64, FLOAT64 = "string", "bool", "int32", "int64", "float64"
ANY = Custom("json")

_RULE = Struct("ValidationRule", {"rule": STRING, "message": STRING, "messageExpression": STRING, "reason": STRING,
                                  "fieldPath": STRING, "optionalOldSelf": BOOL})
_DOCS = Struct("ExternalDocumentation", {"description": STRING, "url": STRING})
SCHEMA_FIELDS: dict[str, Any] = {
    "id": STRING, "$schema": STRING, "$ref": STRING, "description": STRING, "type": STRING, "format": STRING,
    "title": STRING, "default": ANY, "maximum": FLOAT64, "exclusiveMaximum": BOOL, "minimum": FLOAT64,
    "exclusiveMinimum": BOOL, "maxLength": INT64, "minLength": INT64, "pattern": STRING, "maxItems": INT64,
    "minItems": INT64, "uniqueItems": BOOL, "multipleOf": FLOAT64, "enum": Slice(ANY, "[]v1.JSON"),
    "maxProperties": INT64, "minProperties": INT64, "required": Slice(STRING, "[]string"),
    "items": Custom("schema-or-array"), "allOf": Slice("schema", "[]v1.JSONSchemaProps"),
    "oneOf": Slice("schema", "[]v1.JSONSchemaProps"), "anyOf": Slice("schema", "[]v1.JSONSchemaProps"),
    "not": "schema", "properties": Map("schema", "map[string]v1.JSONSchemaProps"),
    "additionalProperties": Custom("schema-or-bool"),
    "patternProperties": Map("schema", "map[string]v1.JSONSchemaProps"),
    "dependencies": Map(Custom("schema-or-strings"), "v1.JSONSchemaDependencies"),
    "additionalItems": Custom("schema-or-bool"), "definitions": Map("schema", "v1.JSONSchemaDefinitions"),
    "externalDocs": _DOCS, "example": ANY, "nullable": BOOL, "x-kubernetes-preserve-unknown-fields": BOOL,
    "x-kubernetes-embedded-resource": BOOL, "x-kubernetes-int-or-string": BOOL,
    "x-kubernetes-list-map-keys": Slice(STRING, "[]string"), "x-kubernetes-list-type": STRING,
    "x-kubernetes-map-type": STRING, "x-kubernetes-validations": Slice(_RULE, "v1.ValidationRules"),
}
SCHEMA = Struct("JSONSchemaProps", SCHEMA_FIELDS)
_COLUMN = Struct("CustomResourceColumnDefinition", {"name": STRING, "type": STRING, "format": STRING,
                                                    "description": STRING, "priority": INT32, "jsonPath": STRING})
_SCALE = Struct("CustomResourceSubresourceScale", {"specReplicasPath": STRING, "statusReplicasPath": STRING,
                                                   "labelSelectorPath": STRING})
_SUBRESOURCES = Struct("CustomResourceSubresources", {"status": Struct("CustomResourceSubresourceStatus", {}),
                                                      "scale": _SCALE})
_VERSION = Struct("CustomResourceDefinitionVersion", {
    "name": STRING, "served": BOOL, "storage": BOOL, "deprecated": BOOL, "deprecationWarning": STRING,
    "schema": Struct("CustomResourceValidation", {"openAPIV3Schema": "schema"}), "subresources": _SUBRESOURCES,
    "additionalPrinterColumns": Slice(_COLUMN, "[]v1.CustomResourceColumnDefinition"),
    "selectableFields": Slice(Struct("SelectableField", {"jsonPath": STRING}), "[]v1.SelectableField"),
})
_NAMES = Struct("CustomResourceDefinitionNames", {
    "plural": STRING, "singular": STRING, "shortNames": Slice(STRING, "[]string"), "kind": STRING,
    "listKind": STRING, "categories": Slice(STRING, "[]string")})
_SERVICE = Struct("ServiceReference", {"namespace": STRING, "name": STRING, "path": STRING, "port": INT32})
_CONVERSION = Struct("CustomResourceConversion", {"strategy": STRING, "webhook": Struct("WebhookConversion", {
    "clientConfig": Struct("WebhookClientConfig", {"url": STRING, "service": _SERVICE, "caBundle": STRING}),
    "conversionReviewVersions": Slice(STRING, "[]string")})})
_SPEC = Struct("CustomResourceDefinitionSpec", {
    "group": STRING, "names": _NAMES, "scope": STRING,
    "versions": Slice(_VERSION, "[]v1.CustomResourceDefinitionVersion"),
    "conversion": _CONVERSION, "preserveUnknownFields": BOOL})
_STRINGS = Map(STRING, "map[string]string")
_META = Struct("ObjectMeta", {
    "name": STRING, "generateName": STRING, "namespace": STRING, "selfLink": STRING, "uid": STRING,
    "resourceVersion": STRING, "generation": INT64, "creationTimestamp": ANY, "deletionTimestamp": ANY,
    "deletionGracePeriodSeconds": INT64, "labels": _STRINGS, "annotations": _STRINGS,
    "ownerReferences": Slice(ANY, "[]v1.OwnerReference"), "finalizers": Slice(STRING, "[]string"),
    "managedFields": Slice(ANY, "[]v1.ManagedFieldsEntry")})
CRD = Struct("CustomResourceDefinition", {"apiVersion": STRING, "kind": STRING, "metadata": _META, "spec": _SPEC,
                                          "status": ANY})

_GO_NAMES = {"schema": "v1.JSONSchemaProps"}


@dataclass(frozen=True)
class Decoded:
    """What decoding found: the first type error (Go's words, or "") and where it is, and the unknown fields'
    paths (``spec.versions[0].schemas``: indexes and map keys, as the API server names them)."""

    type_error: str
    unknown: list[str]
    type_error_path: str = ""


def decode(crd: Obj) -> Decoded:
    """Type errors and unknown fields of a CRD document."""
    walk = _Walk()
    walk.value(crd, CRD, "", "", "")
    errors = walk.fatal or walk.errors
    first = errors[0] if errors else ("", "")
    return Decoded(first[0], walk.unknown, first[1])


def drop_unknown(crd: Obj) -> Obj:
    """A copy of a CRD document without the fields its type does not have (what the API server stores)."""
    walk = _Walk(drop=True)
    copied = json.loads(json.dumps(crd))
    walk.value(copied, CRD, "", "", "")
    result: Obj = copied
    return result


def object_meta_error(metadata: Any) -> str:
    """Go's words for a resource's metadata that does not decode into ObjectMeta ("" when it does)."""
    if not isinstance(metadata, dict):
        return f"json: cannot unmarshal {_json_kind(metadata)} into Go value of type v1.ObjectMeta"
    walk = _Walk()
    for key, item in metadata.items():
        if key in _META.fields:
            walk.value(item, _META.fields[key], str(key), str(key), _META.name)
    return walk.errors[0][0] if walk.errors else ""


class _Walk:
    def __init__(self, *, drop: bool = False) -> None:
        self.errors: list[tuple[str, str]] = []
        """Type errors, in document order: Go's decoder keeps the first and goes on."""
        self.fatal: list[tuple[str, str]] = []
        """Errors inside a type with a decoder of its own (a schema or a bool, ...): these stop Go's decoder, so
        the first of them is the error, whatever was kept before."""
        self.unknown: list[str] = []
        self.drop = drop

    def value(self, value: Any, kind: Any, path: str, go_path: str, owner: str) -> None:
        """``path`` is the unknown-field path (indexes, map keys), ``go_path`` Go's (field names only)."""
        if value is None or kind is ANY:
            return
        if kind == "schema":
            kind = SCHEMA
        if isinstance(kind, Struct):
            if not isinstance(value, dict):
                self._mismatch(value, owner, go_path, f"v1.{kind.name}", path)
                return
            for key, item in list(value.items()):
                child = f"{path}.{key}" if path else str(key)
                if key not in kind.fields:
                    self.unknown.append(child)
                    if self.drop:
                        del value[key]
                    continue
                self.value(item, kind.fields[key], child, f"{go_path}.{key}" if go_path else str(key), kind.name)
        elif isinstance(kind, Slice):
            if not isinstance(value, list):
                self._mismatch(value, owner, go_path, kind.go, path)
                return
            for index, item in enumerate(value):
                self.value(item, kind.elem, f"{path}[{index}]", go_path, owner)
        elif isinstance(kind, Map):
            if not isinstance(value, dict):
                self._mismatch(value, owner, go_path, kind.go, path)
                return
            for key, item in value.items():
                self.value(item, kind.elem, f"{path}.{key}", go_path, owner)
        elif isinstance(kind, Custom):
            self._custom(value, kind, path, go_path, owner)
        else:
            self._scalar(value, kind, path, go_path, owner)

    def _custom(self, value: Any, kind: Custom, path: str, go_path: str, owner: str) -> None:
        if self.fatal:
            return
        kept = self.errors
        self.errors = []
        try:
            self._custom_value(value, kind, path, go_path, owner)
        finally:
            if self.errors:
                self.fatal.append(self.errors[0])
            self.errors = kept

    def _custom_value(self, value: Any, kind: Custom, path: str, go_path: str, owner: str) -> None:
        if kind.kind == "schema-or-bool":
            if isinstance(value, bool):
                return
            if not isinstance(value, dict):
                self.errors.append(("boolean or JSON schema expected", path))
                return
        elif kind.kind == "schema-or-array":
            if isinstance(value, list):
                for index, item in enumerate(value):
                    self.value(item, SCHEMA, f"{path}[{index}]", go_path, owner)
                return
            if not isinstance(value, dict):
                return  # decoded as no items at all
        elif kind.kind == "schema-or-strings" and isinstance(value, list):
            for index, item in enumerate(value):
                self._scalar(item, STRING, f"{path}[{index}]", go_path, owner)
            return
        self.value(value, SCHEMA, path, go_path, owner)

    def _scalar(self, value: Any, kind: str, path: str, go_path: str, owner: str) -> None:
        ok = {
            STRING: isinstance(value, str),
            BOOL: isinstance(value, bool),
            FLOAT64: isinstance(value, int | float) and not isinstance(value, bool),
            INT64: _integral(value, 63),
            INT32: _integral(value, 31),
        }[kind]
        if not ok:
            if kind in (INT64, INT32) and isinstance(value, int | float) and not isinstance(value, bool):
                self.errors.append((f"json: cannot unmarshal number {_number(value)} into Go struct field"
                                    f" {owner}.{go_path} of type {kind}", path))
                return
            self._mismatch(value, owner, go_path, kind, path)

    def _mismatch(self, value: Any, owner: str, go_path: str, go_type: str, path: str) -> None:
        self.errors.append((f"json: cannot unmarshal {_json_kind(value)} into Go struct field {owner}.{go_path} of"
                            f" type {_GO_NAMES.get(go_type, go_type)}", path))


def _integral(value: Any, bits: int) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return float(value).is_integer() and -(2**bits) <= value < 2**bits


def _number(value: int | float) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
