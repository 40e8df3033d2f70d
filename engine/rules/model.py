"""The compiled model: immutable objects built once from rule files, run by every pass.

Every element keeps ``origin``, its rule-file position, so run-time errors cite file:line.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import jmespath

from engine.cluster.api import Obj
from engine.expr.errors import ExprError
from engine.expr.jinja import ObjectTemplate, Text
from engine.expr.jmes import Query
from engine.expr.reads import merge_reads
from engine.outcome import Request
from engine.rules.errors import Position

ClusterScope = Literal["management", "order"] | Text
"""The management cluster, the order's cluster, or a text naming a registered cluster ("" the management one)."""


@dataclass(frozen=True)
class Requeue:
    """When to come back: a fixed number of seconds, a query giving seconds, or never (both None)."""

    seconds: float | None = None
    query: Query | None = None


NO_REQUEUE = Requeue()


@dataclass(frozen=True)
class Outcome:
    """A condition verdict with the requeue it asks for."""

    reason: str
    message: Text
    requeue: Requeue
    origin: Position
    when: Query | None = None
    reason_text: Text | None = None
    """A reason rendered from the pass (``{{ cause.label }}``: one row for a table of causes); the
    rendered reason must be declared in conditions.reasons. Only actions' verdicts take one."""
    status: bool = False
    """The condition's status (a step's `otherwise` may write True)."""


@dataclass(frozen=True)
class ErrorReport:
    """How a failed API call shows: the condition reason and message, and the pass error's text."""

    reason: str | None
    message: Text
    wrap: Text | None
    write_condition: bool = True
    """False: the pass returns the error and the step's condition keeps what it held."""


@dataclass(frozen=True)
class Input:
    """A read, done the first time an expression names it, then cached for the pass."""

    name: str
    verb: Literal["get", "list", "served"]
    api_version: Text
    kind: Text
    namespace: Text | None
    object_name: Text | None
    labels: tuple[tuple[Text, Text], ...]
    cluster: ClusterScope
    where: Query | None
    sort_by: Query | None
    children_only: bool
    live: bool
    unserved_absent: bool
    error: Text | None
    origin: Position
    labelled: bool = False
    """A get of an object carrying the ownership labels: a label-scoped cache's miss is absent."""
    reads: tuple[tuple[str, ...], ...] | None = None
    """A list's: every path of each item the rules read (``[]``: each element of a list), derived from every
    expression that names the input and its own ``where`` and ``sortBy``; None when one reads an item whole
    (or a template receives the list). A cache of only those fields may answer it (decision 0040)."""


@dataclass(frozen=True)
class Row:
    when: Query | None
    value: Query
    origin: Position
    text: Text | None = None
    """The row's value as a rendered text (then ``value`` is unused)."""


@dataclass(frozen=True)
class Value:
    """A named value: one query, a text (a document rendered by Jinja), or a decision table whose first
    matching row wins."""

    name: str
    query: Query | None
    rows: tuple[Row, ...]
    origin: Position
    text: Text | None = None


@dataclass(frozen=True)
class Gate:
    name: str
    when: Query | None
    conditions: tuple[str, ...]
    outcome: Outcome | None
    finalizer: bool
    requeue: Requeue
    origin: Position
    fail: bool = False
    error: ErrorReport | None = None
    own: tuple[tuple[str, str | None, Text | None], ...] = ()
    """(type, reason, message) of conditions with their own texts (None: the gate's)."""
    only_when: tuple[tuple[str, Query], ...] = ()
    """(type, query) of conditions written only when the query holds (else they keep what they held)."""

    @property
    def failed_reason(self) -> str:
        """The reason the gate's conditions take when its rules fail at run time: its error's, else ``Error``."""
        return (self.error.reason if self.error is not None else None) or "Error"

    def texts(self, condition: str) -> tuple[str | None, Text | None]:
        """The reason and message this gate writes to ``condition`` (None: the gate's own)."""
        for type_, reason, message in self.own:
            if type_ == condition:
                return reason, message
        return None, None


