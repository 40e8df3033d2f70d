"""CRD admission as the Kubernetes API server runs it, for in-process clusters and the emulator.

For one served version of one CustomResourceDefinition, ``CrdAdmission.admit`` takes an
object on its way into storage (create, update, patch, apply, status write) and returns what
the API server would store, or raises ``Invalid`` worded as the API server words it:

1. prune fields the schema does not know (``metadata``, ``apiVersion``, ``kind`` stay) and
   nulls of non-nullable properties;
2. apply ``default`` values, also inside defaults;
3. validate against the structural schema (``jsonschema``), then the ``x-kubernetes-list-type``
   invariants, then every ``x-kubernetes-validations`` rule (``celpy``) unless a schema error
   already blocks them, as the API server's hasBlockingErr does.

On an update (``old`` given) validation *ratchets*, as the API server does since 1.30: an error
at a field whose value is unchanged from the stored object, and that the stored object already
had, is dropped, so an object stored before a schema change can still be written (its status,
its finalizers) as long as the write leaves the invalid field alone.

Everything is compiled once per CrdAdmission and reused for every object, and each rule's verdicts are
remembered by what the rule reads of its inputs (``celreads``, ``memo``): the same verdicts and texts, without
interpreting the rule again. On an update, the stored object's own errors (what ratcheting compares with)
are computed only when the new object has errors. Not emulated:
ObjectMeta validation (the cluster's job), rules inside ``allOf`` branches, ``optionalOldSelf``,
CEL type checking at CRD creation (a rule naming a missing field fails when evaluated, not when the CRD is created)
and CEL cost budgets.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.admission import fielderrors, structural
from engine.cluster.admission.cel import RuleCompileError, RuleNode
from engine.cluster.admission.fielderrors import BLOCKING, FieldError
from engine.cluster.admission.memo import BUDGET_BYTES, VerdictMemo
from engine.cluster.admission.schema import SchemaValidator
from engine.cluster.api import Obj
from engine.cluster.patches import json_copy

__all__ = ["CrdAdmission", "admissions_for"]

_PERMISSIVE: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


class CrdAdmission:
    """Admission for one served version of one CRD."""

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

    def admit(self, obj: Obj, old: Obj | None = None) -> Obj:
        """Return a new object (inputs untouched): unknown fields pruned, defaults applied,
        then validated against the structural schema and every x-kubernetes-validations
        rule. `old` is the stored object on an update (None on create). Raises
        engine.cluster.api.Invalid whose .causes list every failing field (field path like
        `spec.rotation.interval`, message) and whose message is worded like the API
        server's, e.g.
        `Widget.example.io "billing" is invalid: spec.rotation.interval: Invalid value: "string":
        rotation.interval is 0s or at least 1m` (one line), the Invalid value being the schema type
        of the node as the API server shows it for rule failures,
        and for several causes `...is invalid: [cause1, cause2]`."""
        result = self._decode(obj)
        errors = self.errors(result, None if old is None else self._decode(old), ratchet=True)
        if errors:
            name = str((result.get("metadata") or {}).get("name") or "")
            raise fielderrors.invalid_object(self.group, self.kind, name, errors)
        return result

    def unknown_fields(self, obj: Obj) -> list[str]:
        """The paths of the fields of a request body the schema does not declare (pruning drops them):
        what ``fieldValidation=Strict`` refuses and ``Warn`` reports."""
        return structural.unknown_fields(obj, self.schema, resource_root=True)

    def _decode(self, obj: Obj) -> Obj:
        """A pruned, defaulted copy: what the API server makes of a request body, or of a stored
        object when it reads it back (so ``oldSelf`` sees defaults added since it was written)."""
        result: Obj = structural.prune(json_copy(obj), self.schema, resource_root=True)
        structural.default(result, self.schema)
        return result

    def errors(self, obj: Obj, old: Obj | None = None, *, ratchet: bool = False) -> list[FieldError]:
        """Every validation error of an already pruned and defaulted object, in the API server's order;
        with ``ratchet``, minus the errors of unchanged fields ``old`` already had."""
        kept = _Ratchet(obj, old) if ratchet and old is not None else None
        errors = self._validator.errors(obj)
        errors += structural.list_type_errors(obj, self.schema)
        if kept is not None and errors:
            stored = self._validator.errors(old) + structural.list_type_errors(old, self.schema)
            errors = kept.new_errors(errors, stored)
        if self._rules is not None:
            if any(error.type in BLOCKING for error in errors):
                errors.append(fielderrors.invalid(fielderrors.ROOT, None, fielderrors.NOT_CHECKED))
            else:
                rule_errors = self._rules.validate(obj, old, None)
                if kept is not None and rule_errors:
                    # The stored object's errors as an update that changes nothing would meet them, transition
                    # rules included (one that cannot even evaluate on an unchanged bad value is ratcheted too).
                    rule_errors = kept.new_errors(rule_errors, self._rules.validate(old, old, None))
                errors += rule_errors
        return errors


class _Ratchet:
    """Validation ratcheting: an error the stored object had, at a field the update leaves unchanged, is dropped."""

    def __init__(self, new: Obj, old: Obj | None) -> None:
        self.new = new
        self.old = old

    def new_errors(self, errors: list[FieldError], old_errors: list[FieldError]) -> list[FieldError]:
        before = {str(error) for error in old_errors}
        return [error for error in errors if not (str(error) in before and self._unchanged(error.field))]

    def _unchanged(self, field: str) -> bool:
        if field == fielderrors.ROOT:
            return self.new == self.old
        new, new_found = _value_at(self.new, field)
        old, old_found = _value_at(self.old, field)
        return new_found == old_found and new == old


_MISSING = object()


def _value_at(obj: Any, field: str) -> tuple[Any, bool]:
    """The value at a field path (``spec.items[0].name``), and whether it could be resolved.

    Map keys are joined with dots like properties, so a key containing dots is found by trying
    the longest run of parts first."""
    parts: list[str | int] = []
    for segment in field.split("."):
        head, *indexes = segment.split("[")
        if head:
            parts.append(head)
        for index in indexes:
            text = index.rstrip("]")
            parts.append(int(text) if text.isdigit() else text)
    found = _walk(obj, parts)
    return (None, False) if found is _MISSING else (found, True)


def _walk(node: Any, parts: list[str | int]) -> Any:
    if not parts:
        return node
    head = parts[0]
    if isinstance(head, int):
        if isinstance(node, list) and head < len(node):
            return _walk(node[head], parts[1:])
        return _MISSING
    if not isinstance(node, dict):
        return _MISSING
    for end in range(len(parts), 0, -1):
        run = parts[:end]
        if not all(isinstance(p, str) for p in run):
            continue
        key = ".".join(str(p) for p in run)
        if key in node:
            found = _walk(node[key], parts[end:])
            if found is not _MISSING:
                return found
    return _MISSING


def admissions_for(crd: Obj) -> dict[str, CrdAdmission]:
    """One CrdAdmission per served version, keyed by apiVersion `group/version`."""
    spec = crd.get("spec") or {}
    return {
        f"{spec.get('group', '')}/{version['name']}": CrdAdmission(crd, version["name"])
        for version in spec.get("versions") or []
        if version.get("served", True)
    }
