"""Teardown of a deleting order: the rule file's actions in order, then the finalizer.

``read`` actions read inputs before anything is deleted: a failed read ends the pass with its error
and writes nothing. A ``hold`` that holds writes its condition and comes back; nothing is deleted.
``patch`` and ``delete`` act on the selected objects; a failed write is joined into the pass's
errors. While ``patientWhile`` holds, an error stops the actions (``onError: stop``) and the
finalizer stays until a pass issues no delete; a ``phase`` boundary waits for everything before it
to be gone. Once it no longer holds, every action runs and the finalizer is released whatever
failed (fail-open), the errors logged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.cluster.api import ApiError, NotFound, Obj
from engine.cluster.patches import merge_patch
from engine.expr.errors import ExprError
from engine.expr.functions import FUNCTIONS, remember_secrets
from engine.outcome import PassError, Result
from engine.reconcile.context import (
    PassContext,
    ReadError,
    RuleRuntimeError,
    as_delta,
    sort_key,
    truthy,
)
from engine.reconcile.transitions import log_release
from engine.rules.model import TeardownAction

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


def _go_quote(text: str) -> str:
    return str(FUNCTIONS["go_quote"].impl(text))


class ActionFailed(Exception):
    """A patch or delete action failed; the text is the rule's error text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


@dataclass
class Progress:
    """What the actions did so far in this pass."""

    issued: int = 0
    stopped: list[str] = field(default_factory=list)
    """Errors of actions that stop a patient teardown, in order."""
    continued: list[str] = field(default_factory=list)
    """Errors of actions that let it go on (`onError: continue`, a patch that guards), in order."""
    skipped: set[str] = field(default_factory=set)
    patient: bool | None = None
    waiting: bool = False
    """A phase boundary stopped the actions: the finalizer stays and the pass comes back."""

    @property
    def errors(self) -> list[str]:
        return [*self.stopped, *self.continued]


def run_teardown(ctx: PassContext, persist: Callable[[PassContext, Result], Result]) -> Result:
    """Run the teardown; only a hold writes status (through ``persist``)."""
    kind = ctx.kind
    finalizers = list(ctx.order["metadata"].get("finalizers") or [])
    if kind.finalizer not in finalizers:
        return Result()
    progress = Progress()
    try:
        for action in kind.teardown.actions:
            if action.name is not None and action.name in progress.skipped:
                continue
            if action.when is not None and not truthy(ctx.evaluate(action.when)):
                continue
            if action.op == "read":
                read(ctx, action)
            elif action.op == "hold":
                assert action.body is not None and action.hold is not None
                if truthy(ctx.evaluate(action.body)):
                    ctx.conditions.set(action.condition, False, action.hold.reason, ctx.render(action.hold.message))
                    return persist(ctx, Result(requeue_after=as_delta(action.hold.requeue.seconds)))
            elif action.op == "log":
                assert action.message is not None
                ctx.log.log(_LEVELS.get(action.level, 20), ctx.render(action.message), extra=ctx.log_fields())
            elif action.op == "fail":
                assert action.message is not None
                return Result(error=PassError("\n".join([*progress.errors, ctx.render(action.message)])))
            else:
                if progress.patient is None:
                    progress.patient = truthy(ctx.evaluate(kind.teardown.patient_while))
                if action.op == "phase":
                    if progress.patient and (progress.errors or not phase_passed(ctx, action, progress)):
                        progress.waiting = True
                        break
                    continue
                try:
                    progress.issued += write(ctx, action)
                except ActionFailed as failed:
                    if action.keep_going:
                        progress.continued.append(failed.text)
                        progress.skipped.update(action.guards)
                        continue
                    progress.stopped.append(failed.text)
                    if progress.patient:
                        break
        patient = progress.patient if progress.patient is not None else truthy(
            ctx.evaluate(kind.teardown.patient_while))
    except ReadError as err:
        return Result(error=PassError(err.text))
    except (RuleRuntimeError, ExprError) as err:
        return Result(error=PassError(ctx.rule_failed(err)))
    if progress.errors:
        text = "\n".join(progress.errors)
        if patient:
            return Result(error=PassError(text))
        ctx.log.info(f"best-effort teardown of {kind.kind} children failed; releasing the finalizer anyway",
                     extra=ctx.log_fields(error=text))
    elif patient and (progress.issued or progress.waiting):
        return Result(requeue_after=as_delta(kind.teardown.patient_requeue.seconds))
    return release(ctx, finalizers)


