"""The API server's checks of the ``default`` values in a CRD schema (``ValidateDefaults``).

Each default outside a resource's metadata must be pruned already (no field the schema would drop), valid
against the schema of its node (types, enums, bounds, formats, required fields) and pass the node's
``x-kubernetes-validations`` rules, as if an object were created with it. Causes carry the API server's
paths: ``...properties[size].default`` for the value itself, ``...default.a`` or ``...default.[1]`` below it.
Defaults inside ``additionalProperties`` are not checked (the API server does not follow them).
"""

from __future__ import annotations

from typing import Any

from engine.cluster.api import Cause
from offline.cluster.admission import fielderrors, structural
from offline.cluster.admission.cel import RuleCompileError, RuleNode
from offline.cluster.admission.celcheck import check_rule, declared_type
from offline.cluster.admission.fielderrors import FieldError, go_json, go_quote, go_value
from offline.cluster.admission.schema import SchemaValidator
from offline.cluster.crd_decode import object_meta_error
from offline.cluster.crd_names import dns1035_errors

Schema = dict[str, Any]
_META = ("metadata", "apiVersion", "kind")


def defaults_causes(schema: Schema, path: str) -> list[Cause]:
    """Every refused default in a version's schema at ``path`` (the schema is structural)."""
    return _walk(schema, path, inside_meta=False, resource_root=True)


def _walk(s: Schema, path: str, *, inside_meta: bool, resource_root: bool, meta_field: str = "") -> list[Cause]:
    """``meta_field``: the resource-meta field (kind, apiVersion, metadata) ``s`` is, where it is one."""
    embedded = resource_root or bool(s.get("x-kubernetes-embedded-resource"))
    if s.get("x-kubernetes-embedded-resource"):
        inside_meta = False
    causes: list[Cause] = []
    default = s.get("default")
    if default is not None and not inside_meta:
        causes += _one_default(s, default, f"{path}.default", embedded)
    elif default is not None:
        causes += _meta_default(s, default, f"{path}.default", meta_field)
    items = s.get("items")
    if isinstance(items, dict):
        causes += _walk(items, f"{path}.items", inside_meta=inside_meta, resource_root=False)
    for name, child in (s.get("properties") or {}).items():
        if isinstance(child, dict):
            meta = inside_meta or (embedded and name in _META)
            causes += _walk(child, f"{path}.properties[{name}]", inside_meta=meta, resource_root=False,
                            meta_field=name if embedded and name in _META else "")
    return causes


def _meta_default(s: Schema, default: Any, path: str, meta_field: str) -> list[Cause]:
    """A default of a resource's kind, apiVersion or metadata must make valid metadata (a string kind, metadata
    that decodes), then is checked as any default (no pruning: metadata keeps what the schema does not name)."""
    problem = ""
    if meta_field in ("kind", "apiVersion") and not isinstance(default, str):
        problem = f"{meta_field}: Invalid value: {go_json(default)}: must be a string"
    elif meta_field == "metadata" and object_meta_error(default):
        problem = f"metadata: Invalid value: {go_json(default)}: {object_meta_error(default)}"
    if problem:
        return [Cause(path, f"Invalid value: {go_json(default)}: must result in valid metadata: {problem}")]
    errors = SchemaValidator(s, int_or_string_typed=False, every_format=True).errors(default)
    return [_under(path, error, schema_error=True) for error in errors]


def _one_default(s: Schema, default: Any, path: str, embedded: bool) -> list[Cause]:
    unknown = [field for field in structural.unknown_fields(default, s, resource_root=embedded)
               if not field.startswith("metadata.")]
    causes = []
    if unknown:
        causes.append(Cause(path, f"Invalid value: {go_json(default)}: must not have unknown fields"))
    coerced = _coerce_cause(default, s, path, embedded)
    if coerced is not None:
        return [*causes, coerced]
    embedded_errors = _embedded_causes(default, s, path, embedded)
    if embedded_errors:
        return causes + embedded_errors
    errors = SchemaValidator(s, int_or_string_typed=False, every_format=True).errors(default)
    if errors:
        return causes + [_under(path, error, schema_error=True) for error in errors]
    if s.get("x-kubernetes-validations") and declared_type(s, resource_root=embedded) is None:
        return [*causes, Cause(path, f"Invalid value: {go_quote(str(s.get('type') or ''))}: rule compiler"
                                     " initialization error: failed to convert to declType for CEL validation rules")]
    try:  # a rule that does not compile is its 'rule compile error' where the default meets it, in rule order
        rules = RuleNode.build(s, path, resource_root=embedded, check=_compile_error)
    except RuleCompileError:
        return causes
    if rules is not None:
        found = rules.validate(default, default, None)
        if not found:
            found = rules.validate(default, None, None)
        causes += [_under(path, error, schema_error=False) for error in found]
    return causes


