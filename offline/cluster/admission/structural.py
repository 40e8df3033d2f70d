"""The API server's walks over a structural schema: pruning, defaulting, list-type invariants.

Each walk works in place on a value admission has already copied, and follows the schema
alone (properties, additionalProperties, items), as the structural pruning and defaulting
packages of the apiextensions-apiserver do.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from offline.cluster.admission import fielderrors
from offline.cluster.admission.fielderrors import FieldError

Schema = dict[str, Any]

ROOT_META = ("apiVersion", "kind", "metadata")
"""Kept at the root of a resource (and of an embedded resource) whatever the schema says."""

_INT64 = 2**63


def prune(value: Any, schema: Schema, *, resource_root: bool = False, embedded: bool = False,
          keep_nulls: bool = False) -> Any:
    """Drop fields the schema does not know, and nulls of fields that do not allow null and have no default
    (unless ``keep_nulls``); returns the value.

    A resource's metadata keeps ObjectMeta's fields only; an embedded resource's is also written back as Go
    writes ObjectMeta (empty fields left out). Integral floats become ints, as they read back from a Go API
    server (float64 1 marshals as 1).
    """
    if isinstance(value, float) and value.is_integer() and abs(value) < _INT64:
        return int(value)
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict) and schema.get("x-kubernetes-preserve-unknown-fields"):
            return [_numbers(item) for item in value]
        items = items if isinstance(items, dict) else {}  # no schema for the items: their fields are all unknown
        return [prune(item, items, resource_root=_embedded(items), embedded=_embedded(items), keep_nulls=keep_nulls)
                for item in value]
    if not isinstance(value, dict):
        return value
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    for key in list(value):
        if resource_root and key in ROOT_META:
            if key != "metadata":
                value[key] = _numbers(value[key])
            elif isinstance(value[key], dict):
                value[key] = _object_meta(value[key], embedded)
            continue
        child = properties.get(key)
        if child is None and isinstance(additional, dict):
            child = additional
        if child is None:
            if preserve or additional is True:
                value[key] = _numbers(value[key])
            else:
                del value[key]
        elif value[key] is None and not child.get("nullable") and not keep_nulls and (
                key in properties or "default" not in child):  # a property's default fills it when it is gone
            del value[key]
        else:
            value[key] = prune(value[key], child, resource_root=_embedded(child), embedded=_embedded(child),
                               keep_nulls=keep_nulls)
    return value


def _object_meta(meta: dict[str, Any], embedded: bool) -> dict[str, Any]:
    """ObjectMeta's fields of a metadata; for an embedded resource without the ones Go leaves out when empty."""
    kept = {key: item for key, item in meta.items() if key in OBJECT_META}
    if embedded:
        kept = {key: item for key, item in kept.items() if item not in (None, "", 0, [], {}) or item is False}
    return kept


OBJECT_META = frozenset((
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
    "managedFields",
))
"""The fields of ObjectMeta: any other under ``metadata`` is unknown."""


def unknown_fields(value: Any, schema: Schema, *, resource_root: bool = False, path: str = "") -> list[str]:
    """The paths (``spec.rotaton``, ``spec.items[0].x``) of the fields ``prune`` would drop, in
    document order: what strict field validation refuses and Warn reports."""
    found: list[str] = []
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict) and schema.get("x-kubernetes-preserve-unknown-fields"):
            return found
        items = items if isinstance(items, dict) else {}
        for index, item in enumerate(value):
            found += unknown_fields(item, items, resource_root=_embedded(items), path=f"{path}[{index}]")
        return found
    if not isinstance(value, dict):
        return found
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    for key, item in value.items():
        where = f"{path}.{key}" if path else str(key)
        if resource_root and key in ROOT_META:
            if key == "metadata" and isinstance(item, dict):
                found += [f"{where}.{name}" for name in item if name not in OBJECT_META]
            continue
        child = properties.get(key)
        if child is None and isinstance(additional, dict):
            child = additional
        if child is None:
            if not (preserve or additional is True):
                found.append(where)
        else:
            found += unknown_fields(item, child, resource_root=_embedded(child), path=where)
    return found


def _smd_element(item: Any, schema: Schema, index: int) -> str:
    """A list item as structured-merge-diff names it: by its keys in a map list, by value in a set, else by index."""
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        return f"[={_smd_value(item)}]"
    if list_type == "map" and isinstance(item, dict):
        keys = sorted(schema.get("x-kubernetes-list-map-keys") or [])
        return "[" + ",".join(f"{key}={_smd_value(item[key])}" for key in keys if key in item) + "]"
    return f"[{index}]"