@dataclass(frozen=True)
class Action:
    """One action of a step; ``op`` names it and the fields that op uses are set."""

    op: Literal["apply", "ensure", "patch", "delete", "wait", "refuse", "status", "set", "fail", "log"]
    origin: Position
    when: Query | None = None
    error: ErrorReport | None = None
    template: ObjectTemplate | None = None
    cluster: ClusterScope = "management"
    adopt: Literal["children", "any", "owned"] = "children"
    bind: str | None = None
    status_subresource: bool = False
    target: str | None = None
    query: Query | None = None
    tolerate: frozenset[str] = frozenset()
    outcome: Outcome | None = None
    otherwise: tuple[Outcome, ...] = ()
    foreign: Outcome | None = None
    keep_going: bool = False
    level: str = "info"
    fields: tuple[tuple[str, Query], ...] = ()
    bindings: tuple[Value, ...] = ()
    each: Query | None = None
    """An apply's `forEach`: the list whose elements the template is rendered for, each as `item`."""
    once: bool = False
    """apply: create the child when absent, never apply it again (a live child is bound as it is)."""
    foreign_keep_going: bool = False
    """apply: the `foreign` verdict is recorded as a refusal and the step goes on (`continue: true`)."""


@dataclass(frozen=True)
class Output:
    """A step's named result: ``value`` at the step's end when its actions went through, else ``default``."""

    value: Value
    default: Query | None = None


@dataclass(frozen=True)
class Step:
    name: str
    condition: str
    metric: str
    requires: tuple[str, ...]
    skipped: Outcome | None
    error: ErrorReport
    actions: tuple[Action, ...]
    done: Outcome
    origin: Position
    when: Query | None = None
    otherwise: Outcome | None = None
    """The condition when ``when`` does not hold (None: ``skipped``)."""
    outputs: tuple[Output, ...] = ()
    """Names later steps read, bound at the step's end (``engine.reconcile.outputs``)."""


TeardownOp = Literal["read", "hold", "patch", "delete", "phase", "log", "fail"]


@dataclass(frozen=True)
class TeardownAction:
    """One teardown action; ``op`` names it and the fields that op uses are set."""

    op: TeardownOp
    origin: Position
    name: str | None = None
    when: Query | None = None
    reads: tuple[str, ...] = ()
    hold: Outcome | None = None
    condition: str = ""
    api_version: str = ""
    kind: str = ""
    object_name: Text | None = None
    namespace: Text | None = None
    cluster: ClusterScope = "management"
    children: bool = True
    where: Query | None = None
    sort_by: tuple[Query, ...] = ()
    body: Query | None = None
    guards: tuple[str, ...] = ()
    keep_going: bool = False
    read_error: Text | None = None
    error: Text | None = None
    message: Text | None = None
    level: str = "info"
    until: Query | None = None
    """A phase's: the actions after it run (while patient) only when this holds."""

    @property
    def writes(self) -> bool:
        return self.op in ("patch", "delete", "phase")


@dataclass(frozen=True)
class Teardown:
    patient_while: Query
    patient_requeue: Requeue
    actions: tuple[TeardownAction, ...]


@dataclass(frozen=True)
class Conditions:
    types: tuple[str, ...]
    ready_type: str
    true_reason: str
    true_message: str
    false_reason: str
    false_message: str
    reasons: frozenset[str]
    max_message_bytes: int
    truncate_suffix: str


@dataclass(frozen=True)
class Children:
    """The order's children: named under ``prefix``, labelled with the three ownership labels."""

    prefix: Text
    namespace: Text
    name_label: str
    namespace_label: str
    cluster_label: str
    cache_only_labelled: tuple[tuple[str, str], ...] = ()
    """(apiVersion, kind) cached only when an object carries ``name_label`` (``children.cacheOnlyLabelled``)."""
    quiet_removal: Query | None = None
    """``children.quietRemoval``: children whose removal after the order's own step deleted them wakes nothing."""


def _lookup(obj: Mapping[str, Any] | None, *path: str) -> Any:
    node: Any = obj
    for key in path:
        if type(node) is not dict and not isinstance(node, Mapping):  # decoded JSON is dicts: no ABC check
            return None
        node = node.get(key)
    return node


