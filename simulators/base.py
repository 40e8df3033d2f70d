"""What every simulated controller shares: reactions, and writing conditions as controllers do."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.clock import Clock, format_time
from engine.cluster.api import Cluster, Conflict, NotFound, Obj


@dataclass(frozen=True)
class Reaction:
    """One thing a simulated controller is about to do: a line for a timeline, and the writes."""

    note: str
    apply: Callable[[], None]


class Simulator(Protocol):
    """A simulated controller: what it would do about the cluster as it is now."""

    name: str
    """A short name for timelines (``K-ORC``, ``ESO``)."""

    def reactions(self) -> list[Reaction]:
        """Everything it would change now; empty when it is content with what it sees."""
        ...


def pending(simulators: Iterable[Simulator]) -> bool:
    """Whether any simulator would change something now."""
    return any(sim.reactions() for sim in simulators)


def react(simulators: Sequence[Simulator]) -> list[str]:
    """Run one round: each simulator's reactions, in order; returns ``"<name>  <note>"`` per reaction.

    A reaction whose object went away or changed under it is skipped; the next round sees the
    new state and decides again, as a controller's next reconcile would.
    """
    notes: list[str] = []
    for sim in simulators:
        for reaction in sim.reactions():
            try:
                reaction.apply()
            except (NotFound, Conflict):
                continue
            notes.append(f"{sim.name}  {reaction.note}")
    return notes


def find_condition(obj: Obj, type_: str) -> dict[str, Any] | None:
    """The status condition of that type, or None."""
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond
    return None


def condition_is(obj: Obj, type_: str, status: str, reason: str | None = None) -> bool:
    """Whether the object reports that condition with that status (and reason), for its generation."""
    cond = find_condition(obj, type_)
    if cond is None or cond.get("status") != status or (reason is not None and cond.get("reason") != reason):
        return False
    observed = cond.get("observedGeneration")
    return observed is None or observed == (obj.get("metadata") or {}).get("generation")


def with_condition(
    obj: Obj, clock: Clock, type_: str, status: str, reason: str, message: str
) -> list[dict[str, Any]]:
    """The object's conditions with one set; its lastTransitionTime moves only when the status does."""
    old = find_condition(obj, type_)
    since = old.get("lastTransitionTime") if old is not None and old.get("status") == status else None
    new = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": (obj.get("metadata") or {}).get("generation", 1),
        "lastTransitionTime": since or format_time(clock.now()),
    }
    others = [c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") != type_]
    return [*others, new]


def key(obj: Obj) -> str:
    """``namespace/name`` of an object, as timelines print it."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


def deleting(obj: Obj) -> bool:
    """Whether the object is being deleted (a finalizer holds it)."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def finalizers(obj: Obj) -> list[str]:
    return list((obj.get("metadata") or {}).get("finalizers") or ())


def secret_exists(cluster: Cluster, namespace: str, name: str) -> bool:
    """Whether that Secret exists (an empty name never does)."""
    if not name:
        return False
    try:
        cluster.get("v1", "Secret", namespace, name)
    except NotFound:
        return False
    return True
