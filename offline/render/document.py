"""The rendering as YAML documents: the order, every object written, then a Result that says why the
pass stopped, as ``crossplane render`` prints a composite, its composed resources and its results.

Secret ``data`` and ``stringData`` values are replaced by ``(redacted)`` and every secret value the
world knows is masked in the whole text, unless the caller asks for them (``--show-secrets``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import yaml

from engine import durations
from engine.cluster.api import MANAGEMENT_CLUSTER, Obj
from offline.render.passes import Rendered
from offline.render.verdict import written_by

__all__ = ["RESULT_API_VERSION", "documents"]

RESULT_API_VERSION = "render.c5c3.io/v1alpha1"
REDACTED = "(redacted)"
NS_PER_SECOND = 1_000_000_000


def documents(rendered: Rendered, *, show_secrets: bool = False) -> str:
    """The YAML stream: ``---`` separated documents, each after a comment saying what it is."""
    parts: list[tuple[str, Obj]] = []
    if rendered.order_after is not None:
        parts.append((f"the order after {_passes(rendered.passes)}", _shown(rendered.order_after, show_secrets)))
    for cluster, obj in rendered.written:
        verbs = sorted({c.verb for _, c in rendered.writes if _same(c, cluster, obj)})
        parts.append((f"written ({', '.join(verbs)}) on {_where(cluster)}", _shown(obj, show_secrets)))
    parts.append(("why the last pass stopped", result_document(rendered)))
    text = "".join(f"---\n# {comment}\n{_dump(obj)}" for comment, obj in parts)
    return text if show_secrets else rendered.redact(text)


def result_document(rendered: Rendered) -> Obj:
    """The render's own Result: the passes, the outcome, the verdict that ended the last pass, the writes."""
    request = rendered.request
    api_version, _, kind = request.kind.rpartition("/")
    order_ref: Obj = {"apiVersion": api_version, "kind": kind, "namespace": request.namespace, "name": request.name}
    if request.cluster:
        order_ref["cluster"] = request.cluster
    outcome, stopped = _verdict(rendered)
    doc: Obj = {
        "apiVersion": RESULT_API_VERSION,
        "kind": "Result",
        "metadata": {"name": request.name, "namespace": request.namespace},
        "order": order_ref,
        "passes": rendered.passes,
        "outcome": outcome,
    }
    if stopped is not None:
        doc["stoppedBy"] = stopped
    if rendered.result.error is not None:
        doc["error"] = str(rendered.result.error)
    doc["requeueAfter"] = _duration(rendered.result.requeue_after)
    if rendered.result.event is not None:
        doc["event"] = {"type": "Warning", "reason": rendered.result.event.reason,
                        "message": rendered.result.event.message}
    conditions = _sub_conditions(rendered)
    if conditions:
        doc["conditions"] = [_attributed(rendered, c) for c in conditions]
    doc["writes"] = [_call(n, c) for n, c in rendered.writes]
    return doc


def _verdict(rendered: Rendered) -> tuple[str, Obj | None]:
    """The outcome word and the verdict that ended the last pass (None: nothing stopped it)."""
    kind = rendered.kind
    if rendered.order_after is None:
        return "Released", {"by": "teardown", "action": "the finalizer is released: the order is gone"}
    if rendered.finalizer_installed:
        gate = next((g for g in kind.gates if g.finalizer), None)
        return "FinalizerInstalled", {"by": "gate (finalizer)", "action": f"installs {kind.finalizer}",
                                      "at": str(gate.origin) if gate is not None else ""}
    deleting = bool(rendered.order_before.get("metadata", {}).get("deletionTimestamp"))
    first = next((c for c in _sub_conditions(rendered) if c.get("status") != "True"), None)
    if rendered.result.error is not None:
        outcome = "Failed"
    elif deleting:
        outcome = "TearingDown"
    elif first is None:
        return "Converged", None
    else:
        outcome = "Stopped"
    if first is None:
        return outcome, ({"by": "teardown", "action": "keeps the finalizer"} if outcome == "TearingDown" else None)
    return outcome, {**_attribution(rendered, first), "condition": first.get("type"), "status": first.get("status"),
                     "reason": first.get("reason"), "message": first.get("message")}


def _sub_conditions(rendered: Rendered) -> list[Obj]:
    status = (rendered.order_after or {}).get("status") or {}
    by_type = {c.get("type"): c for c in status.get("conditions") or () if isinstance(c, dict)}
    return [by_type[t] for t in rendered.kind.conditions.types if t in by_type]


def _attributed(rendered: Rendered, condition: Obj) -> Obj:
    return {"type": condition.get("type"), "status": condition.get("status"), "reason": condition.get("reason"),
            **_attribution(rendered, condition)}


def _attribution(rendered: Rendered, condition: Obj) -> Obj:
    sources = written_by(rendered.kind, condition)
    if len(sources) == 1:
        return sources[0].as_dict()
    if not sources:
        return {"by": "(no rule element writes this reason: a status written before)"}
    return {"candidates": [s.as_dict() for s in sources]}


def _call(number: int, call: Any) -> Obj:
    out: Obj = {"pass": number, "verb": call.verb, "apiVersion": call.api_version, "kind": call.kind}
    if call.namespace:
        out["namespace"] = call.namespace
    out["name"] = call.name
    if call.extra.get("subresource"):
        out["subresource"] = call.extra["subresource"]
    if call.cluster != MANAGEMENT_CLUSTER:
        out["cluster"] = call.cluster
    return out


def _same(call: Any, cluster: str, obj: Obj) -> bool:
    meta = obj.get("metadata", {})
    return bool(call.cluster == cluster and call.api_version == obj.get("apiVersion") and call.kind == obj.get("kind")
                and (call.namespace or "") == (meta.get("namespace") or "") and call.name == meta.get("name"))


def _shown(obj: Obj, show_secrets: bool) -> Obj:
    """The object as kubectl shows it (no managedFields), Secret values redacted unless asked for."""
    out = {**obj, "metadata": {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}}
    if not show_secrets and obj.get("apiVersion") == "v1" and obj.get("kind") == "Secret":
        for key in ("data", "stringData"):
            if isinstance(out.get(key), dict):
                out[key] = {name: REDACTED for name in out[key]}
    return out


def _duration(delta: dt.timedelta | None) -> str | None:
    if delta is None:
        return None
    return durations.format_ns(round(delta.total_seconds() * NS_PER_SECOND))


def _passes(count: int) -> str:
    return "one pass" if count == 1 else f"{count} passes"


def _where(cluster: str) -> str:
    return "the management cluster" if cluster == MANAGEMENT_CLUSTER else f"target cluster {cluster!r}"


def _dump(obj: Obj) -> str:
    text: str = yaml.safe_dump(obj, default_flow_style=False, sort_keys=False, allow_unicode=True, width=1000)
    return text