def default(value: Any, schema: Schema) -> None:
    """Fill absent properties from their ``default``, then default inside every value, defaults included."""
    if isinstance(value, dict):
        properties: dict[str, Schema] = schema.get("properties") or {}
        for key, prop in properties.items():
            if "default" in prop and (key not in value or (value[key] is None and not prop.get("nullable"))):
                value[key] = _numbers(copy.deepcopy(prop["default"]))
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            child = properties.get(key)
            if child is None and isinstance(additional, dict):
                child = additional
                if item is None and "default" in child and not child.get("nullable"):
                    value[key] = item = _numbers(copy.deepcopy(child["default"]))
            if child is not None:
                default(item, child)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        items: Schema = schema["items"]
        for index, item in enumerate(value):
            if item is None and "default" in items and not items.get("nullable"):
                value[index] = item = _numbers(copy.deepcopy(items["default"]))
            default(item, items)


def list_type_errors(value: Any, schema: Schema, path: str = "") -> list[FieldError]:
    """Duplicates in ``x-kubernetes-list-type: set`` items and ``map`` keys (ValidateListSetsAndMaps)."""
    errors: list[FieldError] = []
    if isinstance(value, dict):
        properties: dict[str, Schema] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            child = properties.get(key) or (additional if isinstance(additional, dict) else None)
            if child is not None:
                errors += list_type_errors(item, child, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        items: Schema = schema.get("items") or {}
        list_type = schema.get("x-kubernetes-list-type")
        keys: list[str] = schema.get("x-kubernetes-list-map-keys") or []
        seen: list[list[Any]] = []  # [identity, times seen]
        if list_type == "map":
            for index, item in enumerate(value):
                if item is not None and not isinstance(item, dict):
                    return [fielderrors.invalid(f"{path}[{index}]", item, "must be an object for an array of list-type"
                                                                          " map")]
        for index, item in enumerate(value):
            identity: Any = item
            if list_type == "map":
                identity = {key: item.get(key) for key in keys if key in item} if isinstance(item, dict) else {}
            if list_type in ("set", "map") and len(value) > 1:
                match = next((entry for entry in seen if identity == entry[0] and _same_types(identity, entry[0])),
                             None)
                if match is None:
                    seen.append([identity, 1])
                else:
                    match[1] += 1
                    if match[1] == 2:  # each value's second appearance only, as the API server reports them
                        errors.append(FieldError(fielderrors.ErrorType.DUPLICATE, f"{path}[{index}]", identity))
            errors += list_type_errors(item, items, f"{path}[{index}]")
    return errors


def _same_types(left: Any, right: Any) -> bool:
    """Python says True == 1; JSON does not."""
    if isinstance(left, dict) and isinstance(right, dict):
        return all(_same_types(left[key], right.get(key)) for key in left)
    return type(left) is type(right)


def _embedded(schema: Schema | None) -> bool:
    return bool(schema and schema.get("x-kubernetes-embedded-resource"))


def _numbers(value: Any) -> Any:
    """Integral floats to ints everywhere below, for values no schema describes."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _INT64:
        return int(value)
    if isinstance(value, list):
        return [_numbers(item) for item in value]
    if isinstance(value, dict):
        return {key: _numbers(item) for key, item in value.items()}
    return value


def apply_problems(value: Any, schema: Schema, *, resource_root: bool = False, path: str = "") -> list[str]:
    """What typing an apply configuration finds, in structured-merge-diff's words and order: each field the schema
    does not declare (``.spec.shade: field not declared in schema``) and each repeated entry of a set or map list
    (``.spec.tags: duplicate entries for key [="a"]``), an item's problems after its own."""
    found: list[str] = []
    if isinstance(value, dict):
        properties: dict[str, Schema] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        for key, item in value.items():
            if resource_root and key in ROOT_META:
                continue
            child = properties.get(key) or (additional if isinstance(additional, dict) else None)
            if child is None:
                if not (preserve or additional is True):
                    found.append(f"{path}.{key}: field not declared in schema")
                continue
            found += apply_problems(item, child, resource_root=_embedded(child), path=f"{path}.{key}")
    elif isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return found
        list_type = schema.get("x-kubernetes-list-type")
        seen: set[str] = set()
        for index, item in enumerate(value):
            element = _smd_element(item, schema, index)
            if list_type in ("set", "map") and not (list_type == "map" and not isinstance(item, dict)):
                if element in seen:
                    found.append(f"{path}: duplicate entries for key {element}")
                seen.add(element)
            found += apply_problems(item, items, resource_root=_embedded(items), path=f"{path}{element}")
    return found


def _smd_value(value: Any) -> str:
    """A value as structured-merge-diff prints it in a path element (JSON)."""
    return json.dumps(value, separators=(",", ":"))
