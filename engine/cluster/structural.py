"""The API server's structural-schema checks of a CRD version's ``openAPIV3Schema``.

A real API server refuses a CRD whose schema is not structural: a field, array item or root without
a ``type`` (unless it preserves unknown fields or is int-or-string), a root that is not an object, an
array without ``items``, ``additionalProperties`` at the root or beside ``properties``, a type OpenAPI
does not know, and a root ``metadata`` that restricts more than ``name`` and ``generateName``. The
memory cluster refuses the same CRDs with the same field paths and words (apiextensions-apiserver's
``ValidateStructural`` and ``ValidateCustomResourceDefinitionOpenAPISchema``), so a CRD that
``engine test``, ``engine lint`` and the emulator accept also installs on a cluster. Value
validations below ``allOf``/``anyOf``/``oneOf``/``not`` are not checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine.cluster.api import Cause

OPENAPI_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_EMPTY_TYPE = {
    "root": "must not be empty at the root",
    "item": "must not be empty for specified array items",
    "field": "must not be empty for specified object fields",
}


def schema_causes(versions: list[Any]) -> list[Cause]:
    """Every structural-schema refusal of every version's schema (empty when all are structural)."""
    causes: list[Cause] = []
    for v, version in enumerate(versions):
        schema = ((version.get("schema") or {}) if isinstance(version, dict) else {}).get("openAPIV3Schema")
        if isinstance(schema, dict):
            causes += _check(schema, "root", f"spec.versions[{v}].schema.openAPIV3Schema")
    return causes


def _check(schema: dict[str, Any], level: str, path: str) -> list[Cause]:
    causes = list(_own(schema, level, path))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            if isinstance(sub, dict):
                causes += _check(sub, "field", f"{path}.properties[{name}]")
    items = schema.get("items")
    if isinstance(items, dict):
        causes += _check(items, "item", f"{path}.items")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        causes += _check(extra, "field", f"{path}.additionalProperties")
    return causes


def _own(schema: dict[str, Any], level: str, path: str) -> Iterator[Cause]:
    """The refusals of one schema node, its children not included."""
    type_ = schema.get("type")
    type_ = type_ if isinstance(type_, str) else ""
    if type_ and type_ not in OPENAPI_TYPES:
        supported = ", ".join(f'"{t}"' for t in OPENAPI_TYPES)
        yield Cause(f"{path}.type", f'Unsupported value: "{type_}": supported values: {supported}',
                    "FieldValueNotSupported")
    extra, properties = schema.get("additionalProperties"), schema.get("properties")
    if extra is not None and properties and (extra is False or isinstance(extra, dict)):
        yield Cause(f"{path}.additionalProperties",
                    "Forbidden: additionalProperties and properties are mutual exclusive", "FieldValueForbidden")
    if type_ == "array" and schema.get("items") is None:
        yield Cause(f"{path}.items", "Required value: must be specified", "FieldValueRequired")
    if extra is not None and level == "root":
        yield Cause(f"{path}.additionalProperties", "Forbidden: must not be used at the root", "FieldValueForbidden")
    if not type_ and not schema.get("x-kubernetes-int-or-string") and not schema.get(
            "x-kubernetes-preserve-unknown-fields"):
        yield Cause(f"{path}.type", f"Required value: {_EMPTY_TYPE[level]}", "FieldValueRequired")
    if level == "root" and type_ and type_ != "object":
        yield Cause(f"{path}.type", f'Invalid value: "{type_}": must be object at the root')
    if level == "root" or schema.get("x-kubernetes-embedded-resource"):
        yield from _meta_fields(properties if isinstance(properties, dict) else {}, level, path)


def _meta_fields(properties: dict[str, Any], level: str, path: str) -> Iterator[Cause]:
    """``kind`` and ``apiVersion`` are strings, ``metadata`` an object restricting at most name and generateName."""
    for name, wanted in (("kind", "string"), ("apiVersion", "string"), ("metadata", "object")):
        sub = properties.get(name)
        if isinstance(sub, dict) and sub.get("type") != wanted:
            found = sub.get("type") or ""
            yield Cause(f"{path}.properties[{name}].type", f'Invalid value: "{found}": must be {wanted}')
    metadata = properties.get("metadata")
    if level == "root" and isinstance(metadata, dict):
        rest = {k: v for k, v in metadata.items() if k not in ("type", "default")}
        restricted = rest.pop("properties", None) or {}
        if rest or not set(restricted) <= {"name", "generateName"}:
            yield Cause(f"{path}.properties[metadata]", "Forbidden: must not specify anything other than name and"
                        " generateName, but metadata is implicitly specified", "FieldValueForbidden")
