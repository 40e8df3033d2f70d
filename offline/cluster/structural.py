"""The API server's structural-schema checks of a CRD version's ``openAPIV3Schema`` (``ValidateStructural``).

A structural schema gives every field, array item and the root a ``type`` (unless it preserves unknown
fields or is int-or-string), arrays ``items``, keeps ``additionalProperties`` off the root, restricts at
most ``name`` and ``generateName`` of the root ``metadata``, and keeps ``allOf``/``anyOf``/``oneOf``/``not``
to value validations of fields the structural part declares. Causes carry the API server's field paths
and words (apiextensions-apiserver's ``ValidateStructural``), sorted as it sorts them.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.api import Cause
from offline.cluster.admission.fielderrors import go_quote
from offline.cluster.crd_regex import regex_error

Schema = dict[str, Any]

ROOT, ITEM, FIELD = "root", "item", "field"
_EMPTY_TYPE = {
    ROOT: "must not be empty at the root",
    ITEM: "must not be empty for specified array items",
    FIELD: "must not be empty for specified object fields",
}
_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]
UNSUPPORTED = ("id", "$schema", "$ref", "patternProperties", "dependencies", "additionalItems", "definitions")
"""Keywords a schema cannot be made structural with (``NewStructural`` fails on them)."""


def not_structural_reason(schema: Schema) -> str | None:
    """Why the schema cannot even be read as a structural one (``NewStructural``'s error), or None."""
    for node in _all_nodes(schema):
        for key, word in (("id", "id"), ("$schema", "schema"), ("$ref", "$ref"), ("patternProperties",
                          "patternProperties"), ("dependencies", "dependencies"), ("additionalItems",
                          "additionalItems"), ("definitions", "definitions")):
            if node.get(key) not in (None, "", {}, []):
                return f"OpenAPIV3Schema '{word}' is not supported"
        if isinstance(node.get("items"), list) and node["items"]:
            return "OpenAPIV3Schema 'items' must be a schema, but is an array"
        if node.get("x-kubernetes-preserve-unknown-fields") is False:
            return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    return None


def structural_causes(schema: Schema, path: str) -> list[Cause]:
    """Every structural-schema refusal of one version's schema at ``path``, sorted as the API server sorts
    them; the schema must pass ``not_structural_reason`` first."""
    causes = _invariants(schema, ROOT, path) + _completeness(schema, schema, path, path)
    return sorted(causes, key=lambda cause: f"{cause.field}: {cause.message}")


def _invariants(s: Schema, level: str, path: str) -> list[Cause]:
    causes: list[Cause] = []
    type_ = _text(s.get("type"))
    items, properties, extra = _items(s), _properties(s), s.get("additionalProperties")
    if type_ == "array" and items is None:
        causes.append(_required(f"{path}.items", "must be specified"))
    if items is not None:
        causes += _invariants(items, ITEM, f"{path}.items")
    for name, child in properties.items():
        causes += _invariants(child, FIELD, f"{path}.properties[{name}]")
    if extra is not None:
        if level == ROOT:
            causes.append(_forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(extra, dict):
            causes += _invariants(extra, FIELD, f"{path}.additionalProperties")
    int_or_string, preserve = bool(s.get("x-kubernetes-int-or-string")), bool(
        s.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if int_or_string and preserve:
        causes.append(Cause(f"{path}.x-kubernetes-preserve-unknown-fields",
                            "Invalid value: true: must be false if x-kubernetes-int-or-string is true"))
    if int_or_string and embedded:
        causes.append(Cause(f"{path}.x-kubernetes-embedded-resource",
                            "Invalid value: true: must be false if x-kubernetes-int-or-string is true"))
    causes += _value_validation(s, _is_int_or_string_any_of(s), _is_int_or_string_all_of(s), path)
    check_metadata = level == ROOT or embedded
    if embedded and type_ != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        causes.append(_required(f"{path}.type", detail) if not type_ else _invalid(f"{path}.type", type_, detail))
    elif not type_ and not int_or_string and not preserve:
        causes.append(_required(f"{path}.type", _EMPTY_TYPE[level]))
    if embedded and extra is not None:
        causes.append(_forbidden(f"{path}.additionalProperties",
                                 "must not be used if x-kubernetes-embedded-resource is set"))
    if level == ROOT and type_ and type_ != "object":
        causes.append(_invalid(f"{path}.type", type_, "must be object at the root"))
    for name in ("kind", "apiVersion"):
        if name in properties and check_metadata and _text(properties[name].get("type")) != "string":
            causes.append(_invalid(f"{path}.properties[{name}].type", _text(properties[name].get("type")),
                                   "must be string"))
    if "metadata" in properties:
        causes += _metadata(properties["metadata"], check_metadata, level, f"{path}.properties[metadata]")
    if embedded and not preserve and not properties:
        causes.append(_required(f"{path}.properties", "must not be empty if x-kubernetes-embedded-resource is true"
                                " without x-kubernetes-preserve-unknown-fields"))
    return causes


_META_FREE = ("type", "default", "properties")


def _metadata(s: Schema, check_metadata: bool, level: str, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if check_metadata and _text(s.get("type")) != "object":
        causes.append(_invalid(f"{path}.type", _text(s.get("type")), "must be object"))
    if level == ROOT:
        properties = _properties(s)
        restricts_more = bool(properties) and not (set(properties) <= {"name", "generateName"})
        rest = {key: value for key, value in s.items() if key not in _META_FREE and _set(value)}
        if restricts_more or rest:
            causes.append(_forbidden(path, "must not specify anything other than name and generateName, but"
                                           " metadata is implicitly specified"))
    return causes


def _value_validation(v: Schema, skip_any_of: bool, skip_first_all_of_any_of: bool, path: str) -> list[Cause]:
    """The junctors of a node (each must be a nested value validation) and its pattern."""
    causes: list[Cause] = []
    if not skip_any_of:
        for i, clause in enumerate(_list(v.get("anyOf"))):
            causes += _nested(clause, False, f"{path}.anyOf[{i}]")
    for i, clause in enumerate(_list(v.get("allOf"))):
        causes += _nested(clause, skip_first_all_of_any_of and i == 0, f"{path}.allOf[{i}]")
    for i, clause in enumerate(_list(v.get("oneOf"))):
        causes += _nested(clause, False, f"{path}.oneOf[{i}]")
    if isinstance(v.get("not"), dict):
        causes += _nested(v["not"], False, f"{path}.not")
    pattern = _text(v.get("pattern"))
    if pattern:
        problem = regex_error(pattern)
        if problem is not None:
            causes.append(_invalid(f"{path}.pattern", pattern,
                                   f"must be a valid regular expression, but isn't: {problem}"))
    return causes


_NESTED_FORBIDDEN = (
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def _nested(v: Schema, skip_any_of: bool, path: str) -> list[Cause]:
    """A schema inside ``allOf``/``anyOf``/``oneOf``/``not``: value validations only."""
    causes = _value_validation(v, skip_any_of, False, path)
    items = _items(v)
    if items is not None:
        causes += _nested(items, False, f"{path}.items")
    for name, child in _properties(v).items():
        causes += _nested(child, False, f"{path}.properties[{name}]")
    if _text(v.get("type")):
        causes.append(_forbidden(f"{path}.type", "must be empty to be structural"))
    extra = v.get("additionalProperties")
    if isinstance(extra, dict) or extra is True:
        causes.append(_forbidden(f"{path}.additionalProperties", "must be undefined to be structural"))
    for key, detail in _NESTED_FORBIDDEN:
        value = v.get(key)
        present = value is not None if key == "default" else _set(value)
        if key == "x-kubernetes-list-type" or key == "x-kubernetes-map-type":
            present = value is not None
        if present:
            causes.append(_forbidden(f"{path}.{key}", detail))
    if "metadata" in _properties(v):
        causes.append(_forbidden(f"{path}.properties[metadata]", "must not be specified in a nested context"))
    return causes


def _completeness(v: Schema, s: Schema | None, s_path: str, v_path: str) -> list[Cause]:
    """Every property or items a root junctor names is declared in the structural part too."""
    if s is None:
        return [_required(s_path, f"because it is defined in {v_path}")]
    causes: list[Cause] = []
    for key in ("not",):
        if isinstance(v.get(key), dict):
            causes += _nested_completeness(v[key], s, s_path, f"{v_path}.{key}")
    for key in ("allOf", "anyOf", "oneOf"):
        for i, clause in enumerate(_list(v.get(key))):
            causes += _nested_completeness(clause, s, s_path, f"{v_path}.{key}[{i}]")
    return causes


def _nested_completeness(v: Schema, s: Schema | None, s_path: str, v_path: str) -> list[Cause]:
    if s is None:
        return [_required(s_path, f"because it is defined in {v_path}")]
    causes = _completeness(v, s, s_path, v_path)
    items = _items(v)
    if items is not None:
        causes += _nested_completeness(items, _items(s), f"{s_path}.items", f"{v_path}.items")
    declared = _properties(s)
    for name, child in _properties(v).items():
        if name not in declared:
            causes.append(_required(f"{s_path}.properties[{name}]",
                                    f"because it is defined in {v_path}.properties[{name}]"))
        else:
            causes += _nested_completeness(child, declared[name], f"{s_path}.properties[{name}]",
                                           f"{v_path}.properties[{name}]")
    return causes


def _is_int_or_string_any_of(s: Schema) -> bool:
    return s.get("anyOf") == _INT_OR_STRING


def _is_int_or_string_all_of(s: Schema) -> bool:
    all_of = _list(s.get("allOf"))
    return bool(all_of) and all_of[0].get("anyOf") == _INT_OR_STRING


def _all_nodes(schema: Schema) -> list[Schema]:
    """The node and every schema below it, through every keyword that holds schemas."""
    found, stack = [], [schema]
    while stack:
        node = stack.pop()
        found.append(node)
        for key in ("items", "not", "additionalProperties", "additionalItems"):
            if isinstance(node.get(key), dict):
                stack.append(node[key])
        if isinstance(node.get("items"), list):
            stack += [item for item in node["items"] if isinstance(item, dict)]
        for key in ("allOf", "anyOf", "oneOf"):
            stack += _list(node.get(key))
        for key in ("properties", "patternProperties", "definitions"):
            if isinstance(node.get(key), dict):
                stack += [child for child in node[key].values() if isinstance(child, dict)]
    return found


def _items(s: Schema) -> Schema | None:
    items = s.get("items")
    return items if isinstance(items, dict) else None


def _properties(s: Schema) -> dict[str, Schema]:
    properties = s.get("properties")
    return {k: v for k, v in properties.items() if isinstance(v, dict)} if isinstance(properties, dict) else {}


def _list(value: Any) -> list[Schema]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _set(value: Any) -> bool:
    """Whether a keyword holds anything (Go's zero values and empty collections do not count)."""
    return value is not None and value is not False and value != "" and value != [] and value != {}


def _required(path: str, detail: str) -> Cause:
    return Cause(path, f"Required value: {detail}" if detail else "Required value", "FieldValueRequired")


def _forbidden(path: str, detail: str) -> Cause:
    return Cause(path, f"Forbidden: {detail}", "FieldValueForbidden")


def _invalid(path: str, value: str, detail: str) -> Cause:
    return Cause(path, f"Invalid value: {go_quote(value)}: {detail}")
