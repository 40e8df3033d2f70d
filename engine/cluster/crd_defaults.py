"""The API server's checks of the ``default`` values in a CRD schema (``ValidateDefaults``).

Each default outside a resource's metadata must be pruned already (no field the schema would drop), valid
against the schema of its node (types, enums, bounds, formats, required fields) and pass the node's
``x-kubernetes-validations`` rules, as if an object were created with it. Causes carry the API server's
paths: ``...properties[size].default`` for the value itself, ``...default.a`` or ``...default.[1]`` below it.
Defaults inside ``additionalProperties`` are not checked (the API server does not follow them).
"""

from __future__ import annotations

from typing import Any

from engine.cluster.admission import fielderrors, structural
from engine.cluster.admission.cel import RuleCompileError, RuleNode
from engine.cluster.admission.fielderrors import FieldError, go_json
from engine.cluster.admission.schema import SchemaValidator
from engine.cluster.api import Cause

Schema = dict[str, Any]
_META = ("metadata", "apiVersion", "kind")


def defaults_causes(schema: Schema, path: str) -> list[Cause]:
    """Every refused default in a version's schema at ``path`` (the schema is structural)."""
    return _walk(schema, path, inside_meta=False, resource_root=True)


def _walk(s: Schema, path: str, *, inside_meta: bool, resource_root: bool) -> list[Cause]:
    embedded = resource_root or bool(s.get("x-kubernetes-embedded-resource"))
    if s.get("x-kubernetes-embedded-resource"):
        inside_meta = False
    causes: list[Cause] = []
    default = s.get("default")
    if default is not None and not inside_meta:
        causes += _one_default(s, default, f"{path}.default", embedded)
    items = s.get("items")
    if isinstance(items, dict):
        causes += _walk(items, f"{path}.items", inside_meta=inside_meta, resource_root=False)
    for name, child in (s.get("properties") or {}).items():
        if isinstance(child, dict):
            meta = inside_meta or (embedded and name in _META)
            causes += _walk(child, f"{path}.properties[{name}]", inside_meta=meta, resource_root=False)
    return causes


def _one_default(s: Schema, default: Any, path: str, embedded: bool) -> list[Cause]:
    unknown = [field for field in structural.unknown_fields(default, s, resource_root=embedded)
               if not field.startswith("metadata.")]
    causes = []
    if unknown:
        causes.append(Cause(path, f"Invalid value: {go_json(default)}: must not have unknown fields"))
    errors = SchemaValidator(s, int_or_string_typed=False).errors(default)
    if errors:
        return causes + [_under(path, error, schema_error=True) for error in errors]
    try:
        rules = RuleNode.build(s, path, resource_root=embedded)
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
