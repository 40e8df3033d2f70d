"""``x-kubernetes-validations``: CEL rules compiled once per CRD version, run over each object.

Mirrors apiextensions-apiserver's schema/cel validator: a rule sees its node's value as
``self`` (property names escaped the Kubernetes way), transition rules (those naming
``oldSelf``) run only on update where an old value correlates (object properties, map
values, items of ``x-kubernetes-list-type: map`` by key), and failures are reported at the
node's path with the schema type as the invalid value.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from offline.cluster.admission import celduration, celreads, fielderrors
from offline.cluster.admission.celfuncs import FUNCTIONS
from offline.cluster.admission.celnames import escape
from offline.cluster.admission.fielderrors import ErrorType, FieldError
from offline.cluster.admission.memo import PASSED, Key, Verdict, VerdictMemo

Schema = dict[str, Any]

_ENVIRONMENT = celpy.Environment()
_COMPILING = threading.Lock()
"""Guards the shared parser; evaluation builds fresh state per call and needs no lock."""


class RuleCompileError(ValueError):
    """A rule that does not compile; ``path`` names it inside the CRD version's schema."""

    def __init__(self, path: str, rule: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.rule, self.reason = path, rule, reason


@dataclass(frozen=True)
class Rule:
    """One compiled ``x-kubernetes-validations`` entry, with the memo of its verdicts."""

    text: str
    program: celpy.Runner
    message: str
    message_program: celpy.Runner | None
    reason: str | None
    field_path: str
    transition: bool
    reads: dict[str, celreads.Trie | None]
    """What the rule and its messageExpression read of each variable they name (celreads)."""
    memo: VerdictMemo | None = None
    number: int = 0
    has_message: bool = False
    """The rule has a ``message``, blank or not (the API server then uses it, trimmed, however empty)."""
    optional_old_self: bool = False
    """``optionalOldSelf``: the rule also runs without an old value, ``oldSelf`` then an optional (``hasValue()``)."""

    @classmethod
    def compile(cls, spec: dict[str, Any], path: str, memo: VerdictMemo | None = None) -> Rule:
        text = str(spec.get("rule", ""))
        program = _compile(text, f"{path}.rule")
        message_expression = spec.get("messageExpression")
        message_program = None
        if message_expression and not uses_optional_syntax(str(message_expression)):
            message_program = _compile(message_expression, f"{path}.messageExpression")
        return cls(
            text=text,
            program=program,
            message=str(spec.get("message") or "").strip(),
            message_program=message_program,
            reason=spec.get("reason"),
            field_path=str(spec.get("fieldPath") or "").lstrip("."),
            transition=_names_old_self(program),
            reads=celreads.reads(program.ast, *([message_program.ast] if message_program else [])),
            memo=memo,
            number=memo.number() if memo is not None else 0,
            has_message=bool(spec.get("message")),
            optional_old_self=spec.get("optionalOldSelf") is True,
        )

    @property
    def described(self) -> str:
        """ruleErrorString: the message if there is one, else the rule."""
        return self.message if self.has_message else self.text.strip()

    def verdict(self, value: Any, old: Any, activation: Callable[[], dict[str, Any]]) -> Verdict:
        """The verdict on ``self`` = value (and ``oldSelf`` = old, unless None): remembered when the values
        at the paths the rule reads were judged before, else evaluated on the activation (made on demand)."""
        key = self._key(value, old)
        found = self.memo.get(key) if self.memo is not None and key is not None else None
        if found is not None:
            return found
        judged = self.judge(activation())
        if self.memo is not None and key is not None:
            self.memo.put(key, judged)
        return judged

    def judge(self, activation: dict[str, Any]) -> Verdict:
        """Evaluate the rule (and on failure its messageExpression) now."""
        try:
            outcome = self.program.evaluate(activation)
        except CELEvalError as error:
            return Verdict(passed=False, detail=_evaluation_error(error, self), evaluation_error=True)
        if _is_true(outcome):
            return PASSED
        detail = _message(self, activation) or (self.message if self.has_message else
                                                f"failed rule: {self.text.strip()}")
        return Verdict(passed=False, detail=detail)

    def _key(self, value: Any, old: Any) -> Key | None:
        """The memo's key: the rule's number and the text of what it reads of each variable."""
        if self.memo is None:
            return None
        seen = repr(celreads.project(value, self.reads["self"])) if "self" in self.reads else ""
        before: str | None = ""
        if "oldSelf" in self.reads:
            before = None if old is None else repr(celreads.project(old, self.reads["oldSelf"]))
        return (self.number, seen, before)


@dataclass
class RuleNode:
    """The rules at one schema node and the nodes below that hold rules."""

    schema: Schema
    resource_root: bool = False
    rules: list[Rule | str] = field(default_factory=list)
    """The node's rules in order; a string is the compile error of one that does not compile (a CRD's default is
    checked with those in place, each reported where it is met)."""
    properties: dict[str, RuleNode] = field(default_factory=dict)
    additional: RuleNode | None = None
    items: RuleNode | None = None

    @classmethod
    def build(
        cls, schema: Schema, path: str, *, resource_root: bool = False, memo: VerdictMemo | None = None,
        check: Callable[[Schema, bool, dict[str, Any]], str | None] | None = None,
    ) -> RuleNode | None:
        """Compile every rule at and below ``schema`` (their verdicts kept in ``memo``); None when there is none.
        ``check(node, resource_root, rule)``, when given, is a rule's compile error or None; a rule with one
        stays as that error."""
        node = cls(schema, resource_root=resource_root)
        for index, spec in enumerate(schema.get("x-kubernetes-validations") or []):
            refused = check(schema, resource_root, spec) if check is not None else None
            if refused is not None:
                node.rules.append(refused)
                continue
            try:
                node.rules.append(Rule.compile(spec, f"{path}.x-kubernetes-validations[{index}]", memo))
            except RuleCompileError:
                if not uses_optional_syntax(str(spec.get("rule", ""))):
                    raise
        for name, child in (schema.get("properties") or {}).items():
            sub = cls.build(child, f"{path}.properties[{name}]", resource_root=_embedded(child), memo=memo,
                            check=check)
            if sub is not None:
                node.properties[name] = sub
        if isinstance(schema.get("additionalProperties"), dict):
            node.additional = cls.build(schema["additionalProperties"], f"{path}.additionalProperties", memo=memo,
                                        check=check)
        if isinstance(schema.get("items"), dict):
            items = schema["items"]
            node.items = cls.build(items, f"{path}.items", resource_root=_embedded(items), memo=memo, check=check)
        has_any = node.rules or node.properties or node.additional or node.items
        return node if has_any else None

    def validate(self, value: Any, old: Any, path: str | None) -> list[FieldError]:
        """Failures of every rule at and below this node; ``path`` None is the object's root."""
        if value is None:
            return []
        errors = self._run_rules(value, old, path)
        if isinstance(value, dict):
            correlate = self.schema.get("x-kubernetes-map-type", "granular") in ("granular", "atomic") and isinstance(
                old, dict)
            for name, child in self.properties.items():
                if name in value:
                    errors += child.validate(value[name], old.get(name) if correlate else None, _child(path, name))
            if self.additional is not None:
                for key, item in value.items():
                    if key not in (self.schema.get("properties") or {}):
                        before = old.get(key) if correlate else None
                        errors += self.additional.validate(item, before, f"{path or ''}[{key}]")
        elif isinstance(value, list) and self.items is not None:
            olds = _correlate_items(self.schema, value, old)
            for index, item in enumerate(value):
                errors += self.items.validate(item, olds[index], f"{path or ''}[{index}]")
        return errors

    def _run_rules(self, value: Any, old: Any, path: str | None) -> list[FieldError]:
        if not self.rules:
            return []
        type_name = "" if self.schema.get("x-kubernetes-int-or-string") else str(self.schema.get("type", ""))
        where = path or fielderrors.ROOT
        made: list[dict[str, Any]] = []

        def activation() -> dict[str, Any]:
            """The variables as CEL values, converted once per node and only when a rule is evaluated."""
            if not made:
                made.append({"self": to_cel(value, self.schema, resource_root=self.resource_root)})
                if old is not None:
                    made[0]["oldSelf"] = to_cel(old, self.schema, resource_root=self.resource_root)
            return made[0]

        def optional_activation() -> dict[str, Any]:
            """For an ``optionalOldSelf`` rule: ``oldSelf`` an optional, empty without an old value."""
            found = dict(activation())
            found["oldSelf"] = CelOptional(found.get("oldSelf"), old is not None)
            return found

        errors: list[FieldError] = []
        unconvertible = self.schema.get("x-kubernetes-int-or-string") and (
            isinstance(value, bool) or not isinstance(value, int | str))
        for rule in self.rules:
            if isinstance(rule, str):
                errors.append(RuleError.of(fielderrors.invalid(where, type_name, f"rule compile error: {rule}"), None))
                continue
            if rule.transition and old is None and not rule.optional_old_self:
                continue
            if unconvertible and ("self" in rule.reads or "oldSelf" in rule.reads):
                errors.append(RuleError.of(fielderrors.invalid(
                    where, type_name, "invalid data, expected XIntOrString value to be"
                    f" either a string or integer evaluating rule: {rule.described}"), None))
                continue
            verdict = rule.verdict(value, old, optional_activation if rule.optional_old_self else activation)
            if verdict.passed:
                continue
            if verdict.evaluation_error:
                errors.append(RuleError.of(fielderrors.invalid(where, type_name, verdict.detail), None))
                continue
            target = _child(path, rule.field_path) if rule.field_path else where
            shown = fielderrors.OMITTED if self.schema.get("type") in ("object", "array") else value
            errors.append(RuleError.of(_for_reason(rule.reason, target, shown, verdict.detail),
                                       None if rule.transition else where))
        return errors


@dataclass(frozen=True)
class RuleError(FieldError):
    """An error of a rule. ``node``: the path of the schema node whose rule it is, where an update that leaves
    that node unchanged ratchets the error (the API server then tells it as a warning); None for an error it
    never ratchets: a rule reading ``oldSelf``, or one that could not be evaluated."""

    node: str | None = None

    @classmethod
    def of(cls, error: FieldError, node: str | None) -> RuleError:
        return cls(error.type, error.field, error.value, error.detail, node)


class CelOptional:
    """CEL's optional value, as ``oldSelf`` is to an ``optionalOldSelf`` rule (``hasValue()``, ``value()``,
    ``orValue(x)``)."""

    def __init__(self, value: Any, present: bool) -> None:
        self.value, self.present = value, present

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CelOptional) and (self.present, self.value) == (other.present, other.value)

    def __hash__(self) -> int:
        return hash(self.present)