def phase_passed(ctx: PassContext, action: TeardownAction, progress: Progress) -> bool:
    """Whether a patient teardown goes past this boundary: its `until` holds, or (without one) nothing before it
    issued a delete in this pass."""
    if action.until is not None:
        return truthy(ctx.evaluate(action.until))
    return not progress.issued


def read(ctx: PassContext, action: TeardownAction) -> None:
    """Read the named inputs or values now; a failure ends the pass with the action's error text."""
    for name in action.reads:
        try:
            ctx.scope[name]
        except ReadError as err:
            if action.error is None:
                raise
            raise ReadError(ctx.render(action.error, ctx.scope.child(error=str(err.cause))), err.cause) from None


def select(ctx: PassContext, action: TeardownAction) -> list[Obj]:
    """The objects an action acts on: listed (or got by name), the order's children only, filtered and sorted."""
    namespace = ctx.render(action.namespace) if action.namespace is not None else None
    name = ctx.render(action.object_name) if action.object_name is not None else None
    try:
        cluster = ctx.cluster_for(action.cluster)
        if name is not None:
            try:
                found = [remember_secrets(cluster.get(action.api_version, action.kind, namespace or None, name))]
            except NotFound:
                return []
        else:
            labels = ctx.children_selector(action.api_version, action.kind) if action.children else None
            try:
                found = remember_secrets(
                    cluster.list(action.api_version, action.kind, namespace or None, labels=labels).items)
            except NotFound:  # the kind is not served: none of it exists
                return []
    except ApiError as err:
        raise ActionFailed(read_error_text(ctx, action, namespace, name, err)) from None
    if action.children:
        found = [obj for obj in found if ctx.is_child(obj)]
    if action.where is not None:
        where = action.where
        found = [obj for obj in found if truthy(where.evaluate(ctx.scope.child(item=obj)))]

    def order_key(obj: Obj) -> tuple[Any, ...]:
        keys = (sort_key(q.evaluate(ctx.scope.child(item=obj))) for q in action.sort_by)
        return (*keys, obj["metadata"]["name"])

    return sorted(found, key=order_key)


def write(ctx: PassContext, action: TeardownAction) -> int:
    """Patch or delete every selected object; the number of deletes issued. ActionFailed on the first error."""
    selected = select(ctx, action)
    if not selected:
        return 0
    try:
        cluster = ctx.cluster_for(action.cluster)
    except ApiError as err:
        raise ActionFailed(write_error_text(ctx, action, selected[0], err)) from None
    issued = 0
    for obj in selected:
        meta = obj["metadata"]
        address = (action.api_version, action.kind, meta.get("namespace") or None, meta["name"])
        try:
            if action.op == "patch":
                assert action.body is not None
                body = action.body.evaluate(ctx.scope.child(item=obj))
                if isinstance(body, dict) and body and merge_patch(obj, body) != obj:
                    cluster.patch(*address, body)
            else:
                cluster.delete(*address)
                issued += 1
        except NotFound:
            continue
        except ApiError as err:
            raise ActionFailed(write_error_text(ctx, action, obj, err)) from None
    return issued


def read_error_text(ctx: PassContext, action: TeardownAction, namespace: str | None, name: str | None,
                    err: ApiError) -> str:
    if action.read_error is not None:
        return ctx.render(action.read_error, ctx.scope.child(error=str(err)))
    if name is not None:
        where = f"{namespace}/{name}" if namespace else name
        return f"reading {action.kind} {where}: {err}"
    return f"listing {action.kind}: {err}"


def write_error_text(ctx: PassContext, action: TeardownAction, obj: Obj, err: ApiError) -> str:
    if action.error is not None:
        return ctx.render(action.error, ctx.scope.child(item=obj, error=str(err)))
    verb = "patching" if action.op == "patch" else "deleting"
    return f"{verb} {action.kind} {_go_quote(obj['metadata']['name'])}: {err}"


def release(ctx: PassContext, finalizers: list[str]) -> Result:
    kind = ctx.kind
    remaining = [f for f in finalizers if f != kind.finalizer]
    try:
        ctx.order_cluster.patch(kind.api_version, kind.kind, ctx.request.namespace, ctx.request.name,
                                {"metadata": {"finalizers": remaining or None,
                                              "resourceVersion": ctx.order["metadata"].get("resourceVersion")}})
    except NotFound:
        return Result()
    except ApiError as err:
        return Result(error=PassError(f"removing {kind.kind} finalizer: {err}"))
    log_release(ctx.log, ctx.log_fields(), kind.finalizer)
    return Result()


__all__ = ["ReadError", "run_teardown"]
