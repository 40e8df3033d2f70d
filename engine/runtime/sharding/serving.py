"""Which rules a shard member serves, and which members the leader may give an order of a kind to (decision 0068).

Every member reloads its rule folder on its own, so during a rollout members serve different sets. A member
publishes on its membership Lease, with every write of it (no request of its own), the hash of the rule set it
serves and the order kinds it serves: those of its rules now and any kind an admission or a pass of which still
runs (``Serving.kinds``). A kind missing there is one it runs no pass of and starts none of (``Serving.enter``
refuses it), so the leader may relabel such an order at once (``eligible``). A Lease without the kinds annotation
(a member that does not publish it) is taken to serve every kind.

A pass runs on the rules its admission read, and only while they are still the rules served (``Serving.enter``
with the admission's rules): a reload between the two skips the pass, and the reload queues every order again.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from engine.cluster.api import Obj
from engine.runtime.kinds import Catalog, shard_scoped_kinds

RULES_ANNOTATION = "sharding.c5c3.io/rules"
"""On a membership Lease: the first 16 hex digits of the content hash of the rule set the member serves."""
KINDS_ANNOTATION = "sharding.c5c3.io/kinds"
"""On a membership Lease: the keys (``apiVersion/kind``) of the order kinds the member serves, comma-separated."""

Served = Mapping[str, frozenset[str] | None]
"""Member name -> the order kinds its Lease says it serves (None: it does not say; every kind)."""


def published(lease: Obj) -> frozenset[str] | None:
    """The order kinds a membership Lease says its member serves (None: it does not say)."""
    annotations = (lease.get("metadata") or {}).get("annotations")
    value = annotations.get(KINDS_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(value, str):
        return None
    return frozenset(part.strip() for part in value.split(",") if part.strip())


def served_by(leases: Iterable[Obj]) -> dict[str, frozenset[str] | None]:
    """Member name -> what its Lease says it serves."""
    return {str((lease.get("metadata") or {}).get("name") or ""): published(lease) for lease in leases}


def eligible(members: Sequence[str], served: Served, kind: str) -> list[str]:
    """The live ``members`` an order of ``kind`` may be placed on: those that serve it."""
    return [member for member in members if (kinds := served.get(member)) is None or kind in kinds]


def lease_annotations(rules_hash: str, kinds: Iterable[str]) -> dict[str, str]:
    """What a member writes on its membership Lease."""
    return {RULES_ANNOTATION: rules_hash, KINDS_ANNOTATION: ",".join(sorted(kinds))}


@dataclass(frozen=True, eq=False)
class MemberRules:
    """One rule set as a member serves it: the catalog and what a shard member derives from it."""

    catalog: Catalog
    children: dict[tuple[str, str], frozenset[str]] = field(init=False)
    """(apiVersion, kind) of what it stamps and caches by its label -> the order kinds those belong to."""
    stamped: frozenset[tuple[str, str]] = field(init=False)
    """The kinds whose children of an order carry the member's label (what its passes stamp)."""

    def __post_init__(self) -> None:
        children = shard_scoped_kinds(self.catalog)
        object.__setattr__(self, "children", children)
        object.__setattr__(self, "stamped", frozenset(children))

    def adopts_like(self, other: MemberRules) -> bool:
        """Whether the take-over before a member's first pass of an order (``ShardMember._adopt``) labels the same
        children under both sets: the same stamped kinds, target-cluster watches, ownership labels and named-cluster
        writes of each order kind."""
        return (self.children == other.children and self.watched_on_targets == other.watched_on_targets
                and self._adoption() == other._adoption())

    def _adoption(self) -> dict[str, tuple[object, object]]:
        return {key: (getattr(kind, "ownership_labels", None), getattr(kind, "writes_named_clusters", True))
                for key, kind in self.catalog.items()}

    @property
    def watched_on_targets(self) -> set[tuple[str, str]]:
        """(apiVersion, kind) of what some order kind watches on target clusters too."""
        return {(watch.api_version, watch.kind) for order_kind in self.catalog.values()
                for watch in order_kind.watches if watch.clusters != "management"}


class Serving:
    """A member's rules now, and the kinds an admission or a pass runs of (under whichever rules)."""

    def __init__(self, catalog: Catalog) -> None:
        self._lock = threading.Lock()
        self._rules = MemberRules(catalog)
        self._running: Counter[str] = Counter()

    @property
    def rules(self) -> MemberRules:
        with self._lock:
            return self._rules

    def replace(self, catalog: Catalog) -> tuple[MemberRules, MemberRules]:
        """Serve ``catalog`` from now on; (the rules before, the rules now)."""
        rules = MemberRules(catalog)
        with self._lock:
            before, self._rules = self._rules, rules
        return before, rules

    def enter(self, kind: str, rules: MemberRules | None = None) -> MemberRules | None:
        """An admission or a pass of ``kind`` starts: the rules it runs on (``rules``, when still served; else the
        rules now), counted as running until ``leave``; None, counting nothing, when those rules are not served any
        more or have no such kind."""
        with self._lock:
            if (rules is not None and rules is not self._rules) or kind not in self._rules.catalog:
                return None
            self._running[kind] += 1
            return self._rules

    def leave(self, kind: str) -> None:
        with self._lock:
            self._running[kind] -= 1
            if self._running[kind] <= 0:
                del self._running[kind]

    def kinds(self) -> frozenset[str]:
        """The kinds to publish: those of the rules now and those still running."""
        with self._lock:
            return frozenset(self._rules.catalog) | frozenset(self._running)