def _under(prefix: str, error: FieldError, *, schema_error: bool) -> Cause:
    """An error about the default's value, at its path below ``prefix`` as the API server joins them:
    kube-openapi's names as children (``default.a``, ``default.[1]``), CEL's paths as written."""
    field = error.field
    if field == fielderrors.ROOT:
        where = prefix
    elif schema_error or not field.startswith("["):
        where = f"{prefix}.{field}"
    else:
        where = f"{prefix}{field}"
    cause = error.cause()
    return Cause(where, cause.message, cause.reason)


def _coerce_cause(value: Any, s: Schema | None, path: str, embedded: bool) -> Cause | None:
    """The first embedded resource in a default whose apiVersion or kind is not a string, or whose metadata does
    not decode into ObjectMeta (``objectmeta.Coerce``, which stops at the first)."""
    if s is None:
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if embedded or s.get("x-kubernetes-embedded-resource"):
                if key in ("apiVersion", "kind") and not isinstance(item, str):
                    return Cause(f"{path}.{key}", f"Invalid value: {go_value(item)}: must be a string")
                if key == "metadata" and object_meta_error(item):
                    return Cause(f"{path}.metadata", f"Invalid value: {go_value(item)}: {object_meta_error(item)}")
            child = _dict(s.get("properties")).get(key)
            if child is None and isinstance(s.get("additionalProperties"), dict):
                found = _coerce_cause(item, s["additionalProperties"], f"{path}[{key}]", False)
            else:
                found = _coerce_cause(item, child, f"{path}.{key}", False)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _coerce_cause(item, _dict(s.get("items")) or None, f"{path}[{index}]", False)
            if found is not None:
                return found
    return None


def _compile_error(node: Schema, resource_root: bool, rule: dict[str, Any]) -> str | None:
    """A rule's compile (type-check) error against its node, as the API server's validator of a default reports
    it; None when it compiles or has no declared type to check against."""
    declared = declared_type(node, resource_root=resource_root)
    checked = check_rule(str(rule.get("rule") or ""), "", declared) if declared is not None else None
    return checked.rule_error if checked is not None and checked.rule_error else None


_EMBEDDED = "x-kubernetes-embedded-resource"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _embedded_causes(value: Any, s: Schema | None, path: str, embedded: bool) -> list[Cause]:
    """A default holding an embedded resource (the root's default is one) names its apiVersion and kind, as the
    API server's objectmeta check of a default requires (``validateEmbeddedResource``)."""
    if s is None:
        return []
    causes: list[Cause] = []
    if isinstance(value, dict):
        if embedded or s.get("x-kubernetes-embedded-resource"):
            causes += _resource_causes(value, path)
        properties = _dict(s.get("properties"))
        extra = s.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                causes += _embedded_causes(item, properties[key], f"{path}.{key}", False)
            elif isinstance(extra, dict):
                causes += _embedded_causes(item, extra, f"{path}[{key}]", False)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            causes += _embedded_causes(item, _dict(s.get("items")) or None, f"{path}[{index}]", False)
    return causes


def _resource_causes(value: dict[str, Any], path: str) -> list[Cause]:
    causes = [Cause(f"{path}.{key}", "Required value", "FieldValueRequired")
              for key in ("apiVersion", "kind") if key not in value]
    for key in ("apiVersion", "kind"):
        if key not in value:
            continue
        item = value[key]
        if not isinstance(item, str):
            causes.append(Cause(f"{path}.{key}", f"Invalid value: {go_value(item)}: must be a string"))
        elif not item:
            causes.append(Cause(f"{path}.{key}", 'Invalid value: "": must not be empty'))
        elif key == "apiVersion" and item.count("/") > 1:
            causes.append(Cause(f"{path}.{key}", f"Invalid value: {go_quote(item)}: unexpected GroupVersion string:"
                                f" {item}"))
        elif key == "kind" and dns1035_errors(item.lower()):
            detail = ",".join(dns1035_errors(item.lower()))
            causes.append(Cause(f"{path}.{key}", f"Invalid value: {go_quote(item)}: may have mixed case, but should"
                                f" otherwise match: {detail}"))
    return causes
