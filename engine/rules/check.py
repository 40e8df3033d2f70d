"""Stage 5 of compiling a rule file: every name an expression reads is defined where it is read,
and every condition type and reason written is declared."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from engine.expr.functions import FUNCTIONS
from engine.expr.jinja import ObjectTemplate, Text
from engine.expr.jmes import Query
from engine.expr.suggest import did_you_mean
from engine.rules import model
from engine.rules.errors import Position, RuleError
from engine.rules.outputs import check_output

CONTEXT_NAMES = frozenset({
    "order", "cluster", "clusters", "now", "status", "prefix", "childLabels", "childNamespace", "conditions",
    "steps",
})
"""Names every expression may read: the order, its cluster, the clock, and the naming the engine derives."""

OBJECT_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec", "status", "data", "stringData", "binaryData",
                           "type"})
"""Top-level fields of Kubernetes objects: a watch's query may read them whatever the pass calls a name."""


def pass_names_in_watch(inputs: Iterable[str], values: Iterable[str]) -> frozenset[str]:
    """Names of the pass that a watch's query cannot read (it reads the watched object only)."""
    return frozenset((CONTEXT_NAMES | set(inputs) | set(values)) - OBJECT_FIELDS)


def watch_queries(watch: model.CompiledWatch) -> list[tuple[str, Query]]:
    """The queries of a declared watch, each with its key: all evaluated on the watched object."""
    found = [(key, query) for key, query in (("name", watch.name_query), ("namespace", watch.namespace_query),
                                             ("index", watch.index_query), ("orders", watch.orders_query))
             if query is not None]
    return found + [("changed", query) for query in watch.changed]


