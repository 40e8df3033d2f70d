"""Stage 5 of compiling a rule file: every name an expression reads is defined where it is read,
and every condition type and reason written is declared."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.expr.jinja import ObjectTemplate, Text
from engine.expr.jmes import Query
from engine.rules import model
from engine.rules.errors import Position, RuleError

CONTEXT_NAMES = frozenset({
    "order", "cluster", "now", "status", "prefix", "childLabels", "childNamespace", "conditions", "steps",
})
"""Names every expression may read: the order, its cluster, the clock, and the naming the engine derives."""


def check_kind(kind: model.CompiledKind, errors: list[RuleError]) -> None:
    """Every name read is defined; every condition type and reason written is declared."""
    defined = set(CONTEXT_NAMES) | set(kind.inputs) | set(kind.values)
    declared_types = set(kind.conditions.types)
    reasons = kind.conditions.reasons

    def names_of(expr: Query | Text | ObjectTemplate | None) -> Iterable[str]:
        return () if expr is None else (n for n in expr.names if n != "@")

    def need(expr: Query | Text | ObjectTemplate | None, origin: Position, available: set[str], what: str) -> None:
        for name in sorted(set(names_of(expr)) - available):
            errors.append(RuleError(origin, f"{what}: unknown name {name!r}"))

    def need_reason(reason: str | None, origin: Position) -> None:
        if reason is not None and reason not in reasons:
            errors.append(RuleError(origin, f"reason {reason!r} is not declared in conditions.reasons"))

    def need_type(condition: str, origin: Position) -> None:
        if condition not in declared_types:
            errors.append(RuleError(origin, f"condition {condition!r} is not declared in conditions.types"))

    need(kind.children.prefix, kind.origin, defined, "children.prefix")
    need(kind.children.namespace, kind.origin, defined, "children.namespace")
    for item in kind.inputs.values():
        for text in (item.api_version, item.kind, item.namespace, item.object_name, *sum(item.labels, ())):
            need(text, item.origin, defined, f"input {item.name}")
        need(item.where, item.origin, defined | {"item"}, f"input {item.name}.where")
        need(item.sort_by, item.origin, defined | {"item"}, f"input {item.name}.sortBy")
        need(item.error, item.origin, defined | {"error"}, f"input {item.name}.error")
    for value in kind.values.values():
        for expr in (value.query, *(r.when for r in value.rows), *(r.value for r in value.rows)):
            need(expr, value.origin, defined, f"value {value.name}")
    for gate in kind.gates:
        need(gate.when, gate.origin, defined, f"{gate.name}.when")
        if gate.outcome:
            need(gate.outcome.message, gate.origin, defined, f"{gate.name}.message")
            need(gate.requeue.query, gate.origin, defined, f"{gate.name}.requeue")
            need_reason(gate.outcome.reason, gate.origin)
        if gate.error is not None:
            need(gate.error.message, gate.origin, defined | {"error"}, f"{gate.name}.error")
            need_reason(gate.error.reason, gate.origin)
        for condition in gate.conditions:
            need_type(condition, gate.origin)
    bound_by_step: dict[str, set[str]] = {}
    step_names = [s.name for s in kind.steps]
    for step in kind.steps:
        need_type(step.condition, step.origin)
        for req in step.requires:
            if req not in step_names[: step_names.index(step.name)]:
                errors.append(RuleError(step.origin, f"step {step.name} requires {req!r}, "
                                                          "which is not an earlier step"))
        available = set(defined)
        for req in step.requires:
            available |= bound_by_step.get(req, set())
        for outcome in (step.skipped,):
            if outcome:
                need(outcome.message, outcome.origin, defined, f"step {step.name}.skipped")
                need_reason(outcome.reason, outcome.origin)
        need(step.error.message, step.origin, available | {"error"}, f"step {step.name}.error")
        need_reason(step.error.reason, step.origin)
        for action in step.actions:
            _check_action(errors, action, available, need, need_reason)
            if action.bind:
                available.add(action.bind)
            for binding in action.bindings:
                available.add(binding.name)
        need(step.done.message, step.done.origin, available, f"step {step.name}.done")
        need(step.done.requeue.query, step.done.origin, available, f"step {step.name}.done.requeue")
        need_reason(step.done.reason, step.done.origin)
        bound_by_step[step.name] = available - defined
    for outcome in kind.refresh:
        need(outcome.when, outcome.origin, defined, "result.refresh")
        need(outcome.requeue.query, outcome.origin, defined, "result.refresh")
    for hold in kind.teardown.holds:
        need(hold.when, hold.origin, defined, "teardown hold")
        need(hold.message, hold.origin, defined, "teardown hold")
        need_type(hold.condition, hold.origin)
        need_reason(hold.reason, hold.origin)
    need(kind.teardown.patient_while, kind.origin, defined, "teardown.patientWhile")
    for sweep in kind.teardown.sweeps:
        for q in (*sweep.sort_by, sweep.before, sweep.before_when):
            need(q, sweep.origin, defined | {"item"}, "teardown sweep")
    for delivered in kind.teardown.delivered:
        need(delivered.name, delivered.origin, defined, "teardown delivered")
    if kind.index_query is not None:
        need(kind.index_query, kind.origin, {"order"}, "indexKey")

def _check_action(errors: list[RuleError], action: model.Action, available: set[str], need: Any,
                  need_reason: Any) -> None:
    what = f"{action.op} action"
    need(action.when, action.origin, available, what)
    need(action.query, action.origin, available, what)
    need(action.template, action.origin, available, f"{what} template")
    if action.error:
        need(action.error.message, action.origin, available | {"error"}, what)
        need(action.error.wrap, action.origin, available | {"error"}, what)
        need_reason(action.error.reason, action.origin)
    if action.op == "patch" and action.target not in available:
        errors.append(RuleError(action.origin, f"{what}: unknown name {action.target!r}"))
    for outcome in (action.outcome, *action.otherwise, action.foreign):
        if outcome is None:
            continue
        if action.op == "log":
            need(outcome.message, outcome.origin, available, what)
            continue
        need(outcome.message, outcome.origin, available, what)
        need(outcome.when, outcome.origin, available, what)
        need(outcome.requeue.query, outcome.origin, available, what)
        need_reason(outcome.reason, outcome.origin)
    for _, query in action.fields:
        need(query, action.origin, available, what)
    scope = set(available)
    for binding in action.bindings:
        for expr in (binding.query, *(r.when for r in binding.rows), *(r.value for r in binding.rows)):
            need(expr, binding.origin, scope, what)
        scope.add(binding.name)
