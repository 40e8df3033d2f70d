"""A shard member hands orders back: its shard label taken off them, so the leader places them again.

A graceful stop hands back every order the member holds (within a time budget), and a reloaded rule set hands
back the orders of the kinds it adds (decision 0068). Each order is one update, conditional on the version read.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from engine.cluster.api import ApiError, Cluster, Conflict, NotFound, Obj
from engine.cluster.registry import ClusterSet
from engine.runtime.kinds import Log, OrderKind
from engine.runtime.sharding.labels import FIELD_MANAGER, owner_of, relabelled


def hand_back(clusters: ClusterSet, kinds: Iterable[OrderKind], member: str, selector: str, log: Log, *,
              strict: bool = False, deadline: float | None = None) -> int:
    """Remove member ``member``'s labels from its orders of ``kinds`` (those ``selector`` finds) on every cluster.
    strict: on the management cluster, a failed list (but for an unserved kind) or a failed hand-back raises; an
    order changed meanwhile is read again and handed back if it still carries the label. deadline: a
    ``time.monotonic()`` past which no further order is handed back (said in one line). Returns how many were."""
    handed = 0
    kinds = list(kinds)
    for cluster_name, cluster in clusters:
        if _out_of_time(deadline, handed, log):
            return handed
        for kind in kinds:
            try:
                orders = cluster.list(kind.api_version, kind.kind, labels=selector, live=True).items
            except NotFound:
                continue  # a kind this cluster does not serve
            except ApiError:
                if strict and cluster_name == "":
                    raise
                continue  # an unreachable cluster
            for order in orders:
                if _out_of_time(deadline, handed, log):
                    return handed
                try:
                    handed += hand_back_one(cluster, order, member, retries=3 if strict else 0)
                except ApiError as exc:
                    if strict and cluster_name == "":
                        raise
                    log.warning("could not hand back %s %s: %s", kind.kind, order.get("metadata", {}).get("name"),
                                exc)
    return handed


def _out_of_time(deadline: float | None, handed: int, log: Log) -> bool:
    if deadline is None or time.monotonic() < deadline:
        return False
    log.info("handed back %d order(s) before the stop's hand-back time ran out; the leader moves the rest once "
             "this member's Lease is released", handed)
    return True


def hand_back_one(cluster: Cluster, order: Obj, member: str, *, retries: int) -> int:
    """Hand one order back, conditionally on the version read; after a Conflict, read it again (up to ``retries``
    times) and hand it back if it still carries member ``member``'s label. 1 when handed back."""
    while True:
        try:
            cluster.update(relabelled(order, owner=None, drain=False), field_manager=FIELD_MANAGER)
            return 1
        except Conflict:
            if retries <= 0:
                raise
            retries -= 1
            meta = order.get("metadata") or {}
            try:
                order = cluster.get(str(order.get("apiVersion")), str(order.get("kind")),
                                    meta.get("namespace") or None, str(meta.get("name")), live=True)
            except NotFound:
                return 0
            if owner_of(order) != member:
                return 0  # given on meanwhile: not ours any more
