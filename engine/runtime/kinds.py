"""What the runtime needs of compiled kinds and watches, as structural types.

The runtime only reads a few members of ``engine.rules.model.CompiledKind`` and
``CompiledWatch``; naming them here keeps the runtime testable with small fakes
and free of the compiler's internals. The compiled classes satisfy these
protocols without knowing them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from engine.clock import Clock
from engine.cluster.api import Obj
from engine.cluster.registry import ClusterSet
from engine.expr.reads import merge_reads
from engine.outcome import Request, Result

Index = Callable[[str], Iterable[tuple[str, str, str]]]
"""index(key): (cluster, namespace, name) of the orders, on every engaged cluster, with index key ``key``."""

Log = logging.Logger | logging.LoggerAdapter[Any]


class Watch(Protocol):
    """A kind whose events wake orders (``engine.rules.model.CompiledWatch``)."""

    @property
    def api_version(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def clusters(self) -> str:
        """``management``: watched on the management cluster only; ``all``: on every engaged cluster."""
        ...

    @property
    def order_kind(self) -> str: ...

    @property
    def is_order(self) -> bool: ...

    @property
    def uses_index(self) -> bool: ...

    @property
    def origin(self) -> object:
        """Where the watch is written (``file:line:col``), for the error log of an event it cannot map."""
        ...

    def passes(self, old: Obj | None, new: Obj | None) -> bool: ...

    def requests(self, obj: Obj, cluster: str, index: Index) -> list[Request]: ...

    def maps_alike(self, old: Obj, new: Obj) -> bool:
        """True only when ``requests`` is certain to give the same orders for both (False: map each)."""
        ...


class OrderKind(Protocol):
    """An order kind as the runtime sees it (``engine.rules.model.CompiledKind``)."""

    @property
    def key(self) -> str: ...

    @property
    def api_version(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def watches(self) -> Sequence[Watch]: ...

    @property
    def label_scopes(self) -> Sequence[tuple[str, str, str]]:
        """(apiVersion, kind, label key): kinds watched and cached only when an object carries that label."""
        ...

    @property
    def index_origin(self) -> object:
        """Where the index expression is written (``file:line:col``)."""
        ...

    def index_keys(self, order: Obj, cluster: str) -> Sequence[str]: ...

    def index_alike(self, old: Obj, new: Obj) -> bool:
        """True only when ``index_keys`` is certain to give the same keys for both (False: compute them)."""
        ...

    def quiet_removal(self, child: Obj) -> bool:
        """True when this child's removal, after a step of the order deleted it, changes nothing its rules read
        (``children.quietRemoval``): it does not wake the order (False: it does)."""
        ...


Catalog = Mapping[str, OrderKind]

LabelScopes = Mapping[tuple[str, str], tuple[str, ...]]
"""(apiVersion, kind) -> the label keys one of which an object must carry to be watched and cached."""


def label_scopes(catalog: Catalog) -> dict[tuple[str, str], tuple[str, ...]]:
    """Every order kind's ``children.cacheOnlyLabelled``, merged: per kind, the sorted label keys.

    A label selector cannot OR keys, so each key gets its own label-selected watch and cache; an
    object carrying any of them is seen, one carrying none is never held in memory."""
    keys: dict[tuple[str, str], set[str]] = {}
    for order_kind in catalog.values():
        for api_version, kind, label in order_kind.label_scopes:
            keys.setdefault((api_version, kind), set()).add(label)
    return {scoped: tuple(sorted(labels)) for scoped, labels in keys.items()}

def declared_scopes(catalog: Catalog) -> dict[tuple[str, str, str], frozenset[str]]:
    """(apiVersion, kind, label key) -> the order kinds (keys) whose ``children.cacheOnlyLabelled`` names it: the
    kinds a label-selected informer serves (decision 0045 opens it with the first order of one of them)."""
    declared: dict[tuple[str, str, str], set[str]] = {}
    for order_kind in catalog.values():
        for scope in order_kind.label_scopes:
            declared.setdefault(scope, set()).add(order_kind.key)
    return {scope: frozenset(kinds) for scope, kinds in declared.items()}


CHILD_MAPPINGS = frozenset({"labels", "owner"})
"""Watches whose objects the engine writes for one order (its children by their labels, what it controls)."""


def shard_scoped_kinds(catalog: Catalog) -> dict[tuple[str, str], frozenset[str]]:
    """(apiVersion, kind) -> the order kinds whose objects of it a shard member caches by its stamp (decision 0032).

    A kind qualifies when every watch of it, of every order kind, maps its objects to the one order they belong to
    by its labels (children the engine writes, and stamps, for that order; also by owner reference when the kind is
    cached by the name label anyway, so what the order controls carries it), it is no order kind, and no input
    lists it beyond an order's children reading its items whole (a read across orders needs every object: that kind
    is cached whole). A kind whose lists across orders read only some paths of each item qualifies: those lists
    are answered from a projected cache of every object (``projections``, decision 0040)."""
    orders = {(kind.api_version, kind.kind) for kind in catalog.values()}
    mappings: dict[tuple[str, str], set[str]] = {}
    owners: dict[tuple[str, str], set[str]] = {}
    listed: set[tuple[str, str]] = set()
    for order_kind in catalog.values():
        beyond = getattr(order_kind, "listed_beyond_children", ())
        if beyond is None:
            return {}  # an input lists a kind named by a template: any kind may be read across orders
        reads = getattr(order_kind, "projected_lists", {})
        listed.update(key for key in beyond if reads.get(key) is None)
        for watch in order_kind.watches:
            key = (watch.api_version, watch.kind)
            mappings.setdefault(key, set()).add(str(getattr(watch, "mapping", "")))
            owners.setdefault(key, set()).add(order_kind.key)
    scoped = label_scopes(catalog)
    return {key: frozenset(owners[key]) for key, found in mappings.items()
            if (found <= {"labels"} or (found <= CHILD_MAPPINGS and key in scoped))
            and key not in orders and key not in listed}


Projections = Mapping[tuple[str, str], tuple[tuple[str, ...], ...]]
"""(apiVersion, kind) -> the paths a projected cache of every object of the kind keeps (decision 0040)."""


def projections(catalog: Catalog) -> dict[tuple[str, str], tuple[tuple[str, ...], ...]]:
    """(apiVersion, kind) -> the paths of each object a shard member's projected cache of the kind keeps: the kinds
    it caches by its stamp (``shard_scoped_kinds``) that an input lists across orders, reading only those paths."""
    scoped = shard_scoped_kinds(catalog)
    found: dict[tuple[str, str], set[tuple[str, ...]]] = {}
    for order_kind in catalog.values():
        for key, reads in getattr(order_kind, "projected_lists", {}).items():
            if key in scoped and reads is not None:
                found.setdefault(key, set()).update(reads)
    return {key: merged for key, paths in found.items()
            if (merged := merge_reads([frozenset(paths)])) is not None}


@dataclass(frozen=True)
class MemberProjections:
    """What a shard member keeps projected (decision 0067): per kind the paths kept of each object, per kind the
    label keys its projected caches select by (absent: one cache of every object), and per kind a selector its
    projected caches add (decision 0075: the objects no member stamped; a miss there may be another's child)."""

    paths: Projections
    labels: Mapping[tuple[str, str], tuple[str, ...]]
    unstamped: Mapping[tuple[str, str], str]


def member_projections(catalog: Catalog, stamp_key: str) -> MemberProjections:
    """A shard member's projected caches: ``projections`` (the lists across orders) plus, for every other kind it
    caches by its stamp, the identity of each object no member stamped, selected by the kind's ``cacheOnlyLabelled``
    keys as an unsharded run caches it (decision 0075). A get its stamped caches miss then learns from memory
    whether an unstamped object of the name exists (a foreign object, or a child an unsharded run wrote); one none
    of them holds may still be another member's child, so the miss is uncertain (NotCached), never NotFound.
    stamp_key: the label members stamp their children with (``sharding.labels.SHARD_LABEL``)."""
    found = projections(catalog)
    keys = label_scopes(catalog)
    labels: dict[tuple[str, str], tuple[str, ...]] = {}
    unstamped: dict[tuple[str, str], str] = {}
    for scoped in shard_scoped_kinds(catalog):
        if scoped in found:
            continue  # a cache of every object for the lists across orders answers for existence too
        found[scoped] = ()
        unstamped[scoped] = f"!{stamp_key}"
        if keys.get(scoped):
            labels[scoped] = keys[scoped]
    return MemberProjections(found, labels, unstamped)


def shard_scopes(catalog: Catalog, selector: str) -> dict[tuple[str, str], tuple[str, ...]]:
    """The cache scopes of the shard-scoped kinds for a member's ``selector``: each label-scoped kind's keys with the
    selector added (``key,shard=member``), the others by the selector alone."""
    keys = label_scopes(catalog)
    return {scoped: tuple(f"{key},{selector}" for key in keys.get(scoped, ())) or (selector,)
            for scoped in shard_scoped_kinds(catalog)}


K_contra = TypeVar("K_contra", bound=OrderKind, contravariant=True)


class RunPass(Protocol[K_contra]):
    """``engine.reconcile.run.run_pass``: one pass of one order; API errors come back in the Result."""

    def __call__(self, kind: K_contra, request: Request, *, clusters: ClusterSet, clock: Clock, log: Log) -> Result: ...
