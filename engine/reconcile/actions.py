"""The actions a step runs, one function each; every write is compared with the live object first.

Write verbs (docs/rules.md lists them): ``apply`` is Server-Side Apply (forced, the kind's
field manager), ``ensure`` is create, ``patch`` is a JSON merge patch, ``delete`` is delete.
An apply or patch that would not change the live object is not sent, so a converged pass
writes nothing; an apply that would drop a field the kind's field manager owns from its last
apply (a key no longer rendered) is sent, and SSA removes that field.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from typing import Any, Literal

from engine.cluster import ssa
from engine.cluster.api import (
    NO_OBJECT_VERSION,
    AlreadyExists,
    ApiError,
    Cluster,
    Conflict,
    Invalid,
    NotCached,
    NotFound,
    NotHeld,
    Obj,
)
from engine.cluster.patches import merge_patch
from engine.expr.functions import address_only, controlled_by, remember_secrets
from engine.reconcile.context import PassContext, RuleRuntimeError, Scope, requeue_seconds, truthy, walk_objects
from engine.rules.model import Action, ClusterScope, Outcome


@dataclass(frozen=True)
class Stop:
    """The step ends here with its condition False."""

    reason: str
    message: str
    requeue: float | None
    keep_going: bool = False
    """The verdict is recorded and the step goes on (`continue: true`)."""
    refusal: bool = False
    """A `refuse` action's verdict (recorded as a Warning Event), not a wait."""


class Refused(ApiError):
    """A write the engine refuses itself: a live object of a child's name that is not the order's child."""

    code, reason = 409, "Refused"


def contains(live: Any, want: Any) -> bool:
    """Whether ``live`` already holds every field of ``want`` (maps by key, lists element-wise, scalars equal)."""
    if isinstance(want, dict):
        if not isinstance(live, dict):
            return False
        for key, value in want.items():
            if key not in live:
                return False
            if type(value) is str:  # most fields: a string holds only the same string (issue 11: no call)
                if live[key] != value:
                    return False
            elif not contains(live[key], value):
                return False
        return True
    if isinstance(want, list):
        return isinstance(live, list) and len(live) == len(want) and all(map(contains, live, want))
    if isinstance(want, bool) or isinstance(live, bool):
        return live is want
    return bool(live == want)


def stop(ctx: PassContext, outcome: Outcome, keep_going: bool = False, scope: Scope | None = None) -> Stop:
    return Stop(verdict_reason(ctx, outcome, scope), ctx.render(outcome.message, scope),
                requeue_seconds(ctx, outcome.requeue), keep_going)


def verdict_reason(ctx: PassContext, outcome: Outcome, scope: Scope | None = None) -> str:
    """The verdict's reason: as written, or rendered from the pass and then held to the declared reasons."""
    if outcome.reason_text is None:
        return outcome.reason
    reason = ctx.render(outcome.reason_text, scope)
    if reason not in ctx.kind.conditions.reasons:
        raise RuleRuntimeError(f"{outcome.origin}: reason {outcome.reason!r} rendered {reason!r}, which is not "
                               "declared in conditions.reasons")
    return reason


def _address(obj: Obj) -> tuple[str, str, str | None, str]:
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace") or None, meta["name"]


def _live(ctx: PassContext, cluster_scope: ClusterScope, obj: Obj) -> Obj | None:
    """The stored object of ``obj``'s name. The labels ``obj`` carries tell a cluster that caches its kind
    only by label that its cache answers alone: an object of ours would be there (decision 19)."""
    return _looked_up(ctx, cluster_scope, obj)[0]


Doubt = Literal["", "unlabelled", "elsewhere"]
"""Why a None from ``_looked_up`` may be wrong: "" (it is not), "unlabelled" (a label-scoped cache missed it: an
object without the labels may hold the name, decision 19), "elsewhere" (a shard member's caches missed it: another
member may have stamped one, decision 0075)."""


