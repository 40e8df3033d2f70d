"""Mapping watch events to orders: the fan-out index of order kinds and the requests an event wakes.

The informer of an order kind on every cluster keeps ``OrderIndex`` (index key -> orders, with their cluster), which
index-mapped watches read; ``mapped`` asks a compiled watch for the orders an event names, through the old object and
the new one, so a reference dropped still wakes the order it named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.cluster.api import Obj
from engine.outcome import Request
from engine.runtime.kinds import Index, Watch

Member = tuple[str, str, str]
"""(cluster, namespace, name) of an order."""


@dataclass
class OrderIndex:
    """Per order kind: index key -> the orders carrying that key, on every engaged cluster."""

    _keys: dict[str, dict[str, set[Member]]] = field(default_factory=dict)
    _of: dict[tuple[str, Member], tuple[str, ...]] = field(default_factory=dict)

    def put(self, kind: str, order: Member, keys: Sequence[str]) -> None:
        """Record ``order``'s index keys (none: drop it)."""
        for previous in self._of.pop((kind, order), ()):
            members = self._keys[kind][previous]
            members.discard(order)
            if not members:
                del self._keys[kind][previous]
        if keys:
            self._of[(kind, order)] = tuple(keys)
            for key in keys:
                self._keys.setdefault(kind, {}).setdefault(key, set()).add(order)

    def has(self, kind: str, order: Member) -> bool:
        """Whether ``order`` has keys in the index (its expression gave some, without failing)."""
        return (kind, order) in self._of

    def drop_cluster(self, cluster: str) -> None:
        """Forget every order of a cluster (it was disengaged)."""
        for kind, order in [k for k in self._of if k[1][0] == cluster]:
            self.put(kind, order, ())

    def lookup(self, kind: str, key: str) -> list[Member]:
        """(cluster, namespace, name) of the orders of ``kind`` whose index keys hold ``key``, sorted."""
        return sorted(self._keys.get(kind, {}).get(key, ()))


def mapped(watch: Watch, cluster: str, old: Obj | None, new: Obj | None, obj: Obj, index: Index) -> list[Request]:
    """The orders an event wakes: those the new object maps to, then those the old one did (each once)."""
    if new is not None and old is not None and watch.maps_alike(old, new):
        return list(dict.fromkeys(watch.requests(new, cluster, index)))
    seen: dict[Request, None] = {}
    for source in [o for o in (new, old) if o is not None] or [obj]:
        seen.update(dict.fromkeys(watch.requests(source, cluster, index)))
    return list(seen)
