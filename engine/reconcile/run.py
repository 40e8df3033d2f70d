"""One pass over one order: the runtime's only entry into reconcile.

Phases: 1. resolve the order's cluster and read the order; 2. a deleting order goes to
teardown; 3. gates in order (the first that holds ends the pass; the finalizer is installed
where the rules place it); 4. steps in order, each writing its condition; 5. the result: the
shortest requeue any step asked for, capped by the first matching refresh; 6. the status,
written once and only when it changed.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from engine.clock import Clock
from engine.cluster.api import ApiError, NotFound, Obj
from engine.cluster.patches import json_copy
from engine.cluster.registry import ClusterNotFound, ClusterSet
from engine.expr.cluster_state import clusters_in_view
from engine.expr.errors import ExprError
from engine.expr.ownership import CHILD_TEST
from engine.outcome import EventNote, PassError, Request, Result, StepOutcome
from engine.reconcile.actions import Stop, run_action, verdict_reason
from engine.reconcile.context import PassContext, ReadError, RuleRuntimeError, as_delta, requeue_seconds, truthy
from engine.reconcile.outputs import publish, publish_defaults
from engine.reconcile.teardown import run_teardown
from engine.reconcile.transitions import log_condition_changes
from engine.rules.model import Action, CompiledKind, Gate, Step

LOG = logging.getLogger("engine.reconcile")


def run_pass(kind: CompiledKind, request: Request, *, clusters: ClusterSet, clock: Clock,
             log: logging.Logger | logging.LoggerAdapter[Any] | None = None) -> Result:
    """Reconcile one order once. API errors come back in Result.error; nothing here retries."""
    with clusters_in_view(clusters):  # cluster_registered() and cluster_reachable() answer from this set
        return _run_pass(kind, request, clusters=clusters, clock=clock, log=log)


def _run_pass(kind: CompiledKind, request: Request, *, clusters: ClusterSet, clock: Clock,
              log: logging.Logger | logging.LoggerAdapter[Any] | None) -> Result:
    logger = log or LOG
    extra = {"order": f"{request.namespace}/{request.name}", "kind": kind.kind, "cluster": request.cluster}
    try:
        order_cluster = clusters.resolve(request.cluster)
    except ClusterNotFound:
        logger.info(f"the cluster the {kind.kind} lives on does not resolve; skipping it", extra=extra)
        return Result()
    try:
        order = order_cluster.get(kind.api_version, kind.kind, request.namespace, request.name)
    except NotFound:
        logger.debug(f"{kind.kind} not found; likely deleted", extra=extra)
        return Result()
    except ApiError as err:
        return Result(error=PassError(f"fetching {kind.kind}: {err}"))
    ctx = PassContext(kind, request, order, clusters=clusters, order_cluster=order_cluster, clock=clock, log=logger)
    shown = CHILD_TEST.set(ctx.is_child)  # is_child() answers with this order's ownership test
    try:
        if order.get("metadata", {}).get("deletionTimestamp"):
            return _noted(ctx, run_teardown(ctx, persist_status))
        result = run_gates_and_steps(ctx)
    except (RuleRuntimeError, ExprError) as err:
        result = Result(error=PassError(ctx.rule_failed(err)))
    except ReadError as err:
        result = Result(error=PassError(str(err)))
    except ApiError as err:
        result = Result(error=PassError(str(err)))
    finally:
        CHILD_TEST.reset(shown)
    if result.error is not None:
        logger.info("pass ended in an error", extra={**extra, "error": str(result.error)})
    return _noted(ctx, persist_status(ctx, result))


def run_gates_and_steps(ctx: PassContext) -> Result:
    kind = ctx.kind
    for gate in kind.gates:
        if gate.finalizer:
            finalizers = list(ctx.order["metadata"].get("finalizers") or [])
            if kind.finalizer in finalizers:
                continue
            patched = ctx.order_cluster.patch(
                kind.api_version, kind.kind, ctx.request.namespace, ctx.request.name,
                {"metadata": {"finalizers": [*finalizers, kind.finalizer],
                              "resourceVersion": ctx.order["metadata"].get("resourceVersion")}})
            ctx.set_order(patched)
            return Result(requeue_after=as_delta(gate.requeue.seconds))
        try:
            verdict = run_gate(ctx, gate)
        except (ExprError, RuleRuntimeError) as err:
            # A gate that cannot be decided on the data it met: its conditions say which rule failed and why;
            # the pass fails (retried), and nothing past the gate runs.
            text = ctx.rule_failed(err)
            message = f"the rules failed: {text}"
            for condition in gate.conditions or kind.conditions.types:
                ctx.conditions.set(condition, False, gate.failed_reason, message)
            return Result(error=PassError(text), event=EventNote(gate.failed_reason, message))
        if verdict is not None:
            return verdict

    result = Result()
    for step in kind.steps:
        step_result = run_step(ctx, step)
        result = result.merge(step_result)
        ctx.refresh_progress()
        if step_result.error is not None:
            return result
    for refresh in kind.refresh:
        if refresh.when is None or truthy(ctx.evaluate(refresh.when)):
            cap = requeue_seconds(ctx, refresh.requeue)
            if cap is not None:
                result = result.merge(Result(requeue_after=as_delta(cap)))
            break
    return result


def run_gate(ctx: PassContext, gate: Gate) -> Result | None:
    """One gate that is not the finalizer's: its verdict when it holds (or its read failed), else None."""
    assert gate.when is not None and gate.outcome is not None
    try:
        holds = truthy(ctx.evaluate(gate.when))
    except ReadError as err:
        if gate.error is None:
            raise
        message = ctx.render(gate.error.message, ctx.scope.child(error=err.text))
        reason = gate.error.reason or (gate.outcome.reason if gate.outcome.reason_text is None else "Error")
        for condition in gate_conditions(ctx, gate):
            ctx.conditions.set(condition, False, reason, message)
        wrap = ctx.render(gate.error.wrap, ctx.scope.child(error=err.text)) if gate.error.wrap else err.text
        return Result(error=PassError(wrap), event=EventNote(reason, message))
    if not holds:
        return None
    reason = verdict_reason(ctx, gate.outcome)
    message = ctx.render(gate.outcome.message)
    for condition in gate_conditions(ctx, gate):
        own_reason, own_message = gate.texts(condition)
        ctx.conditions.set(condition, False, own_reason or reason,
                           message if own_message is None else ctx.render(own_message))
    refused = EventNote(reason, message)
    if gate.fail:
        return Result(error=PassError(message), event=refused)
    return Result(requeue_after=as_delta(requeue_seconds(ctx, gate.outcome.requeue)), event=refused)