_PLAIN_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def plain_path(query: Query) -> tuple[str, ...] | None:
    """The keys of an expression that is only a dotted field path (``metadata.generation``), else None.

    Such a path reads what ``_lookup`` reads (null where a key is missing or a node is not an object), so a
    watch's update predicate, run twice on every event, can skip the JMESPath machinery for it."""
    return tuple(query.source.split(".")) if _PLAIN_PATH.fullmatch(query.source) else None


_ROOT_READING = frozenset({"function_expression", "or_expression", "and_expression", "not_expression",
                           "comparator", "multi_select_list", "literal"})
"""JMESPath nodes whose children read the same node they do (so, at the top, the context)."""


def read_paths(query: Query) -> tuple[tuple[str, ...], ...] | None:
    """The field paths from the context that an expression reads, when that is all it reads (functions,
    comparisons, ``||``/``&&``/``!``, literals and lists of those over field paths); None otherwise
    (projections, filters, pipes, indexes, ``@``: what they read depends on the data)."""
    found: list[tuple[str, ...]] = []

    def walk(node: dict[str, Any]) -> bool:
        kind = node.get("type")
        if kind == "field":
            found.append((str(node["value"]),))
            return True
        if kind == "subexpression":
            fields = node.get("children") or []
            if not fields or any(child.get("type") != "field" for child in fields):
                return False
            found.append(tuple(str(child["value"]) for child in fields))
            return True
        if kind in _ROOT_READING:
            return all(walk(child) for child in node.get("children") or [])
        return False

    return tuple(dict.fromkeys(found)) if walk(_parsed(query.source)) else None


@functools.lru_cache(maxsize=1024)
def _parsed(source: str) -> dict[str, Any]:
    tree: dict[str, Any] = jmespath.compile(source).parsed
    return tree


_MAPPING_INPUTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "order": (("metadata", "namespace"), ("metadata", "name")),
    "owner": (("metadata", "namespace"), ("metadata", "ownerReferences")),
    "labels": (("metadata", "labels"),),
    "labelled": (("metadata", "labels"),),
    "referenced": (("metadata", "namespace"), ("metadata", "name")),
}
"""What each query-free mapping of a watch reads of the object (the others run queries on any field)."""


ORDER_CHANGES = ("metadata.generation", "metadata.labels", "metadata.annotations",
                 "metadata.finalizers", "metadata.deletionTimestamp")
"""An order update that changes none of these (a status write) wakes nothing."""