def _looked_up(ctx: PassContext, cluster_scope: ClusterScope, obj: Obj) -> tuple[Obj | None, Doubt]:
    """(the stored object of ``obj``'s name or None, and the doubt a None carries)."""
    carries = tuple(((obj.get("metadata") or {}).get("labels") or {}).keys())
    try:
        return remember_secrets(ctx.cluster_for(cluster_scope).get(*_address(obj), carries=carries)), ""
    except NotHeld:
        return None, "elsewhere"
    except NotCached:
        return None, "unlabelled"
    except NotFound:
        return None, ""


def _refuse_foreign(ctx: PassContext, live: Obj | None) -> None:
    if live is not None and not ctx.is_child(live):
        _api_version, kind, namespace, name = _address(live)
        raise Refused(f"refusing to adopt pre-existing {kind} {namespace}/{name}: it was not created by this order")


def run_action(ctx: PassContext, action: Action) -> Stop | None:
    """Run one action; a Stop ends the step, None goes on. API errors propagate to the step."""
    if action.when is not None and not truthy(ctx.evaluate(action.when)):
        return None
    return _HANDLERS[action.op](ctx, action)


def _apply(ctx: PassContext, action: Action) -> Stop | None:
    if action.each is None:
        return _apply_one(ctx, action)
    elements = ctx.evaluate(action.each)
    if elements is not None and not isinstance(elements, list):
        raise RuleRuntimeError(f"{action.origin}: forEach gave {type(elements).__name__}, not a list")
    stored: list[Obj] = []
    recorded: Stop | None = None  # the first verdict that lets the step go on (`foreign` with `continue: true`)
    for element in elements or ():
        verdict = _apply_one(ctx, action, ctx.scope.child(item=element), stored)
        if verdict is not None and not verdict.keep_going:
            return verdict
        recorded = recorded or verdict
    if action.bind:
        ctx.scope[action.bind] = stored
    return recorded


def _apply_one(ctx: PassContext, action: Action, scope: Scope | None = None,
               stored: list[Obj] | None = None) -> Stop | None:
    """One object rendered (in ``scope``: the pass, or an element of forEach) and applied; ``stored`` collects
    what forEach binds."""
    assert action.template is not None
    rendered = ctx.render_object(action.template, scope)
    if not action.status_subresource:
        rendered = ctx.stamped(rendered)  # before the lookup: the stamp is a label its caches select by
    live, doubt = _looked_up(ctx, action.cluster, rendered)
    if action.adopt == "owned":
        if doubt:
            created, live = _written_unless_taken(ctx, action, rendered, apply=False)
            if created is not None:
                _bind(ctx, action, created, stored)
                return None
        if live is not None and not controlled_by(live, ctx.order):
            if action.foreign is not None:  # a refusal, as the `refuse` it replaces (an Event where recorded)
                if action.bind:
                    ctx.scope[action.bind] = None
                return replace(stop(ctx, action.foreign, action.foreign_keep_going, scope), refusal=True)
            _api_version, kind, namespace, name = _address(live)
            raise Refused(f"refusing to adopt pre-existing {kind} {namespace}/{name}: it is not controlled by this "
                          "order")
    elif action.adopt == "children":
        if action.once:
            return _apply_once(ctx, action, rendered, live, scope, stored)
        if doubt == "elsewhere" and not action.status_subresource:
            created, live = _written_unless_taken(ctx, action, rendered, apply=True)
            if created is not None:
                _bind(ctx, action, created, stored)
                return None
        if action.foreign is not None and live is not None and not ctx.is_child(live):
            return _foreign(ctx, action, scope)
        _refuse_foreign(ctx, live)
    want = {"status": rendered.get("status") or {}} if action.status_subresource else rendered
    if live is not None and contains(live, want) and not ssa.drops_owned(
            live, rendered, ctx.kind.field_manager, subresource="status" if action.status_subresource else None):
        result = live
    else:
        result = remember_secrets(ctx.cluster_for(action.cluster).apply(
            rendered, field_manager=ctx.kind.field_manager, force=True, status=action.status_subresource))
    _bind(ctx, action, result, stored)
    return None


def _foreign(ctx: PassContext, action: Action, scope: Scope | None = None) -> Stop:
    """An apply's `foreign` verdict; with `continue: true` it is recorded as a refusal (an Event, as the `refuse`
    it replaces) and the step goes on with `as` bound to null."""
    assert action.foreign is not None
    if action.bind:
        ctx.scope[action.bind] = None
    verdict = stop(ctx, action.foreign, action.foreign_keep_going, scope)
    return replace(verdict, refusal=True) if action.foreign_keep_going else verdict


