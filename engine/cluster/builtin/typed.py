"""A built-in object's round trip through its Go type, as the API server decodes every write and encodes every
answer: fields the type does not declare are dropped (and named, for ``fieldValidation``), ``null`` means unset,
optional maps, lists and strings left empty are omitted (Go's ``omitempty``), and struct fields that are not
pointers are always there (``{}`` at least: ``status``, ``resources``, a template's ``metadata``).

The schema (``engine.cluster.builtin.schema``) tells a struct from a map (``properties`` or
``additionalProperties``), a required field from an optional one, and a non-pointer struct (``default: {}``).
Simplified: a zero number or ``false`` in an optional field is kept (whether Go holds it in a pointer, which
keeps it, is not in the schema).
"""

from __future__ import annotations

from typing import Any

from engine.cluster.builtin.schema import Schema

Obj = dict[str, Any]
_DROP = object()


def decode(obj: Obj, schema: Schema) -> tuple[Obj, list[str]]:
    """The object as its Go type holds it, and the paths of the fields that type does not declare
    (``spec.template.spec.containers[0].colour``), as the API server names them in warnings."""
    unknown: list[str] = []
    out = _value(obj, schema, "", unknown)
    return (out if isinstance(out, dict) else {}), unknown


def unknown_fields(obj: Obj, schema: Schema) -> list[str]:
    return decode(obj, schema)[1]


def zero(schema: Schema) -> Obj:
    """The Go zero value of the schema's struct, as the API server converts it to compare a new object with: its
    by-value structs there (and theirs), its required lists empty."""
    out: Obj = {}
    for key, node in schema.fields.items():
        sub = Schema(node)
        if _always_there(sub):
            out[key] = zero(sub)
        elif key in schema.required and sub.type == "array":
            out[key] = []
    return out


def _value(value: Any, schema: Schema | None, path: str, unknown: list[str]) -> Any:
    if schema is None or schema.open or schema.int_or_string:
        return value
    if schema.type == "array":
        if not isinstance(value, list):
            return value
        items = schema.items
        return [_value(item, items, f"{path}[{at}]", unknown) for at, item in enumerate(value)]
    if "properties" in schema.node:
        return _struct(value, schema, path, unknown) if isinstance(value, dict) else value
    if "additionalProperties" in schema.node:
        if not isinstance(value, dict):
            return value
        values = schema.values
        return {key: _value(item, values, f"{path}.{key}" if path else key, unknown)
                for key, item in value.items() if item is not None}
    return value


def _struct(value: Obj, schema: Schema, path: str, unknown: list[str]) -> Obj:
    fields = schema.fields
    required = schema.required
    out: Obj = {}
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if key not in fields:
            unknown.append(where)
            continue
        sub = Schema(fields[key])
        if item is None:
            if _always_there(sub):
                out[key] = _struct({}, sub, where, unknown)
            continue
        decoded = _value(item, sub, where, unknown)
        if key not in required and _omitted(decoded, sub):
            continue
        out[key] = decoded
    for key, node in fields.items():
        if key not in out and key not in value:
            sub = Schema(node)
            if _always_there(sub):
                out[key] = _struct({}, sub, f"{path}.{key}" if path else key, unknown)
    return out


def _always_there(schema: Schema) -> bool:
    """A struct field Go holds by value: encoded even when empty."""
    return schema.default == {} and "properties" in schema.node


def _omitted(value: Any, schema: Schema) -> bool:
    """Whether ``omitempty`` drops the value: an empty map, list or string."""
    if value == "" and schema.type == "string":
        return True
    if value == [] and schema.type == "array":
        return True
    return value == {} and "additionalProperties" in schema.node and "properties" not in schema.node