# ---------------------------------------------------------------------------
# Values: JSON as the API server hands it to CEL.


def to_cel(value: Any, schema: Schema, *, resource_root: bool = False) -> Any:
    """The CEL value of a JSON value typed by its schema node (escaped property names, formats); a value of
    another type than its schema's is the API server's error value, which fails a rule that reads it."""
    if value is None:
        return None
    wrong = _mistyped(value, schema)
    if wrong is not None:
        return CELEvalError(wrong)
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.DoubleType(value) if schema.get("type") == "number" else celtypes.IntType(value)
    if isinstance(value, float):
        return celtypes.DoubleType(value)
    if isinstance(value, str):
        return _string(value, schema)
    if isinstance(value, list):
        items = schema.get("items")
        if not items:
            return json_to_cel(value)
        return celtypes.ListType([to_cel(item, items, resource_root=_embedded(items)) for item in value])
    if isinstance(value, dict):
        return _object(value, schema, resource_root)
    return json_to_cel(value)


_GO_TYPE = ((bool, "bool"), (int, "int64"), (float, "float64"), (str, "string"), (dict, "map[string]interface {}"),
            (list, "[]interface {}"))


def _mistyped(value: Any, schema: Schema) -> str | None:
    """The API server's words for a JSON value its schema node's type does not take (UnstructuredToVal)."""
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string") or not kind:
        return None
    if kind in ("object", "array"):
        if isinstance(value, dict if kind == "object" else list):
            return None
        wanted_kind = "a map" if kind == "object" else "an array"
        return f"invalid data, expected {wanted_kind} for the provided schema with type={kind}"
    wanted = {"string": (str, "string"), "number": (int | float, "float"), "integer": (int, "int"),
              "boolean": (bool, "bool")}.get(str(kind))
    if wanted is None or (isinstance(value, wanted[0]) and (kind == "boolean" or not isinstance(value, bool))):
        return None
    got = next(name for python, name in _GO_TYPE if isinstance(value, python))
    return f"invalid data, expected {wanted[1]}, got {got}"