def check_kind(kind: model.CompiledKind, errors: list[RuleError],
               locate: Callable[[object, str], Position | None] | None = None) -> None:
    """Every name read is defined; every condition type and reason written is declared."""
    defined = set(CONTEXT_NAMES) | set(kind.inputs) | set(kind.values)
    declared_types = set(kind.conditions.types)
    reasons = kind.conditions.reasons

    def names_of(expr: Query | Text | ObjectTemplate | None) -> Iterable[str]:
        return () if expr is None else (n for n in expr.names if n != "@")

    output_of = {output.value.name: step.name for step in kind.steps for output in step.outputs}

    def need(expr: Query | Text | ObjectTemplate | None, origin: Position, available: set[str], what: str) -> None:
        for name in sorted(set(names_of(expr)) - available):
            at = (locate(expr, name) if locate is not None else None) or origin  # at the name, when known
            hint = (f": an output of step {output_of[name]}, which only the steps after it (and its own done) read"
                    if name in output_of else did_you_mean(name, available))
            errors.append(RuleError(at, f"{what}: unknown name {name!r}{hint}"))

    def need_reason(reason: str | None, origin: Position) -> None:
        if reason is not None and reason not in reasons:
            errors.append(RuleError(origin, f"reason {reason!r} is not declared in conditions.reasons"
                                            f"{did_you_mean(reason, reasons)}"))

    def need_type(condition: str, origin: Position) -> None:
        if condition not in declared_types:
            errors.append(RuleError(origin, f"condition {condition!r} is not declared in conditions.types"
                                            f"{did_you_mean(condition, declared_types)}"))

    need(kind.children.prefix, kind.origin, defined, "children.prefix")
    need(kind.children.namespace, kind.origin, defined, "children.namespace")
    for item in kind.inputs.values():
        cluster_text = item.cluster if isinstance(item.cluster, Text) else None
        for text in (item.api_version, item.kind, item.namespace, item.object_name, cluster_text,
                     *sum(item.labels, ())):
            need(text, item.origin, defined, f"input {item.name}")
        need(item.where, item.origin, defined | {"item"}, f"input {item.name}.where")
        need(item.sort_by, item.origin, defined | {"item"}, f"input {item.name}.sortBy")
        need(item.error, item.origin, defined | {"error"}, f"input {item.name}.error")
    for value in kind.values.values():
        for expr in (value.query, value.text, *(r.when for r in value.rows), *(r.value for r in value.rows),
                     *(r.text for r in value.rows)):
            need(expr, value.origin, defined, f"value {value.name}")
    shared_seen: set[int] = set()
    for gate in kind.gates:
        need(gate.when, gate.origin, defined, f"{gate.name}.when")
        if gate.outcome:
            need(gate.outcome.message, gate.origin, defined, f"{gate.name}.message")
            need(gate.requeue.query, gate.origin, defined, f"{gate.name}.requeue")
            if gate.outcome.reason_text is not None:  # rendered per pass; checked against the declared reasons then
                need(gate.outcome.reason_text, gate.origin, defined, f"{gate.name}.reason")
            else:
                need_reason(gate.outcome.reason, gate.origin)
        # The rows of one gate's `verdicts` share its error and conditions: each mistake in them is reported once.
        if gate.error is not None and id(gate.error) not in shared_seen:
            need(gate.error.message, gate.origin, defined | {"error"}, f"{gate.name}.error")
            need_reason(gate.error.reason, gate.origin)
        if id(gate.conditions) not in shared_seen:
            for condition in gate.conditions:
                need_type(condition, gate.origin)
            for _type, own_reason, own_message in gate.own:
                need(own_message, gate.origin, defined, f"{gate.name}.conditions")
                need_reason(own_reason, gate.origin)
            for _type, only_when in gate.only_when:
                need(only_when, gate.origin, defined, f"{gate.name}.conditions")
        shared_seen.update(id(part) for part in (gate.error, gate.conditions) if part)
    bound_by_step: dict[str, set[str]] = {}
    outputs_so_far: set[str] = set()
    step_names = [s.name for s in kind.steps]
    for step in kind.steps:
        need_type(step.condition, step.origin)
        for req in step.requires:
            if req not in step_names[: step_names.index(step.name)]:
                errors.append(RuleError(step.origin, f"step {step.name} requires {req!r}, "
                                                          "which is not an earlier step"))
        before = defined | outputs_so_far  # what the step reads before its actions: values, earlier outputs
        available = set(before)
        for req in step.requires:
            available |= bound_by_step.get(req, set())
        for outcome in (step.skipped, step.otherwise):
            if outcome:
                need(outcome.message, outcome.origin, before, f"step {step.name}.skipped")
                need_reason(outcome.reason, outcome.origin)
        need(step.when, step.origin, before, f"step {step.name}.when")
        need(step.error.message, step.origin, available | {"error"}, f"step {step.name}.error")
        need_reason(step.error.reason, step.origin)
        for action in step.actions:
            _check_action(errors, action, available, need, need_reason)
            if action.bind:
                available.add(action.bind)
            for binding in action.bindings:
                available.add(binding.name)
        scope = set(available)  # an output reads the step's names and the outputs above it
        for output in step.outputs:
            check_output(output, step.name, scope, before, need)
            scope.add(output.value.name)
        available |= {output.value.name for output in step.outputs}
        outputs_so_far |= {output.value.name for output in step.outputs}
        need(step.done.message, step.done.origin, available, f"step {step.name}.done")
        need(step.done.requeue.query, step.done.origin, available, f"step {step.name}.done.requeue")
        need_reason(step.done.reason, step.done.origin)
        bound_by_step[step.name] = available - defined
    for outcome in kind.refresh:
        need(outcome.when, outcome.origin, defined, "result.refresh")
        need(outcome.requeue.query, outcome.origin, defined, "result.refresh")
    _check_teardown(kind, errors, defined, need, need_reason, need_type)
    if kind.index_query is not None:
        need(kind.index_query, kind.origin, {"order", "cluster"}, "indexKey")
    _check_watches(kind, errors, locate)


def _check_watches(kind: model.CompiledKind, errors: list[RuleError],
                   locate: Callable[[object, str], Position | None] | None) -> None:
    """A declared watch's query reads the watched object: a name of the pass there is a mistake (always null)."""
    pass_names = pass_names_in_watch(kind.inputs, kind.values)
    impure = sorted(name for name, fn in FUNCTIONS.items() if not fn.pure)
    queries = [("indexKey", kind.index_query, kind.index_origin)] if kind.index_query is not None else []
    for watch in kind.watches:
        if watch.mapping in ("reference", "orders", "index"):
            queries += [(f"watch {key}", query, watch.origin) for key, query in watch_queries(watch)]
        for query in (watch.ref_name_query, watch.ref_namespace_query):
            if query is not None:
                queries.append(("watch referencedBy", query, watch.origin))
                for name in sorted(query.names - {"order"}):
                    at = (locate(query, name) if locate is not None else None) or watch.origin
                    errors.append(RuleError(at, f"watch referencedBy: unknown name {name!r}: it reads the order "
                                                f"that names the {watch.kind} (order.spec...), nothing else"))
    for what, query, origin in queries:
        for name in sorted(query.functions & set(impure)):
            at = (locate(query, name) if locate is not None else None) or origin
            errors.append(RuleError(at, f"{what}: {name}() cannot be used here: it is evaluated outside any pass, "
                                        "on every event, and must answer the same for the same object"))
    for watch in kind.watches:
        if watch.mapping not in ("reference", "orders", "index"):
            continue
        for key, query in watch_queries(watch):
            for name in sorted(query.names & pass_names):
                at = (locate(query, name) if locate is not None else None) or watch.origin
                errors.append(RuleError(at, f"watch {key}: unknown name {name!r}: a watch's query reads the "
                                            f"{watch.kind} of the event (metadata, spec, status, ...), not the "
                                            "pass's names"))

