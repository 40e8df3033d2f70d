"""Teardown of a deleting order: holds first, then the ordered sweep, then the finalizer.

While ``patientWhile`` holds (the system that cleans up behind the children is still there),
the finalizer stays until a pass issues no delete. Once it no longer holds, the deletes are
issued and the finalizer is released whatever their outcome (fail-open).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.cluster.api import ApiError, NotFound, Obj
from engine.cluster.patches import merge_patch
from engine.outcome import PassError, Result
from engine.reconcile.context import PassContext, ReadError, as_delta, sort_key, truthy


def run_teardown(ctx: PassContext, persist: Callable[[PassContext, Result], Result]) -> Result:
    kind = ctx.kind
    finalizers = list(ctx.order["metadata"].get("finalizers") or [])
    if kind.finalizer not in finalizers:
        return Result()
    for hold in kind.teardown.holds:
        if truthy(ctx.evaluate(hold.when)):
            ctx.conditions.set(hold.condition, False, hold.reason, ctx.render(hold.message))
            return persist(ctx, Result(requeue_after=as_delta(hold.requeue.seconds)))
    patient = truthy(ctx.evaluate(kind.teardown.patient_while))
    issued, error = sweep(ctx)
    if error is not None:
        if patient:
            return Result(error=PassError(error))
        ctx.log.info(f"best-effort teardown of {kind.kind} children failed; releasing the finalizer anyway",
                     extra={"order": f"{ctx.request.namespace}/{ctx.request.name}", "cluster": ctx.request.cluster})
    elif patient and issued:
        return Result(requeue_after=as_delta(kind.teardown.patient_requeue.seconds))
    return release(ctx, finalizers)


def sweep(ctx: PassContext) -> tuple[int, str | None]:
    """Issue the deletes in order; returns how many were issued and the first error (which stops the sweep)."""
    kind = ctx.kind
    management = ctx.management
    namespace = ctx.scope["childNamespace"]
    labels = ctx.scope["childLabels"]
    issued = 0
    for item in kind.teardown.sweeps:
        try:
            listed = management.list(item.api_version, item.kind, namespace, labels=labels).items
        except NotFound:
            continue
        except ApiError as err:
            return issued, f"listing {item.kind} children: {err}"
        mine = [obj for obj in listed if ctx.is_child(obj)]
        def order_key(obj: Obj, queries: tuple[Any, ...] = item.sort_by) -> tuple[Any, ...]:
            keys = (sort_key(q.evaluate(ctx.scope.child(item=obj))) for q in queries)
            return (*keys, obj["metadata"]["name"])

        mine.sort(key=order_key)
        for obj in mine:
            name = obj["metadata"]["name"]
            try:
                if item.before is not None and (
                        item.before_when is None or truthy(item.before_when.evaluate(ctx.scope.child(item=obj)))):
                    body = item.before.evaluate(ctx.scope.child(item=obj))
                    if isinstance(body, dict) and body and merge_patch(obj, body) != obj:
                        management.patch(item.api_version, item.kind, namespace, name, body)
                management.delete(item.api_version, item.kind, namespace, name)
                issued += 1
            except NotFound:
                continue
            except ApiError as err:
                return issued, f"deleting {kind.kind} child {name!r}: {err}"
    for delivered in kind.teardown.delivered:
        name = ctx.render(delivered.name)
        order_namespace = ctx.request.namespace
        try:
            live = ctx.order_cluster.get(delivered.api_version, delivered.kind, order_namespace, name)
        except NotFound:
            continue
        except ApiError as err:
            return issued, f"reading delivered {delivered.kind} {order_namespace}/{name}: {err}"
        if not controlled_by(live, ctx.order):
            continue
        try:
            ctx.order_cluster.delete(delivered.api_version, delivered.kind, order_namespace, name)
            issued += 1
        except NotFound:
            continue
        except ApiError as err:
            return issued, f"deleting delivered {delivered.kind} {order_namespace}/{name}: {err}"
    return issued, None


def controlled_by(obj: Obj, owner: Obj) -> bool:
    uid = owner.get("metadata", {}).get("uid")
    return any(ref.get("controller") and ref.get("uid") == uid
               for ref in obj.get("metadata", {}).get("ownerReferences") or [])


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
    return Result()


__all__ = ["ReadError", "controlled_by", "run_teardown"]