def _string(value: str, schema: Schema) -> Any:
    fmt = schema.get("format") if schema.get("type") == "string" else None
    try:
        if fmt in ("date-time", "datetime"):
            return celtypes.TimestampType(value)
        if fmt == "duration":
            return celduration.parse(value)
    except ValueError:
        pass
    return celtypes.StringType(value)


def _object(value: dict[str, Any], schema: Schema, resource_root: bool) -> Any:
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    if not properties and not resource_root:
        if isinstance(additional, dict):
            embedded = _embedded(additional)
            return celtypes.MapType(
                {celtypes.StringType(k): to_cel(v, additional, resource_root=embedded) for k, v in value.items()}
            )
        return json_to_cel(value)
    fields: dict[Any, Any] = {}
    for key, item in value.items():
        if resource_root and key in ("apiVersion", "kind") and isinstance(item, str):
            fields[celtypes.StringType(key)] = celtypes.StringType(item)
        elif resource_root and key == "metadata" and isinstance(item, dict):
            meta = {k: celtypes.StringType(item[k]) for k in ("name", "generateName") if isinstance(item.get(k), str)}
            fields[celtypes.StringType(key)] = celtypes.MapType({celtypes.StringType(k): v for k, v in meta.items()})
        elif key in properties and (name := escape(key)) is not None:
            child = properties[key]
            fields[celtypes.StringType(name)] = to_cel(item, child, resource_root=_embedded(child))
    return celtypes.MapType(fields)


