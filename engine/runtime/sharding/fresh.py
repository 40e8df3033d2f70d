"""Whether an order can have children yet: one no pass has taken past its finalizer has none (decision 0067).

A pass writes an order's children only in its steps, and its steps run only once the order carries the kind's
finalizer (the finalizer gate writes it, conditionally on the order's resourceVersion, and ends that pass; the
gates before it only read). So an order that carries neither that finalizer nor a deletionTimestamp, as a member's
cache shows it at admission (a state at least as new as the label that made it the member's), has no child
anywhere: no member, and no unsharded run before ``--sharded``, wrote one. Its take-over has nothing to list.
"""

from __future__ import annotations

from engine.cluster.api import Obj


def childless(kind: object, order: Obj) -> bool:
    """True when ``order`` cannot have children yet: its kind's rules install a finalizer before any step, and the
    order carries neither it nor a deletionTimestamp. False whenever that is not certain (a kind without a
    finalizer gate, or a kind that is not a compiled rule set)."""
    finalizer = getattr(kind, "finalizer", None)
    gates = getattr(kind, "gates", None)
    if not isinstance(finalizer, str) or not finalizer or gates is None:
        return False
    if not any(getattr(gate, "finalizer", False) for gate in gates):
        return False
    meta = order.get("metadata") or {}
    return not meta.get("deletionTimestamp") and finalizer not in (meta.get("finalizers") or ())