def _apply_once(ctx: PassContext, action: Action, rendered: Obj, live: Obj | None, scope: Scope | None = None,
                stored: list[Obj] | None = None) -> Stop | None:
    """`once: true`: an absent child is created (no apply); a live child is bound as it is, never written
    again; a live object of that name that is not the order's child gets the `foreign` verdict (or fails the
    step). A create that answers AlreadyExists reads the object live and tests it the same way."""
    if live is None:
        cluster = ctx.cluster_for(action.cluster)
        try:
            live = remember_secrets(cluster.create(rendered, field_manager=ctx.kind.field_manager))
        except AlreadyExists:
            live = remember_secrets(cluster.get(*_address(rendered), live=True))
    if not ctx.is_child(live):
        if action.foreign is not None:
            return _foreign(ctx, action, scope)
        _refuse_foreign(ctx, live)
    _bind(ctx, action, live, stored)
    return None


def _bind(ctx: PassContext, action: Action, obj: Obj, stored: list[Obj] | None) -> None:
    """Bind the stored object to the apply's `as` name, or collect it for forEach's list."""
    if stored is not None:
        stored.append(obj)
    elif action.bind:
        ctx.scope[action.bind] = obj


def _written_unless_taken(ctx: PassContext, action: Action, rendered: Obj, *,
                          apply: bool) -> tuple[Obj | None, Obj | None]:
    """An object no cache holds, written at once with no read first, on the condition that its name is free:
    created (``adopt: owned``: an apply would take over an unlabelled object of that name, decision 31), or, with
    ``apply``, applied naming a resourceVersion no object carries (a shard member's ``adopt: children`` child: its
    fields the field manager's Apply entry, as one replica's apply makes them, decision 0075). (the written object,
    None); when the name is taken after all (an object no cache holds, another member's child, or one the watch
    has not delivered yet): (None, that object as the API server has it), for the ownership test."""
    cluster = ctx.cluster_for(action.cluster)
    try:
        if apply:
            absent_only = {**rendered, "metadata": {**rendered["metadata"], "resourceVersion": NO_OBJECT_VERSION}}
            written = cluster.apply(absent_only, field_manager=ctx.kind.field_manager, force=True)
        else:
            written = cluster.create(rendered, field_manager=ctx.kind.field_manager)
        return remember_secrets(written), None
    except (AlreadyExists, Conflict):
        return None, remember_secrets(cluster.get(*_address(rendered), live=True))


def _ensure(ctx: PassContext, action: Action) -> Stop | None:
    """Create once; a live object keeps every value it has (a generated secret is never rewritten).

    A live object is *claimed*: the rendered labels are merged into its own (others kept) and a
    field it lacks or holds empty is filled from the template, in one merge patch; nothing else
    of it is written, and no owner reference is set. Not found where the cluster caches the kind
    by the rendered labels, the object is created at once: a name someone else took (an unlabelled
    object the cache cannot hold) answers AlreadyExists, and that object is read and claimed."""
    assert action.template is not None
    cluster = ctx.cluster_for(action.cluster)
    with address_only():  # learn the name first: a generated secret is made only when it is needed
        addressed = ctx.render_object(action.template)
    addressed = ctx.stamped(addressed)
    live = _live(ctx, action.cluster, addressed)
    if live is None:
        rendered = ctx.stamped(ctx.render_object(action.template))
        try:
            live = remember_secrets(cluster.create(rendered))
        except AlreadyExists:
            live = _claimed(cluster, remember_secrets(cluster.get(*_address(rendered), live=True)), rendered)
    elif claim(live, addressed):
        live = _claimed(cluster, live, ctx.stamped(ctx.render_object(action.template)))
    if action.bind:
        ctx.scope[action.bind] = live
    return None


def _claimed(cluster: Cluster, live: Obj, rendered: Obj) -> Obj:
    """``live`` claimed for the rendered object (one merge patch), or as it is when nothing is missing."""
    body = claim(live, rendered)
    return remember_secrets(cluster.patch(*_address(live), body)) if body else live