@dataclass(frozen=True)
class CompiledWatch:
    """A kind whose events wake orders, and how an event maps to the orders it concerns."""

    api_version: str
    kind: str
    clusters: Literal["management", "all"]
    order_kind: str
    mapping: Literal["order", "owner", "labels", "labelled", "reference", "orders", "index", "referenced"]
    """labels: the order's children, by their labels; labelled (``mapBy: labels``): objects another controller
    writes carrying those labels (mapped alike, but not cached by a shard member's stamp, which they lack)."""
    origin: Position
    changed: tuple[Query, ...] = ()
    name_query: Query | None = None
    namespace_query: Query | None = None
    index_query: Query | None = None
    orders_query: Query | None = None
    labels: tuple[str, str, str] = ("", "", "")
    owner_api_version: str = ""
    owner_kind: str = ""
    ref_id: str = ""
    """A ``referenced`` watch's part of the engine-built index keys (unique among the kind's watches)."""
    ref_name_query: Query | None = None
    ref_namespace_query: Query | None = None

    @property
    def is_order(self) -> bool:
        return self.mapping == "order"

    @property
    def uses_index(self) -> bool:
        return self.mapping in ("index", "referenced")

    @functools.cached_property
    def _changed_paths(self) -> tuple[tuple[str, ...] | None, ...]:
        return tuple(plain_path(q) for q in self.changed)

    def passes(self, old: Obj | None, new: Obj | None) -> bool:
        """The update predicate: creations and deletions always pass; updates only when a watched part changed."""
        if old is None or new is None or not self.changed:
            return True
        for query, path in zip(self.changed, self._changed_paths, strict=True):
            if path is not None:
                if _lookup(old, *path) != _lookup(new, *path):
                    return True
            elif query.evaluate(old) != query.evaluate(new):
                return True
        return False

    def maps_alike(self, old: Obj, new: Obj) -> bool:
        """Whether ``old`` and ``new`` wake the same orders for certain: the mapping reads no query and the
        parts of the object it reads are equal (an update that changed only status wakes its orders once)."""
        reads = _MAPPING_INPUTS.get(self.mapping)
        return reads is not None and all(_lookup(old, *path) == _lookup(new, *path) for path in reads)

    def requests(self, obj: Obj, cluster: str,
                 index: Callable[[str], Iterable[tuple[str, str, str]]]) -> list[Request]:
        """The orders an event on ``obj`` (seen on ``cluster``) wakes."""
        namespace = _lookup(obj, "metadata", "namespace") or ""
        if self.mapping == "order":
            return [Request(self.order_kind, cluster, namespace, obj["metadata"]["name"])]
        if self.mapping == "owner":
            return [
                Request(self.order_kind, cluster, namespace, ref["name"])
                for ref in _lookup(obj, "metadata", "ownerReferences") or []
                if ref.get("controller") and ref.get("kind") == self.owner_kind
                and ref.get("apiVersion") == self.owner_api_version
            ]
        if self.mapping in ("labels", "labelled"):
            labels = _lookup(obj, "metadata", "labels") or {}
            name_key, namespace_key, cluster_key = self.labels
            name, order_namespace = labels.get(name_key), labels.get(namespace_key)
            if not name or not order_namespace:
                return []
            return [Request(self.order_kind, labels.get(cluster_key) or "", order_namespace, name)]
        if self.mapping == "reference":
            assert self.name_query is not None
            order_namespace = self.namespace_query.evaluate(obj) if self.namespace_query else namespace
            if not isinstance(order_namespace, str) or not order_namespace:
                return []
            return [Request(self.order_kind, cluster, order_namespace, name)
                    for name in names_in(self.name_query.evaluate(obj))]
        if self.mapping == "orders":
            assert self.orders_query is not None
            return [Request(self.order_kind, *key)
                    for key in order_keys(self.orders_query.evaluate(obj), cluster, namespace)]
        if self.mapping == "referenced":
            return referencing(self, obj, cluster, namespace, index)
        assert self.index_query is not None
        found: dict[tuple[str, str, str], None] = {}
        for key in names_in(self.index_query.evaluate(obj)):
            found.update(dict.fromkeys(sorted(index(key))))
        return [Request(self.order_kind, *member) for member in found]


REF_KEY = "\x00"
"""Starts every index key the engine builds for a ``referencedBy`` watch (no name or user key holds it)."""


def reference_key(watch: CompiledWatch, cluster: str, namespace: str | None, name: str) -> str:
    """The index key of a reference to ``name`` (in ``namespace``: the watch reads the namespace from the order;
    None: it compares the order's own) by an order on ``cluster``, for one ``referencedBy`` watch."""
    middle = "" if namespace is None else f"{namespace}{REF_KEY}"
    return f"{REF_KEY}{watch.ref_id}{REF_KEY}{cluster}{REF_KEY}{middle}{name}"