def gate_conditions(ctx: PassContext, gate: Gate) -> list[str]:
    """The conditions a gate writes: those it lists (else every type), less those whose `when` does not hold."""
    only_when = dict(gate.only_when)
    return [condition for condition in gate.conditions or ctx.kind.conditions.types
            if condition not in only_when or truthy(ctx.evaluate(only_when[condition]))]


def run_step(ctx: PassContext, step: Step) -> Result:
    """Run one step; a rule of it that fails on the data it met (its `when`, an action, a message) writes the
    step's condition False with the failure, and fails the pass with the rule's place, expression and cause."""
    started = time.perf_counter()
    try:
        return _run_step(ctx, step, started)
    except (ExprError, RuleRuntimeError) as err:
        # Never a stale verdict beside a True one: the step's condition says the rules failed, and why.
        text = ctx.rule_failed(err)
        reason = step.error.reason or "Error"
        message = f"the rules failed: {text}"
        ctx.conditions.set(step.condition, False, reason, message)
        ctx.steps_done[step.name] = False
        seconds = time.perf_counter() - started
        return Result(error=PassError(text), outcomes=[StepOutcome(step.metric, step.condition, seconds, True)],
                      event=EventNote(reason, message))


def _run_step(ctx: PassContext, step: Step, started: float) -> Result:
    """Run one step's actions; its condition is True only when every action went through."""
    if any(not ctx.steps_done.get(name) for name in step.requires):
        ctx.steps_done[step.name] = False
        if step.outputs:
            publish_defaults(ctx, step)
        if step.skipped is not None:
            ctx.conditions.set(step.condition, False, step.skipped.reason, ctx.render(step.skipped.message))
        return Result()
    verdict: Stop | None = None
    recorded: Stop | None = None
    current: Action | None = None
    try:
        if step.when is not None and not truthy(ctx.evaluate(step.when)):
            return skip_step(ctx, step)
        for action in step.actions:
            current = action
            verdict = run_action(ctx, action)
            if verdict is not None and verdict.keep_going:
                recorded = recorded or verdict
                verdict = None
            if verdict is not None:
                break
    except (ApiError, ReadError) as err:
        text = err.text if isinstance(err, ReadError) else str(err)
        report = current.error if current is not None and current.error is not None else step.error
        scope = ctx.scope.child(error=text)
        message = ctx.render(report.message, scope)
        reason = report.reason or step.error.reason or "Error"
        if report.write_condition:
            ctx.conditions.set(step.condition, False, reason, message)
        wrap = ctx.render(report.wrap, scope) if report.wrap is not None else message
        ctx.steps_done[step.name] = False
        seconds = time.perf_counter() - started
        return Result(error=PassError(wrap), outcomes=[StepOutcome(step.metric, step.condition, seconds, True)],
                      event=EventNote(reason, message))
    seconds = time.perf_counter() - started
    outcome = StepOutcome(step.metric, step.condition, seconds, False)
    if verdict is not None:
        ctx.steps_done[step.name] = False
        if step.outputs:
            publish_defaults(ctx, step)
        shown = recorded or verdict  # the first verdict of the step is the one the condition shows
        ctx.conditions.set(step.condition, False, shown.reason, shown.message)
        result = Result(requeue_after=as_delta(verdict.requeue), outcomes=[outcome], event=_refusal(shown))
        return result.merge(Result(as_delta(recorded.requeue))) if recorded else result
    if step.outputs:
        publish(ctx, step)
    ctx.steps_done[step.name] = True
    done_requeue = as_delta(requeue_seconds(ctx, step.done.requeue))
    if recorded is not None:  # `continue: true`: the step went through but keeps the first recorded verdict
        ctx.conditions.set(step.condition, False, recorded.reason, recorded.message)
        return Result(requeue_after=done_requeue, outcomes=[outcome], event=_refusal(recorded)).merge(
            Result(as_delta(recorded.requeue)))
    ctx.conditions.set(step.condition, True, step.done.reason, ctx.render(step.done.message))
    return Result(requeue_after=done_requeue, outcomes=[outcome])


