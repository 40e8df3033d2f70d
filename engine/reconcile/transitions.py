"""The info line of each order transition, what an operator's log reader follows.

A transition is a condition of the order (Ready or a sub-condition the rule file names) whose status or reason
a status write changed, and the release of the order's finalizer when it is deleted. A rotation, in any kind,
shows as its sub-condition's reason changing and back (and Ready with it, when the rules say so); a status field
changing alone (a timestamp, a generation) is no transition. A line names the kind, the order, its cluster, the
condition, its status and reason: never a condition's message (rendered from the data, it is on the order). A
pass that writes no status (a converged order) does no work here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from engine.cluster.api import Obj

Log = logging.Logger | logging.LoggerAdapter[Any]


def _where(fields: dict[str, Any]) -> str:
    """``Kind namespace/name``, and ``on <cluster>`` for an order on a target cluster."""
    return f"{fields['kind']} {fields['order']}" + (f" on {fields['cluster']}" if fields["cluster"] else "")


def log_condition_changes(log: Log, fields: dict[str, Any], before: Iterable[Any], after: Iterable[Obj]) -> None:
    """One info line per condition of ``after`` whose (status, reason) differs from ``before``'s; ``fields``:
    the pass's log fields (kind, order, cluster). The caller checks first that info lines are on."""
    was = {c.get("type"): (c.get("status"), c.get("reason")) for c in before if isinstance(c, dict)}
    where = _where(fields)
    for condition in after:
        kind, status, reason = condition.get("type"), condition.get("status"), condition.get("reason")
        if was.get(kind) != (status, reason):
            log.info(f"{where}: {kind} is {status} ({reason})",
                     extra={**fields, "condition": kind, "status": status, "reason": reason})


def log_release(log: Log, fields: dict[str, Any], finalizer: str) -> None:
    """The info line of a deleted order whose finalizer the engine released: the order goes now."""
    log.info(f"{_where(fields)}: deleted, finalizer {finalizer} released",
             extra={**fields, "condition": "Finalizer", "reason": "Released"})
