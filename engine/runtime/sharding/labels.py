"""The labels sharding writes, and small helpers to read and change them on an order."""

from __future__ import annotations

import copy
from collections.abc import Mapping

from engine.cluster.api import Obj

SHARD_LABEL = "sharding.c5c3.io/shard"
"""On an order: the member that reconciles it (written by the leader only)."""
DRAIN_LABEL = "sharding.c5c3.io/drain"
"""On an order: the leader asks its member to hand it back (the member acknowledges by removing both labels)."""
MEMBER_LABEL = "sharding.c5c3.io/member"
"""On a Lease: it is a member's membership Lease."""
MEMBER_SELECTOR = f"{MEMBER_LABEL}=true"
FIELD_MANAGER = "c5c3-sharding"


def labels_of(obj: Obj) -> Mapping[str, str]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels if isinstance(labels, dict) else {}


def owner_of(obj: Obj) -> str:
    return str(labels_of(obj).get(SHARD_LABEL) or "")


def draining(obj: Obj) -> bool:
    return DRAIN_LABEL in labels_of(obj)


def relabelled(obj: Obj, *, owner: str | None, drain: bool) -> Obj:
    """A copy of ``obj`` (resourceVersion kept: the update is conditional) with the shard label set to
    ``owner`` (None: removed) and the drain label present or not."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    labels = dict(labels_of(out))
    labels.pop(SHARD_LABEL, None)
    labels.pop(DRAIN_LABEL, None)
    if owner is not None:
        labels[SHARD_LABEL] = owner
    if drain:
        labels[DRAIN_LABEL] = "true"
    meta["labels"] = labels
    return out


def label_patch(obj: Obj, *, owner: str, drain: bool) -> Obj:
    """A merge patch setting the shard label to ``owner`` and the drain label present or not, conditional on
    ``obj``'s resourceVersion (a patch carrying one fails with a Conflict once the object has changed). The drain
    label is named only to set it or to remove one ``obj`` carries: a removal of a label that is not there is no
    change, and a server that merges a patch's labels into an order with none verbatim would store it as null
    (the harness's emulator does), which a member reads as a drain request."""
    meta = obj.get("metadata") or {}
    labels: dict[str, str | None] = {SHARD_LABEL: owner}
    if drain:
        labels[DRAIN_LABEL] = "true"
    elif draining(obj):
        labels[DRAIN_LABEL] = None
    return {"metadata": {"resourceVersion": meta.get("resourceVersion"), "labels": labels}}


def resource_version(obj: Obj) -> int | None:
    """The resourceVersion as a number (etcd's are; the API calls them opaque), else None."""
    try:
        return int(str((obj.get("metadata") or {}).get("resourceVersion")))
    except (TypeError, ValueError):
        return None
