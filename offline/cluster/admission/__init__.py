"""CRD admission as the Kubernetes API server runs it, for in-process clusters and the emulator.

For one served version of one CustomResourceDefinition, ``CrdAdmission.admit`` takes an object on its way into
storage (create, update, patch, apply, status write) and returns what the API server would store, or raises
``Invalid`` worded as the API server words it: unknown fields pruned, defaults applied, then the structural schema
(``jsonschema``), the ``x-kubernetes-list-type`` invariants and every ``x-kubernetes-validations`` rule (``celpy``)
checked, with validation ratcheting on an update as the API server's does. Everything is compiled once per
CrdAdmission, and each rule's verdicts are remembered by what the rule reads (``celreads``, ``memo``): the same
verdicts and texts, without interpreting the rule again. Not emulated: ObjectMeta validation (the cluster's job),
rules inside ``allOf`` branches, ``optionalOldSelf``, CEL type checking at CRD creation and CEL cost budgets.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.api import Obj
from engine.cluster.patches import json_copy
from offline.cluster.admission import fielderrors, structural
from offline.cluster.admission.cel import RuleCompileError, RuleError, RuleNode
from offline.cluster.admission.fielderrors import BLOCKING, FieldError
from offline.cluster.admission.memo import BUDGET_BYTES, VerdictMemo
from offline.cluster.admission.schema import SchemaValidator
from offline.cluster.admission.warnings import warn

__all__ = ["CrdAdmission", "admissions_for"]

Schema = dict[str, Any]

_PERMISSIVE: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


class CrdAdmission:
    """Admission for one served version of one CRD.

    For one served version of one CustomResourceDefinition, ``CrdAdmission.admit`` takes an object on its way into
    storage (create, update, patch, apply, status write) and returns what the API server would store, or raises
    ``Invalid`` worded as the API server words it:

    1. prune fields the schema does not know (``metadata``, ``apiVersion``, ``kind`` stay) and nulls of non-nullable
       properties;
    2. apply ``default`` values, also inside defaults;
    3. validate against the structural schema (``jsonschema``), then the ``x-kubernetes-list-type`` invariants, then
       every ``x-kubernetes-validations`` rule (``celpy``) unless a schema error already blocks them, as the API
       server's hasBlockingErr does.

    On an update (``old`` given) validation *ratchets*, as the API server does since 1.30: an error at a field whose
    value is unchanged from the stored object, and that the stored object already had, is dropped, so an object stored
    before a schema change can still be written (its status, its finalizers) as long as the write leaves the invalid
    field alone.

    Everything is compiled once per CrdAdmission and reused for every object, and each rule's verdicts are remembered
    by what the rule reads of its inputs (``celreads``, ``memo``): the same verdicts and texts, without interpreting
    the rule again. On an update, the stored object's own errors (what ratcheting compares with) are computed only
    when the new object has errors. Not emulated: ObjectMeta validation (the cluster's job), rules inside ``allOf``
    branches, ``optionalOldSelf``, CEL type checking at CRD creation (a rule naming a missing field fails when
    evaluated, not when the CRD is created) and CEL cost budgets.
    """

    def __init__(self, crd: Obj, version: str, *, memo_bytes: int = BUDGET_BYTES) -> None:
        """Compile the version's schema and rules; a rule that does not parse raises ``Invalid``
        for the CustomResourceDefinition, as the API server refuses such a CRD. ``memo_bytes`` bounds
        the memo of the rules' verdicts (0: every rule is evaluated every time)."""
        spec = crd.get("spec") or {}
        self.group: str = spec.get("group", "")
        self.kind: str = (spec.get("names") or {}).get("kind", "")
        self.version = version
        versions: list[Obj] = spec.get("versions") or []
        index = next((i for i, v in enumerate(versions) if v.get("name") == version), None)
        if index is None:
            raise ValueError(
                f"CustomResourceDefinition {crd.get('metadata', {}).get('name')!r} has no version {version!r}"
            )
        self.schema: dict[str, Any] = ((versions[index].get("schema") or {}).get("openAPIV3Schema")) or _PERMISSIVE
        self._validator = SchemaValidator(self.schema)
        self._status_validator: SchemaValidator | None = None
        self.memo = VerdictMemo(memo_bytes)
        """The verdicts of this version's rules, by what each reads of its inputs (``memo``, ``celreads``)."""
        try:
            self._rules = RuleNode.build(
                self.schema, f"spec.versions[{index}].schema.openAPIV3Schema", resource_root=True, memo=self.memo
            )
        except RuleCompileError as error:
            crd_name = (crd.get("metadata") or {}).get("name", "")
            bad = fielderrors.invalid(error.path, error.rule, error.reason)
            raise fielderrors.invalid_object(
                "apiextensions.k8s.io", "CustomResourceDefinition", crd_name, [bad]
            ) from error

    def admit(self, obj: Obj, old: Obj | None = None, *, status: bool = False, applied: bool = False) -> Obj:
        """Return a new object (inputs untouched): unknown fields pruned, defaults applied,
        then validated against the structural schema and every x-kubernetes-validations
        rule. `old` is the stored object on an update (None on create). Raises
        engine.cluster.api.Invalid whose .causes list every failing field (field path like
        `spec.rotation.interval`, message) and whose message is worded like the API
        server's, e.g.
        `Widget.example.io "billing" is invalid: spec.rotation.interval: Invalid value: "30s":
        rotation.interval is 0s or at least 1m` (one line), the Invalid value being the value a rule
        judged (omitted for objects and lists), and for several causes `...is invalid: [cause1, cause2]`.
        ``status``: a write of the status subresource, whose schema check is the status's alone. ``applied``: the
        result of a server-side apply, which the API server does not decode as a request body: nulls of fields
        that do not allow null stay (and are refused) unless a default replaces them."""
        result = self._decode(obj, keep_nulls=applied)
        errors = self.errors(result, None if old is None else self._decode(old), ratchet=True, status=status)
        if errors:
            name = str((result.get("metadata") or {}).get("name") or "")
            raise fielderrors.invalid_object(self.group, self.kind, name, errors)
        return result

    def apply_problems(self, obj: Obj) -> list[str]:
        """What typing an apply configuration finds, in structured-merge-diff's words: each undeclared field
        (``.spec.ports[name="a"].junk: field not declared in schema``) and repeated set or map-list entry."""
        return structural.apply_problems(obj, self.schema, resource_root=True)

    def unknown_fields(self, obj: Obj) -> list[str]:
        """The paths of the fields of a request body the schema does not declare (pruning drops them):
        what ``fieldValidation=Strict`` refuses and ``Warn`` reports."""
        return structural.unknown_fields(obj, self.schema, resource_root=True)

    def _decode(self, obj: Obj, *, keep_nulls: bool = False) -> Obj:
        """A pruned, defaulted copy: what the API server makes of a request body, or of a stored
        object when it reads it back (so ``oldSelf`` sees defaults added since it was written)."""
        result: Obj = structural.prune(json_copy(obj), self.schema, resource_root=True, keep_nulls=keep_nulls)
        structural.default(result, self.schema)
        return result

    def errors(self, obj: Obj, old: Obj | None = None, *, ratchet: bool = False,
               status: bool = False) -> list[FieldError]:
        """Every validation error of an already pruned and defaulted object, in the API server's order;
        with ``ratchet``, minus the errors of unchanged fields ``old`` already had. ``status``: only the status
        is checked against the schema (its causes at ``status.x``, named ``x`` in their messages, as the API
        server validates a status write); the list types and rules are the whole object's."""
        kept = _Ratchet(obj, old, self.schema) if ratchet and old is not None else None
        errors = self._schema_errors(obj, status)
        if kept is not None and errors:
            errors = kept.new_errors(errors, self._schema_errors(old, status))
        list_errors = structural.list_type_errors(obj, self.schema)
        if list_errors and not (kept is not None and structural.list_type_errors(old, self.schema)):
            errors += list_errors  # an update's list errors count only where the stored object had none
        if self._rules is not None:
            if any(error.type in BLOCKING for error in errors):
                errors.append(fielderrors.invalid(fielderrors.ROOT, None, fielderrors.NOT_CHECKED))
            else:
                rule_errors = self._rules.validate(obj, old, None)
                if kept is not None:
                    # A rule's failure where the rule's node is unchanged is ratcheted, told as a warning.
                    refused = []
                    for error in rule_errors:
                        if isinstance(error, RuleError) and error.node is not None and kept.unchanged(error.node):
                            warn(str(error))
                        else:
                            refused.append(error)
                    rule_errors = refused
                errors += rule_errors
        return errors


    def _schema_errors(self, obj: Obj | None, status: bool) -> list[FieldError]:
        if not status:
            return self._validator.errors(obj)
        if not isinstance(obj, dict) or "status" not in obj:
            return []
        if self._status_validator is None:
            status_schema = (self.schema.get("properties") or {}).get("status")
            self._status_validator = SchemaValidator(status_schema if isinstance(status_schema, dict) else {})
        return [_under_status(error) for error in self._status_validator.errors(obj["status"])]


def _under_status(error: FieldError) -> FieldError:
    """An error of the status's own check, at its place in the object (the message keeps the status's name)."""
    field = "status" if error.field == fielderrors.ROOT else f"status.{error.field}"
    return FieldError(error.type, field, error.value, error.detail)


class _Ratchet:
    """Validation ratcheting: an error the stored object had, in a part of it the update leaves unchanged, is
    dropped. The part is the deepest node on the error's path that correlates with the stored object as the API
    server correlates them: object fields and map values present in both, items of ``list-type: map`` lists by
    their keys; an item of any other list does not correlate, so the list is the part that must be unchanged."""

    def __init__(self, new: Obj, old: Obj | None, schema: Schema) -> None:
        self.new = new
        self.old = old
        self.schema = schema

    def new_errors(self, errors: list[FieldError], old_errors: list[FieldError]) -> list[FieldError]:
        before = {str(error) for error in old_errors}
        return [error for error in errors if not (str(error) in before and self.unchanged(error.field))]

    def unchanged(self, field: str) -> bool:
        new, old = _correlated(self.new, self.old, self.schema, _parts(field) if field != fielderrors.ROOT else [])
        return bool(new == old)


def _parts(field: str) -> list[str | int]:
    """A field path's steps (``spec.items[0].name``: spec, items, 0, name)."""
    parts: list[str | int] = []
    for segment in field.split("."):
        head, *indexes = segment.split("[")
        if head:
            parts.append(head)
        for index in indexes:
            text = index.rstrip("]")
            parts.append(int(text) if text.isdigit() else text)
    return parts


def _correlated(new: Any, old: Any, schema: Schema, parts: list[str | int]) -> tuple[Any, Any]:
    """The new and old values of the deepest node along ``parts`` that correlates. Map keys are joined with dots
    like properties, so a key containing dots is found by trying the longest run of parts first."""
    if not parts:
        return new, old
    head = parts[0]
    if isinstance(head, int):
        if schema.get("x-kubernetes-list-type") != "map" or not isinstance(new, list) or not isinstance(old, list):
            return new, old
        if head >= len(new) or not isinstance(new[head], dict):
            return new, old
        keys = schema.get("x-kubernetes-list-map-keys") or []
        identity = [new[head].get(key) for key in keys]
        match = next((item for item in old if isinstance(item, dict) and [item.get(k) for k in keys] == identity),
                     None)
        if match is None:
            return new, old
        return _correlated(new[head], match, schema.get("items") or {}, parts[1:])
    if not isinstance(new, dict) or not isinstance(old, dict):
        return new, old
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for end in range(len(parts), 0, -1):
        run = parts[:end]
        if not all(isinstance(p, str) for p in run):
            continue
        key = ".".join(str(p) for p in run)
        if key in new and key in old:
            child = properties.get(key) or (extra if isinstance(extra, dict) else None)
            if child is None:
                return new, old
            return _correlated(new[key], old[key], child, parts[end:])
    return new, old


def admissions_for(crd: Obj) -> dict[str, CrdAdmission]:
    """One CrdAdmission per served version, keyed by apiVersion `group/version`."""
    spec = crd.get("spec") or {}
    return {
        f"{spec.get('group', '')}/{version['name']}": CrdAdmission(crd, version["name"])
        for version in spec.get("versions") or []
        if version.get("served", True)
    }
