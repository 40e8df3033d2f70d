"""A built-in object's round trip through its Go type, as the API server decodes every write and encodes every
answer: fields the type does not declare are dropped (and named, for ``fieldValidation``), ``null`` means unset,
an empty value of an ``omitempty`` field is dropped, and a by-value field that is not set is written as Go writes
its zero value (``status: {}``, a container's ``resources: {}``, a ClusterRole's ``rules: null``); quantities
are written in canonical form (``0.5`` CPU is ``500m``).

The schema (``offline.cluster.builtin.schema``) tells a struct from a map and names each struct's Go type; the
encoding data says, per field, what Go's encoder does with it when it is empty, and gives the fields in the
order Go writes them (so answers list them as the API server does).
"""

from __future__ import annotations

import copy
from typing import Any

from offline.cluster.builtin.quantity import QUANTITY, canonical
from offline.cluster.builtin.schema import Schema, encoding

Obj = dict[str, Any]


def decode(obj: Obj, schema: Schema, *, stored: bool = False) -> tuple[Obj, list[str]]:
    """The object as its Go type holds it, and the paths of the fields that type does not declare
    (``spec.template.spec.containers[0].colour``), as the API server names them in warnings. ``stored``: as it
    comes back from storage (protobuf), where an empty list or map Go keeps is nil again."""
    unknown: list[str] = []
    out = _value(obj, schema, "", unknown, stored)
    return (out if isinstance(out, dict) else {}), unknown


def zero(schema: Schema) -> Obj:
    """The Go zero value of the schema's struct, as the API server converts it to compare a new object with (the
    fields a create sets are those that differ from it); a nil list merged by key is read as an empty one."""
    return _granular_lists_empty(decode({}, schema)[0], schema)


def _granular_lists_empty(value: Obj, schema: Schema) -> Obj:
    out: Obj = {}
    for key, item in value.items():
        sub = schema.field(key)
        if item is None and sub is not None and sub.type == "array" and sub.list_type in ("map", "set"):
            out[key] = []
        elif isinstance(item, dict) and sub is not None and "properties" in sub.node:
            out[key] = _granular_lists_empty(item, sub)
        else:
            out[key] = item
    return out


def _value(value: Any, schema: Schema | None, path: str, unknown: list[str], stored: bool) -> Any:
    if schema is not None and schema.ref == QUANTITY:
        return canonical(value)
    if schema is None or schema.open or schema.int_or_string:
        return value
    if schema.type == "array":
        if not isinstance(value, list):
            return value
        items = schema.items
        return [_value(item, items, f"{path}[{at}]", unknown, stored) for at, item in enumerate(value)]
    if "properties" in schema.node:
        return _struct(value, schema, path, unknown, stored) if isinstance(value, dict) else value
    if "additionalProperties" in schema.node:
        if not isinstance(value, dict):
            return value
        values = schema.values
        return {key: _value(item, values, f"{path}.{key}" if path else key, unknown, stored)
                for key, item in value.items() if item is not None}
    return value


def _struct(value: Obj, schema: Schema, path: str, unknown: list[str], stored: bool) -> Obj:
    fields = schema.fields
    written = encoding(schema.ref)
    out: Obj = {}
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if key not in fields:
            unknown.append(where)
            continue
        rule = written.get(key, "omit")
        if item is None:
            continue
        sub = Schema(fields[key])
        decoded = _value(item, sub, where, unknown, stored)
        if rule == "omit" and _empty(decoded):
            continue
        if stored and rule is None and decoded in ([], {}):
            decoded = None
        out[key] = decoded
    for key, rule in written.items():
        if key not in out and rule not in ("omit", "pointer") and key in fields:
            sub = Schema(fields[key])
            out[key] = _struct({}, sub, f"{path}.{key}" if path else key, unknown, stored) if (
                isinstance(rule, dict) and "properties" in sub.node) else copy.deepcopy(rule)
    if written:  # the type's order, as Go encodes it
        out = {**{key: out[key] for key in written if key in out}, **out}
    return out


def _empty(value: Any) -> bool:
    """Go's idea of an empty value: "", 0, false, an empty list or map."""
    if isinstance(value, bool):
        return value is False
    if isinstance(value, int | float):
        return value == 0
    return value in ("", [], {})