def reference_keys(watch: CompiledWatch, order: Obj, cluster: str) -> list[str]:
    """An order's index keys for one ``referencedBy`` watch: one per object it names, on its own cluster."""
    assert watch.ref_name_query is not None
    context = {"order": order}
    value = _reference(watch.ref_name_query, context)
    if not (value is None or isinstance(value, str)
            or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
        raise ExprError(watch.ref_name_query.source, f"a name is a string or a list of strings, not a "
                                                     f"{_type_name(value)}")
    names = names_in(value)
    if not names:
        return []
    if watch.ref_namespace_query is None:
        return [reference_key(watch, cluster, None, name) for name in names]
    namespace = _reference(watch.ref_namespace_query, context)
    if namespace is not None and not isinstance(namespace, str):
        raise ExprError(watch.ref_namespace_query.source, f"a namespace is a string, not a {_type_name(namespace)}")
    if not namespace:
        namespace = _lookup(order, "metadata", "namespace") or ""
    return [reference_key(watch, cluster, namespace, name) for name in names]


def _reference(query: Query, context: Obj) -> Any:
    """A ``referencedBy`` query's value; a field path through something that is no object (an order stored past its
    schema, ``spec.userRef: "x"``) fails, so the order is left out of the index and the failure logged and counted."""
    path = plain_path(query)
    if path is not None:
        node: Any = context
        for depth, key in enumerate(path):
            if node is None:
                return None
            if type(node) is not dict and not isinstance(node, Mapping):
                raise ExprError(query.source, f"{'.'.join(path[:depth])} is a {_type_name(node)}, not an object")
            node = node.get(key)
        return node
    return query.evaluate(context)


def _type_name(value: Any) -> str:
    """The JMESPath type name of a value (never the value)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    return "array" if isinstance(value, list) else type(value).__name__


def referencing(watch: CompiledWatch, obj: Obj, cluster: str, namespace: str,
                index: Callable[[str], Iterable[tuple[str, str, str]]]) -> list[Request]:
    """The orders on the event's cluster that name ``obj`` where a ``referencedBy`` watch says: in its namespace
    (the order's own, or the one the order names), or by name alone when the object has none (cluster-scoped)."""
    name = _lookup(obj, "metadata", "name")
    if not isinstance(name, str) or not name:
        return []
    if watch.ref_namespace_query is not None:
        members = index(reference_key(watch, cluster, namespace, name))
    else:
        members = [m for m in index(reference_key(watch, cluster, None, name)) if not namespace or m[1] == namespace]
    return [Request(watch.order_kind, *member) for member in members]


def names_in(value: Any) -> list[str]:
    """A name, or the names in a list (anything else, and empty strings, ignored: cluster data is untrusted)."""
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list):
        return list(dict.fromkeys(v for v in value if isinstance(v, str) and v))
    return []


def order_keys(value: Any, cluster: str, namespace: str) -> list[tuple[str, str, str]]:
    """(cluster, namespace, name) of the orders a watch's `orders` query names: a name, a list of names, or
    maps {name, namespace, cluster}; what a name or map leaves out is the event object's own."""
    items = value if isinstance(value, list) else [value]
    keys: dict[tuple[str, str, str], None] = {}
    for item in items:
        if isinstance(item, str) and item and namespace:
            keys[(cluster, namespace, item)] = None
        elif isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"]:
            order_cluster = item.get("cluster", cluster)
            order_namespace = item.get("namespace") or namespace
            if isinstance(order_cluster, str) and isinstance(order_namespace, str) and order_namespace:
                keys[(order_cluster, order_namespace, item["name"])] = None
    return list(keys)


@dataclass(frozen=True)
class CompiledKind:
    """Everything the engine needs to serve one order kind, compiled once."""

    name: str
    api_version: str
    kind: str
    plural: str
    finalizer: str
    field_manager: str
    conditions: Conditions
    children: Children
    inputs: Mapping[str, Input]
    values: Mapping[str, Value]
    gates: tuple[Gate, ...]
    steps: tuple[Step, ...]
    refresh: tuple[Outcome, ...]
    teardown: Teardown
    watches: tuple[CompiledWatch, ...]
    index_query: Query | None
    templates: Mapping[str, ObjectTemplate] = field(default_factory=dict)
    origin: Position = field(default_factory=lambda: Position("", 1, 1))
    stable_values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The values (and derived names) that stay the same for one order version and one version of each object
    their ``get`` inputs read -> those inputs; worked out by the compiler (``engine.rules.stable``)."""
    index_origin: Position = field(default_factory=lambda: Position("", 1, 1))
    """Where ``indexKey`` is written (an include, often), for the runtime's error log."""

    @property
    def key(self) -> str:
        return f"{self.api_version}/{self.kind}"

    @property
    def label_scopes(self) -> tuple[tuple[str, str, str], ...]:
        """(apiVersion, kind, label key): kinds cached only when an object carries this kind's name label."""
        return tuple((api_version, kind, self.children.name_label)
                     for api_version, kind in self.children.cache_only_labelled)

    @property
    def listed_beyond_children(self) -> tuple[tuple[str, str], ...] | None:
        """(apiVersion, kind) of every input that lists objects beyond the order's children (other orders' too);
        None when one names its kind by a template (any kind)."""
        found: list[tuple[str, str]] = []
        for spec in self.inputs.values():
            if spec.verb != "list" or spec.children_only:
                continue
            if not spec.api_version.is_constant or not spec.kind.is_constant:
                return None
            found.append((spec.api_version.source, spec.kind.source))
        return tuple(found)

    @property
    def projected_lists(self) -> dict[tuple[str, str], tuple[tuple[str, ...], ...] | None]:
        """(apiVersion, kind) of every input that lists objects beyond the order's children -> the paths of each
        item its rules read (merged over the inputs of that kind), or None when one reads items whole."""
        found: dict[tuple[str, str], tuple[tuple[str, ...], ...] | None] = {}
        for spec in self.inputs.values():
            if spec.verb != "list" or spec.children_only or not (spec.api_version.is_constant
                                                                 and spec.kind.is_constant):
                continue
            key = (spec.api_version.source, spec.kind.source)
            if key in found:
                before = found[key]
                found[key] = None if before is None or spec.reads is None else merge_reads(
                    [frozenset(before), frozenset(spec.reads)])
            else:
                found[key] = spec.reads
        return found

    @property
    def writes_named_clusters(self) -> bool:
        """Whether an action or a teardown action names its cluster by a text: then the order's children may be on
        any registered cluster; else only on the management cluster and the order's own (all a shard member's
        take-over needs to list, decision 0051)."""
        scopes = [action.cluster for step in self.steps for action in step.actions]
        scopes += [action.cluster for action in self.teardown.actions]
        return any(scope not in ("management", "order") for scope in scopes)

    @property
    def ownership_labels(self) -> tuple[str, str, str]:
        """The name, namespace and cluster label keys of the order's children."""
        return (self.children.name_label, self.children.namespace_label, self.children.cluster_label)

    @functools.cached_property
    def _references(self) -> tuple[CompiledWatch, ...]:
        return tuple(w for w in self.watches if w.mapping == "referenced")

    @functools.cached_property
    def _index_reads(self) -> tuple[tuple[str, ...], ...] | None:
        queries = [] if self.index_query is None else [self.index_query]
        queries += [q for w in self._references for q in (w.ref_name_query, w.ref_namespace_query) if q is not None]
        found: list[tuple[str, ...]] = []
        for query in queries:
            reads = read_paths(query)
            if reads is None:
                return None
            found += reads
        return tuple(dict.fromkeys(found))

    def index_alike(self, old: Obj, new: Obj) -> bool:
        """Whether ``old`` and ``new`` (one order, on one cluster) have the same index keys for certain: the
        index expression reads only field paths, and each reads a string (or nothing) equal in both. A
        status write leaves an order's keys as they were, so they need not be computed again."""
        reads = self._index_reads
        if not reads:
            return False
        for path in reads:
            if path == ("cluster",):
                continue  # one informer's orders share their cluster
            if path[0] != "order":
                return False
            before, after = _lookup(old, *path[1:]), _lookup(new, *path[1:])
            if before != after or not (before is None or type(before) is str) or type(before) is not type(after):
                return False
        return True

    def quiet_removal(self, child: Obj) -> bool:
        """Whether this child's removal, after a step of its order deleted it, changes nothing the rules read
        (``children.quietRemoval`` holds for it); False when the query fails on its data."""
        query = self.children.quiet_removal
        if query is None:
            return False
        try:
            value = query.evaluate(child)
        except ExprError:
            return False
        return not (value is None or value is False or value == "" or value == [] or value == {})

    def index_keys(self, order: Obj, cluster: str) -> list[str]:
        """The order's keys in the fan-out index: its ``indexKey`` keys (a key or a list of keys; ``cluster`` is the
        order's cluster, "" the management cluster, so a rule may index some clusters only), then the keys the engine
        builds for each ``referencedBy`` watch (the objects the order names, on its cluster)."""
        keys = [] if self.index_query is None else [
            key for key in names_in(self.index_query.evaluate({"order": order, "cluster": cluster}))
            if not key.startswith(REF_KEY)]
        for watch in self._references:
            keys += reference_keys(watch, order, cluster)
        return keys