def _check_teardown(kind: model.CompiledKind, errors: list[RuleError], defined: set[str], need: Any,
                    need_reason: Any, need_type: Any) -> None:
    """Teardown actions: names read are defined, reads name inputs or values, holds write declared conditions and
    reasons, action names are unique, and a patch guards only named actions that come after it."""
    teardown = kind.teardown
    need(teardown.patient_while, kind.origin, defined, "teardown.patientWhile")
    named: dict[str, int] = {}
    for index, action in enumerate(teardown.actions):
        what = f"teardown {action.op} action"
        if action.name is not None:
            if action.name in named:
                errors.append(RuleError(action.origin, f"{what}: the name {action.name!r} is used twice"))
            named[action.name] = index
        need(action.when, action.origin, defined, what)
        need(action.until, action.origin, defined, what)
        if action.op == "fail" and action.when is None:
            errors.append(RuleError(action.origin, f"{what}: without `when` it fails every pass, so the finalizer "
                                                   "is never released"))
        for name in action.reads:
            if name not in kind.inputs and name not in kind.values:
                errors.append(RuleError(action.origin, f"{what}: {name!r} is not an input or a value"))
        if action.op == "hold":
            assert action.hold is not None
            need(action.body, action.origin, defined, what)
            need(action.hold.message, action.origin, defined, what)
            need_type(action.condition, action.origin)
            need_reason(action.hold.reason, action.origin)
        cluster_text = action.cluster if isinstance(action.cluster, Text) else None
        for text in (action.object_name, action.namespace, action.message, cluster_text):
            need(text, action.origin, defined, what)
        for query in (action.where, *action.sort_by):
            need(query, action.origin, defined | {"item"}, what)
        if action.op == "patch":
            need(action.body, action.origin, defined | {"item"}, what)
        need(action.read_error, action.origin, defined | {"error"}, what)
        need(action.error, action.origin, defined | ({"error"} if action.op == "read" else {"error", "item"}), what)
    for index, action in enumerate(teardown.actions):
        for guarded in action.guards:
            if named.get(guarded, -1) <= index:
                errors.append(RuleError(action.origin, f"teardown {action.op} action guards {guarded!r}, "
                                                       "which is not the name of a later action"))


def _check_action(errors: list[RuleError], action: model.Action, available: set[str], need: Any,
                  need_reason: Any) -> None:
    what = f"{action.op} action"
    need(action.when, action.origin, available, what)
    need(action.cluster if isinstance(action.cluster, Text) else None, action.origin, available, f"{what} cluster")
    need(action.query, action.origin, available, what)
    need(action.each, action.origin, available, f"{what} forEach")
    need(action.template, action.origin, available | ({"item"} if action.each is not None else set()),
         f"{what} template")
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
        need(outcome.message, outcome.origin, available | ({"item"} if action.each is not None else set()), what)
        need(outcome.when, outcome.origin, available, what)
        need(outcome.requeue.query, outcome.origin, available, what)
        if outcome.reason_text is not None:  # rendered per pass; checked against the declared reasons then
            need(outcome.reason_text, outcome.origin, available, what)
        else:
            need_reason(outcome.reason, outcome.origin)
    for _, query in action.fields:
        need(query, action.origin, available, what)
    scope = set(available)
    for binding in action.bindings:
        for expr in (binding.query, binding.text, *(r.when for r in binding.rows), *(r.value for r in binding.rows),
                     *(r.text for r in binding.rows)):
            need(expr, binding.origin, scope, what)
        scope.add(binding.name)
