"""The API server's checks of each node of a CRD version's ``openAPIV3Schema`` beyond structurality.

Keywords it does not support (``$ref``, ``id``, ``patternProperties``, ...), ``uniqueItems``, defaults where
they cannot be pruned (in top-level ``metadata``, ``kind``, ``apiVersion``), the ``x-kubernetes-*``
extensions (list and map types, list map keys, preserve-unknown-fields), and the static checks of every
``x-kubernetes-validations`` rule, the CEL compilation of the rules included. Field paths and words follow
apiextensions-apiserver's ``ValidateCustomResourceDefinitionOpenAPISchema``; ``OpenApiErrors`` keeps the
schema's errors apart from its rules' as the API server does (rules are only compiled where the schema
below them is free of errors).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from engine.cluster.api import Cause
from offline.cluster.admission import celcheck
from offline.cluster.admission.fielderrors import go_json, go_quote, go_value
from offline.cluster.crd_paths import valid_field_path
from offline.cluster.structural import not_structural_reason

Schema = dict[str, Any]

OPENAPI_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_SUPPORTED_TYPES = ", ".join(f'"{t}"' for t in OPENAPI_TYPES)
_META_FIELDS = ("metadata", "kind", "apiVersion")
_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")


@dataclass(frozen=True)
class Walk:
    """What the walk carries down: whether defaults are allowed (and why not), whether it is inside a
    resource's metadata, the first ancestor whose old value cannot be correlated, and whether the rules
    here are compiled (the schema is structural, its defaults valid, and no junctor is above)."""

    allow_defaults: bool = True
    defaults_reason: str = ""
    inside_meta: bool = False
    uncorrelatable: str | None = None
    compile_rules: bool = True
    resource_root: bool = True

    def forbid_defaults(self, reason: str) -> Walk:
        return replace(self, allow_defaults=False, defaults_reason=reason)

    def forbid_old_self(self, path: str) -> Walk:
        return self if self.uncorrelatable is not None else replace(self, uncorrelatable=path)


@dataclass
class OpenApiErrors:
    """The schema's errors and its rules' compile errors, kept apart."""

    schema: list[Cause] = field(default_factory=list)
    rules: list[Cause] = field(default_factory=list)

    def add(self, other: OpenApiErrors) -> None:
        self.schema += other.schema
        self.rules += other.rules

    def all(self) -> list[Cause]:
        return self.schema + self.rules


def openapi_causes(schema: Schema, path: str, *, compile_rules: bool) -> list[Cause]:
    """Every refusal of one version's schema at ``path`` (``spec.validation.openAPIV3Schema``)."""
    return _node(schema, path, Walk(compile_rules=compile_rules), is_root=True).all()


def _node(s: Schema, path: str, walk: Walk, *, is_root: bool = False) -> OpenApiErrors:
    errors = OpenApiErrors(schema=_keywords(s, path, walk))
    if s.get("uniqueItems") is True:
        errors.schema.append(_forbidden(f"{path}.uniqueItems", "uniqueItems cannot be set to true since the runtime"
                                        " complexity becomes quadratic"))
    properties = _dict(s.get("properties"))
    extra = s.get("additionalProperties")
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if extra is not None:
        if properties and (extra is False or isinstance(extra, dict)):
            errors.schema.append(_forbidden(f"{path}.additionalProperties",
                                            "additionalProperties and properties are mutual exclusive"))
        if isinstance(extra, dict):
            sub = walk.forbid_defaults("inside additionalProperties applying to object metadata") \
                if walk.inside_meta else walk
            errors.add(_node(extra, f"{path}.additionalProperties", replace(sub, resource_root=embedded_of(extra))))
    for name, child in properties.items():
        if not isinstance(child, dict):
            continue
        sub = walk
        map_type = s.get("x-kubernetes-map-type")
        if map_type is not None and map_type not in ("granular", "atomic"):
            sub = sub.forbid_old_self(path)
        if (is_root or embedded) and name in _META_FIELDS:
            sub = replace(sub, inside_meta=True)
            if is_root:
                sub = sub.forbid_defaults(f"in top-level {name}")
        errors.add(_node(child, f"{path}.properties[{name}]", replace(sub, resource_root=embedded_of(child))))
    unchecked = replace(walk, compile_rules=False, resource_root=False)
    if isinstance(s.get("not"), dict):
        errors.add(_node(s["not"], f"{path}.not", unchecked))
    for key in ("allOf", "oneOf", "anyOf"):
        for i, clause in enumerate(s.get(key) or []):
            if isinstance(clause, dict):
                errors.add(_node(clause, f"{path}.{key}[{i}]", unchecked))
    for name, child in (s.get("definitions") or {}).items():
        if isinstance(child, dict):
            errors.add(_node(child, f"{path}.definitions[{name}]", unchecked))
    items = s.get("items")
    if items is not None:
        sub = walk if s.get("x-kubernetes-list-type") == "map" else walk.forbid_old_self(path)
        if isinstance(items, dict):
            errors.add(_node(items, f"{path}.items", replace(sub, resource_root=embedded_of(items))))
        elif isinstance(items, list):
            for i, item in enumerate(items):
                if isinstance(item, dict):
                    errors.add(_node(item, f"{path}.items[{i}]", replace(sub, compile_rules=False)))
    for name, dependency in (s.get("dependencies") or {}).items():
        if isinstance(dependency, dict):
            errors.add(_node(dependency, f"{path}.dependencies[{name}]", unchecked))
    errors.schema += _extensions(s, path)
    errors.schema += _rules_static(s, path)
    if s.get("x-kubernetes-validations") and not errors.schema and walk.compile_rules:
        errors.rules += _rules_compiled(s, path, walk)
    return errors