# ---------------------------------------------------------------------------
# Helpers.


def _compile(source: str, path: str) -> celpy.Runner:
    try:
        with _COMPILING:
            return _ENVIRONMENT.program(_ENVIRONMENT.compile(source), functions=FUNCTIONS)
    except CELParseError as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else "syntax error"
        raise RuleCompileError(path, source, f"compilation failed: {reason}") from error


def uses_optional_syntax(source: str) -> bool:
    """Whether a rule is written with CEL's optional syntax (``.?``, ``[?``, ``{?``), which celpy cannot parse:
    such a rule is not evaluated here (the API server does evaluate it)."""
    return _OPTIONAL_SYNTAX.search(source) is not None


_OPTIONAL_SYNTAX = re.compile(r"\.\s*\?|\[\s*\?|\{\s*\?")


def _is_true(outcome: Any) -> bool:
    """Only the boolean true passes; 1 or a non-empty string do not."""
    return outcome is True or (isinstance(outcome, celtypes.BoolType) and bool(outcome))


def _names_old_self(program: celpy.Runner) -> bool:
    return any(str(ident.children[0]) == "oldSelf" for ident in program.ast.find_data("ident"))


def _message(rule: Rule, activation: dict[str, Any]) -> str:
    """The messageExpression's text, or "" when there is none or it fails (the API server falls back)."""
    if rule.message_program is None:
        return ""
    try:
        text = rule.message_program.evaluate(activation)
    except CELEvalError:
        return ""
    return str(text).strip() if isinstance(text, str) and str(text).strip() and "\n" not in str(text) else ""


def _for_reason(reason: str | None, path: str, value: Any, detail: str) -> FieldError:
    """A failed rule's error: the value it judged (omitted for objects and lists) and its message."""
    if reason == "FieldValueForbidden":
        return FieldError(ErrorType.FORBIDDEN, path, "", detail)
    if reason == "FieldValueRequired":
        return fielderrors.required(path, detail)
    if reason == "FieldValueDuplicate":
        return FieldError(ErrorType.DUPLICATE, path, value)
    return fielderrors.invalid(path, value, detail)


def _evaluation_error(error: CELEvalError, rule: Rule) -> str:
    """cel-go's wording for the runtime error, framed as the API server frames it."""
    text = str(error.args[0]) if error.args else str(error)
    kind = error.args[1] if len(error.args) > 1 else None
    inner = error.args[2] if len(error.args) > 2 else None
    if kind is TypeError or "overload" in text:
        return (
            "'no such overload': call arguments did not match a supported operator, function or macro signature "
            f"for rule: {rule.described}"
        )
    if text.startswith("no such member in mapping: "):
        key = text.removeprefix("no such member in mapping: ")
        text = f"no such key: {_unquote(key)}"
    elif text.startswith("undeclared reference to "):
        text = text.split(" (in activation", 1)[0]
    elif kind is ZeroDivisionError:
        text = "modulus by zero" if "modulus" in text and "divide" not in text else "division by zero"
    elif kind is IndexError:
        text = "index out of bounds"
    elif kind is ValueError and inner:
        text = str(inner[0])
    return f"{text} evaluating rule: {rule.described}"


def _unquote(key: str) -> str:
    match = re.fullmatch(r"(?:StringType\()?'(.*)'\)?", key)
    return match.group(1) if match else key


def _correlate_items(schema: Schema, items: list[Any], old: Any) -> list[Any]:
    """The old item for each new one: by key for ``list-type: map``, none otherwise."""
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(old, list):
        return [None] * len(items)
    keys: list[str] = schema.get("x-kubernetes-list-map-keys") or []

    def identity(item: Any) -> Any:
        return tuple(repr(item.get(key)) for key in keys) if isinstance(item, dict) else None

    by_key = {identity(item): item for item in old if identity(item) is not None}
    return [by_key.get(identity(item)) if identity(item) is not None else None for item in items]


def _child(path: str | None, name: str) -> str:
    return f"{path}.{name}" if path else name


def _embedded(schema: Schema) -> bool:
    return bool(schema.get("x-kubernetes-embedded-resource"))