def _refusal(verdict: Stop) -> EventNote | None:
    """A `refuse` verdict as an Event note; a wait is none (a healthy order waits, and records nothing)."""
    return EventNote(verdict.reason, verdict.message) if verdict.refusal else None


def _noted(ctx: PassContext, result: Result) -> Result:
    """The pass's Event note on the order: its refusal or failure (any error, worded by the error when no
    condition did), with the order's uid; none on the converge path."""
    note = result.event
    if note is None and result.error is not None:
        note = EventNote("ReconcileError", str(result.error))
    if note is None:
        return result
    result.event = dataclasses.replace(note, uid=str(ctx.order.get("metadata", {}).get("uid") or ""))
    return result


def skip_step(ctx: PassContext, step: Step) -> Result:
    """A step whose `when` does not hold: its condition as `otherwise` (or `skipped`) says; done when True."""
    outcome = step.otherwise or step.skipped
    assert outcome is not None
    if step.outputs:
        publish_defaults(ctx, step)
    ctx.conditions.set(step.condition, outcome.status, outcome.reason, ctx.render(outcome.message))
    ctx.steps_done[step.name] = outcome.status
    return Result()


def persist_status(ctx: PassContext, result: Result) -> Result:
    """Write the status once, only when it changed; a failed write turns the result into an error."""
    status: Obj = json_copy(ctx.before_status)
    for name, value in ctx.status_fields.items():
        if value is None:
            status.pop(name, None)
        else:
            status[name] = value
    status["conditions"] = ctx.conditions.finalize()
    status["observedGeneration"] = int(ctx.order.get("metadata", {}).get("generation") or 0)
    if status == ctx.before_status:
        return result
    updated = {**ctx.order, "status": status}  # the write's body: the order is not changed
    try:
        ctx.order_cluster.update_status(updated)
    except ApiError as err:
        error = PassError(f"{result.error}; updating status: {err}" if result.error else f"updating status: {err}")
        return Result(error=error, outcomes=result.outcomes, event=result.event)
    if ctx.log.isEnabledFor(logging.INFO):  # the one check a status write pays when info lines are off
        log_condition_changes(ctx.log, ctx.log_fields(), ctx.before_status.get("conditions") or (),
                              status["conditions"])
    return result