def embedded_of(schema: Schema) -> bool:
    return bool(schema.get("x-kubernetes-embedded-resource"))


def _keywords(s: Schema, path: str, walk: Walk) -> list[Cause]:
    """The keywords a CRD schema may not use, a default where it may not be, an unknown type."""
    causes: list[Cause] = []
    type_ = s.get("type") if isinstance(s.get("type"), str) else ""
    if type_ and type_ not in OPENAPI_TYPES:
        causes.append(Cause(f"{path}.type", f"Unsupported value: {go_quote(type_)}: supported values:"
                            f" {_SUPPORTED_TYPES}", "FieldValueNotSupported"))
    if s.get("default") is not None and not walk.allow_defaults:
        detail = "must not be set" + (f" {walk.defaults_reason}" if walk.defaults_reason else "")
        causes.append(_forbidden(f"{path}.default", detail))
    if s.get("id"):
        causes.append(_forbidden(f"{path}.id", "id is not supported"))
    if s.get("additionalItems") is not None:
        causes.append(_forbidden(f"{path}.additionalItems", "additionalItems is not supported"))
    if s.get("patternProperties"):
        causes.append(_forbidden(f"{path}.patternProperties", "patternProperties is not supported"))
    if s.get("definitions"):
        causes.append(_forbidden(f"{path}.definitions", "definitions is not supported"))
    if s.get("dependencies") is not None:
        causes.append(_forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if s.get("$ref") is not None:
        causes.append(_forbidden(f"{path}.$ref", "$ref is not supported"))
    if type_ == "null":
        causes.append(_forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative"))
    if isinstance(s.get("items"), list) and s["items"]:
        causes.append(_forbidden(f"{path}.items", "items must be a schema object and not an array"))
    if walk.inside_meta and s.get("x-kubernetes-embedded-resource"):
        causes.append(_forbidden(f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta"))
    return causes


def _extensions(s: Schema, path: str) -> list[Cause]:
    """``x-kubernetes-preserve-unknown-fields``, ``-map-type``, ``-list-type`` and ``-list-map-keys``."""
    causes: list[Cause] = []
    type_ = _text(s.get("type"))
    map_type, list_type = s.get("x-kubernetes-map-type"), s.get("x-kubernetes-list-type")
    keys = [key for key in s.get("x-kubernetes-list-map-keys") or [] if isinstance(key, str)]
    items = s.get("items")
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        causes.append(Cause(f"{path}.x-kubernetes-preserve-unknown-fields",
                            "Invalid value: false: must be true or undefined"))
    if map_type is not None and type_ != "object":
        causes.append(_required_or_invalid(f"{path}.type", type_, "must be object if x-kubernetes-map-type is"
                                           " specified"))
    if map_type is not None and map_type not in ("atomic", "granular"):
        causes.append(_not_supported(f"{path}.x-kubernetes-map-type", str(map_type), ("atomic", "granular")))
    if list_type is not None and type_ != "array":
        causes.append(_required_or_invalid(f"{path}.type", type_, "must be array if x-kubernetes-list-type is"
                                           " specified"))
    elif list_type == "set" and isinstance(items, dict):
        if items.get("type") == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
            causes.append(Cause(f"{path}.items.x-kubernetes-list-type", f"Invalid value: "
                                f"{go_value(items.get('x-kubernetes-list-type'))}: must be atomic as item of a list"
                                " with x-kubernetes-list-type=set"))
        elif items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            causes.append(Cause(f"{path}.items.x-kubernetes-map-type", f"Invalid value: "
                                f"{go_json(items.get('x-kubernetes-list-type'))}: must be atomic as item of a list"
                                " with x-kubernetes-list-type=set"))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        causes.append(_not_supported(f"{path}.x-kubernetes-list-type", str(list_type), ("atomic", "set", "map")))
    if keys:
        if list_type is None:
            causes.append(_required(f"{path}.x-kubernetes-list-type", "must be map if x-kubernetes-list-map-keys is"
                                    " non-empty"))
        elif list_type != "map":
            causes.append(Cause(f"{path}.x-kubernetes-list-type", f"Invalid value: {go_value(list_type)}: must be map"
                                " if x-kubernetes-list-map-keys is non-empty"))
    if list_type == "map":
        causes += _map_list(s, path, keys)
    causes += _map_list_keys_map_set(s, path, keys)
    return causes


def _map_list(s: Schema, path: str, keys: list[str]) -> list[Cause]:
    causes: list[Cause] = []
    items = s.get("items")
    if not keys:
        causes.append(_required(f"{path}.x-kubernetes-list-map-keys", "must not be empty if x-kubernetes-list-type"
                                " is map"))
    if items is None:
        causes.append(_required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map"))
        return causes
    if not isinstance(items, dict):
        causes.append(Cause(f"{path}.items", "Invalid value: must only have a single schema if"
                            " x-kubernetes-list-type is map"))
        return causes
    item_type = _text(items.get("type"))
    if item_type != "object":
        causes.append(Cause(f"{path}.items.type", f"Invalid value: {go_quote(item_type)}: must be object if parent"
                            " array's x-kubernetes-list-type is map"))
        return causes
    properties = _dict(items.get("properties"))
    seen: set[str] = set()
    for key in keys:
        if key in properties:
            if _dict(properties[key]).get("type") in ("array", "object"):
                causes.append(Cause(f"{path}.items.properties[{key}].type", 'Invalid value: "object": must be a scalar'
                                    " type if parent array's x-kubernetes-list-type is map"))
        else:
            causes.append(Cause(f"{path}.x-kubernetes-list-map-keys", f"Invalid value: {go_json(keys)}: entries must"
                                " all be names of item properties"))
        if key in seen:
            causes.append(Cause(f"{path}.x-kubernetes-list-map-keys", f"Invalid value: {go_json(keys)}: must not"
                                " contain duplicate entries"))
        seen.add(key)
    return causes


def _map_list_keys_map_set(s: Schema, path: str, keys: list[str]) -> list[Cause]:
    """Items of set and map lists are not nullable; map keys are required or defaulted, and not nullable."""
    items, list_type = s.get("items"), s.get("x-kubernetes-list-type")
    if not isinstance(items, dict) or list_type not in ("set", "map"):
        return []
    causes: list[Cause] = []
    if items.get("nullable") is True:
        causes.append(_forbidden(f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type is"
                                 f" {list_type}"))
    if list_type == "map":
        required = set(items.get("required") or [])
        properties = _dict(items.get("properties"))
        for key in keys:
            prop = properties.get(key)
            if not isinstance(prop, dict):
                continue
            if key not in required and prop.get("default") is None:
                causes.append(_required(f"{path}.items.properties[{key}].default", "this property is in"
                                        " x-kubernetes-list-map-keys, so it must have a default or be a required"
                                        " property"))
            if prop.get("nullable") is True:
                causes.append(_forbidden(f"{path}.items.properties[{key}].nullable", "this property is in"
                                         " x-kubernetes-list-map-keys, so it cannot be nullable"))
    return causes


def _rules_static(s: Schema, path: str) -> list[Cause]:
    """What the API server checks of each rule before compiling it."""
    causes: list[Cause] = []
    for i, rule in enumerate(s.get("x-kubernetes-validations") or []):
        if not isinstance(rule, dict):
            continue
        at = f"{path}.x-kubernetes-validations[{i}]"
        text, message = _text(rule.get("rule")), _text(rule.get("message"))
        expression, field_path = _text(rule.get("messageExpression")), _text(rule.get("fieldPath"))
        if not text.strip():
            causes.append(_required(f"{at}.rule", "rule is not specified"))
        elif message and not message.strip():
            causes.append(Cause(f"{at}.message", f"Invalid value: {go_quote(message)}: must be non-empty if"
                                " specified"))
        elif _has_newlines(message.strip()):
            causes.append(Cause(f"{at}.message", f"Invalid value: {go_quote(message)}: must not contain line breaks"))
        elif _has_newlines(text.strip()) and not message.strip():
            causes.append(_required(f"{at}.message", "message must be specified if rule contains line breaks"))
        if expression and not expression.strip():
            causes.append(_required(f"{at}.messageExpression", "messageExpression must be non-empty if specified"))
        reason = rule.get("reason")
        if reason is not None and reason not in _REASONS:
            causes.append(_not_supported(f"{at}.reason", str(reason), _REASONS))
        if field_path and not field_path.strip():
            causes.append(Cause(f"{at}.fieldPath", f"Invalid value: {go_quote(field_path)}: must be non-empty if"
                                " specified"))
        if _has_newlines(field_path):
            causes.append(Cause(f"{at}.fieldPath", f"Invalid value: {go_quote(field_path)}: must not contain line"
                                " breaks"))
        if field_path and not_structural_reason(s) is None and not valid_field_path(field_path, s):
            causes.append(Cause(f"{at}.fieldPath", f"Invalid value: {go_quote(field_path)}: must be a valid path"))
    return causes


def _rules_compiled(s: Schema, path: str, walk: Walk) -> list[Cause]:
    """Each rule and messageExpression compiled against the node's type, and its use of ``oldSelf``."""
    declared = celcheck.declared_type(s, resource_root=walk.resource_root)
    if declared is None:
        return [Cause(f"{path}.x-kubernetes-validations", "Internal error: internal error: failed to construct type"
                      " information for x-kubernetes-validations rules: unable to convert structural schema to CEL"
                      " declarations", "InternalError")]
    causes: list[Cause] = []
    for i, rule in enumerate(s.get("x-kubernetes-validations") or []):
        if not isinstance(rule, dict):
            continue
        at = f"{path}.x-kubernetes-validations[{i}]"
        optional_old_self = rule.get("optionalOldSelf")
        checked = celcheck.check_rule(_text(rule.get("rule")), _text(rule.get("messageExpression")), declared,
                                      optional_old_self=optional_old_self is True)
        value = _rule_value(rule)
        if checked.rule_error:
            causes.append(Cause(f"{at}.rule", f"Invalid value: {value}: {checked.rule_error}"))
        if checked.message_expression_error:
            causes.append(Cause(f"{at}.messageExpression", f"Invalid value: {value}:"
                                f" {checked.message_expression_error}"))
        if checked.uses_old_self:
            if walk.uncorrelatable is not None:
                causes.append(Cause(f"{at}.rule", f"Invalid value: {go_quote(_text(rule.get('rule')))}: oldSelf cannot"
                                    f" be used on the uncorrelatable portion of the schema within"
                                    f" {walk.uncorrelatable}"))
        elif optional_old_self is not None:
            causes.append(Cause(f"{at}.optionalOldSelf", f"Invalid value: {go_value(optional_old_self)}: may not be"
                                " set if oldSelf is not used in rule"))
    return causes


def _rule_value(rule: dict[str, Any]) -> str:
    """A rule as the API server prints it in a cause: its Go struct as JSON."""
    return go_json({
        "Rule": _text(rule.get("rule")), "Message": _text(rule.get("message")),
        "MessageExpression": _text(rule.get("messageExpression")), "Reason": rule.get("reason"),
        "FieldPath": _text(rule.get("fieldPath")), "OptionalOldSelf": rule.get("optionalOldSelf")}, ordered=True)


def _has_newlines(text: str) -> bool:
    return "\n" in text or "\r" in text


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _required(path: str, detail: str) -> Cause:
    return Cause(path, f"Required value: {detail}", "FieldValueRequired")


def _forbidden(path: str, detail: str) -> Cause:
    return Cause(path, f"Forbidden: {detail}", "FieldValueForbidden")


def _required_or_invalid(path: str, value: str, detail: str) -> Cause:
    return _required(path, detail) if not value else Cause(path, f"Invalid value: {go_quote(value)}: {detail}")


def _not_supported(path: str, value: str, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(go_quote(item) for item in supported)
    return Cause(path, f"Unsupported value: {go_quote(value)}: supported values: {listed}", "FieldValueNotSupported")