def claim(live: Obj, rendered: Obj) -> Obj:
    """The merge patch that claims ``live``: the rendered labels merged in, empty or missing fields filled."""
    body: Obj = {}
    labels = (rendered.get("metadata") or {}).get("labels") or {}
    own = (live.get("metadata") or {}).get("labels") or {}
    changed = {key: value for key, value in labels.items() if own.get(key) != value}
    if changed:
        body["metadata"] = {"labels": changed}
    for key, value in rendered.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        fill = _fill(live.get(key), value)
        if fill is not None:
            body[key] = fill
    return body


def _fill(live: Any, want: Any) -> Any:
    """What of ``want`` fills ``live`` where it is missing or empty (None: nothing to fill)."""
    if live in (None, "", {}, []):
        return None if want in (None, "", {}, []) else want
    if isinstance(live, dict) and isinstance(want, dict):
        filled = {k: f for k, v in want.items() if (f := _fill(live.get(k), v)) is not None}
        return filled or None
    return None


def _patch(ctx: PassContext, action: Action) -> Stop | None:
    assert action.target is not None and action.query is not None
    target = ctx.scope.get(action.target)
    if not isinstance(target, dict) or "metadata" not in target:
        return None
    body = ctx.evaluate(action.query)
    if not isinstance(body, dict) or not body:
        return None
    base = target.get("status") or {} if action.status_subresource else target
    patch_body = body.get("status", {}) if action.status_subresource else body
    if merge_patch(base, patch_body) == base:
        return None
    api_version, kind, namespace, name = _address(target)
    try:
        result = ctx.cluster_for(action.cluster).patch(
            api_version, kind, namespace, name, body, status=action.status_subresource)
    except ApiError as err:
        if type(err).__name__ in action.tolerate:
            return None
        raise
    if action.bind:
        ctx.scope[action.bind] = result
    return None


def _delete(ctx: PassContext, action: Action) -> Stop | None:
    assert action.query is not None
    cluster = ctx.cluster_for(action.cluster)
    for obj in walk_objects(ctx.evaluate(action.query)):
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            continue  # already being deleted (a finalizer holds it): a second delete would change nothing
        with contextlib.suppress(NotFound):
            cluster.delete(*_address(obj))
    return None


def _wait(ctx: PassContext, action: Action) -> Stop | None:
    assert action.query is not None and action.outcome is not None
    if truthy(ctx.evaluate(action.query)):
        return None
    for branch in action.otherwise:
        if branch.when is None or truthy(ctx.evaluate(branch.when)):
            return stop(ctx, branch, action.keep_going)
    return stop(ctx, action.outcome, action.keep_going)


def _refuse(ctx: PassContext, action: Action) -> Stop | None:
    assert action.query is not None and action.outcome is not None
    if truthy(ctx.evaluate(action.query)):
        return replace(stop(ctx, action.outcome, action.keep_going), refusal=True)
    return None


def _status(ctx: PassContext, action: Action) -> Stop | None:
    for name, query in action.fields:
        ctx.status_fields[name] = ctx.evaluate(query)
    return None


def _set(ctx: PassContext, action: Action) -> Stop | None:
    for binding in action.bindings:
        ctx.scope[binding.name] = ctx.evaluate_value(binding, ctx.scope)
    return None


class RuleFailure(Invalid):
    """A `fail` action: the rule file declares the pass failed."""


def _fail(ctx: PassContext, action: Action) -> Stop | None:
    assert action.outcome is not None
    raise RuleFailure(ctx.render(action.outcome.message))


_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


def _log(ctx: PassContext, action: Action) -> Stop | None:
    assert action.outcome is not None
    ctx.log.log(_LEVELS.get(action.level, 20), ctx.render(action.outcome.message), extra=ctx.log_fields())
    return None


_HANDLERS = {
    "apply": _apply, "ensure": _ensure, "patch": _patch, "delete": _delete, "wait": _wait,
    "refuse": _refuse, "status": _status, "set": _set, "fail": _fail, "log": _log,
}

__all__ = ["Refused", "RuleFailure", "RuleRuntimeError", "Stop", "contains", "run_action"]
