"""Values that stay the same from one pass of an order to the next, and the memo that keeps them (decision 0052).

A pass computes every value it names afresh (``engine.reconcile.context``), yet most of an order's values read
only what does not change while the order converges. Such a value is a pure function of the order's ``uid`` and
``generation`` (bumped on every change of the spec) and its cluster, and of the ``uid`` and ``resourceVersion`` of
each object its ``get`` inputs read. ``stable_values`` finds those values by what their expressions and texts read
(completely: anything a walk does not know reads the whole context, and is not stable), and the inputs each may
read, transitively. A value that calls an impure function (``password()``, ``cluster_reachable()``), reads
``now``, ``status``, the conditions or steps of the pass, a list input, a name an action binds, or the order's
labels, annotations, finalizers or status is not stable; nor is a value that reads one that is not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jinja2 import nodes

from engine.expr.functions import FUNCTIONS
from engine.expr.jinja import Text, environment
from engine.expr.jmes import Query
from engine.expr.paths import ELEMENT
from engine.expr.reads import Path, context_reads

if TYPE_CHECKING:
    from engine.rules.model import CompiledKind, Value

__all__ = ["ORDER_FIXED", "stable_values"]

ORDER_FIXED = frozenset({"name", "namespace", "uid", "creationTimestamp", "generation"})
"""The order's metadata a stable value may read: what never changes for one uid, and the generation itself."""

DERIVED = ("prefix", "childNamespace", "childLabels")
"""The names a pass derives from the ``children`` section (``engine.reconcile.context.DERIVED``)."""

_PURE_FILTERS = frozenset({"tojson", "lower", "upper", "trim", "replace", "join", "default", "d", "string", "int",
                           "length", "first", "last", "title", "capitalize", "indent", "list", "sort", "unique"})
"""Jinja's own filters a stable text may use (none random, none reading a clock)."""


def _order_read_fixed(path: Path) -> bool:
    """Whether a read of ``path`` under ``order`` is of what one (uid, generation) fixes."""
    if len(path) < 2:
        return False  # the whole order
    if path[1] == "spec" or path[1] in ("apiVersion", "kind"):
        return True
    return path[1] == "metadata" and len(path) >= 3 and path[2] in ORDER_FIXED


def _query_names(query: Query) -> frozenset[str] | None:
    """The context names a query reads, or None when it reads what a stable value may not."""
    if any(fn in FUNCTIONS and not FUNCTIONS[fn].pure for fn in query.functions):
        return None  # the rest are registered pure, or JMESPath's own (all pure)
    reads = context_reads(query.source)
    if reads is None:
        return None
    names: set[str] = set()
    for path in reads:
        if not path or path[0] == ELEMENT:
            return None  # the whole context
        if path[0] == "order" and not _order_read_fixed(path):
            return None
        names.add(path[0])
    return frozenset(names)


def _chain(node: nodes.Name, parents: dict[int, nodes.Node]) -> Path:
    """The path read from a name: the name, then the attribute and constant-item steps taken from it."""
    path: list[str] = [node.name]
    step: nodes.Node = node
    while True:
        parent = parents.get(id(step))
        if isinstance(parent, nodes.Getattr) and parent.node is step:
            path.append(parent.attr)
        elif isinstance(parent, nodes.Getitem) and parent.node is step and isinstance(parent.arg, nodes.Const) \
                and isinstance(parent.arg.value, (str, int)) and not isinstance(parent.arg.value, bool):
            path.append(parent.arg.value if isinstance(parent.arg.value, str) else ELEMENT)
        else:
            return tuple(path)
        step = parent


def _text_names(text: Text) -> frozenset[str] | None:
    """The context names a rule text reads, or None when it reads what a stable value may not."""
    if text.is_constant:
        return frozenset()
    try:
        ast = environment().parse(text.source)
    except Exception:
        return None
    parents: dict[int, nodes.Node] = {}
    for parent in (ast, *ast.find_all(nodes.Node)):
        for child in parent.iter_child_nodes():
            parents[id(child)] = parent
    for call in ast.find_all(nodes.Call):
        called = call.node.name if isinstance(call.node, nodes.Name) else None
        if called is None or not (called in FUNCTIONS and FUNCTIONS[called].pure):
            return None  # a method, a Jinja global (lipsum), an impure function
    for flt in ast.find_all(nodes.Filter):
        if flt.name not in _PURE_FILTERS and not (flt.name in FUNCTIONS and FUNCTIONS[flt.name].pure):
            return None
    bound = {n.name for n in ast.find_all(nodes.Name) if n.ctx in ("store", "param")}
    names: set[str] = set()
    for ref in ast.find_all(nodes.Name):
        if ref.ctx != "load" or ref.name in bound or ref.name in FUNCTIONS:
            continue
        if ref.name == "order" and not _order_read_fixed(_chain(ref, parents)):
            return None
        names.add(ref.name)
    return frozenset(names)


def _value_names(value: Value) -> frozenset[str] | None:
    parts: list[frozenset[str] | None] = []
    if value.query is not None:
        parts.append(_query_names(value.query))
    if value.text is not None:
        parts.append(_text_names(value.text))
    for row in value.rows:
        if row.when is not None:
            parts.append(_query_names(row.when))
        parts.append(_query_names(row.value))
    for part in parts:
        if part is None:
            return None
    return frozenset().union(*parts)  # type: ignore[arg-type]


def _bound_names(kind: CompiledKind) -> set[str]:
    """Names an action binds in the pass's scope (``as:``, ``set:``): they may shadow a value."""
    bound: set[str] = set()
    for step in kind.steps:
        for action in step.actions:
            if action.bind:
                bound.add(action.bind)
            bound.update(binding.name for binding in action.bindings)
    return bound


def stable_values(kind: CompiledKind) -> dict[str, tuple[str, ...]]:
    """Each value (and derived name) that stays the same for one order version and one version of each object
    its ``get`` inputs read -> those inputs' names, sorted (the memo's key reads their objects' versions)."""
    bound = _bound_names(kind)
    found: dict[str, frozenset[str] | None] = {}

    def inputs_of(name: str, stack: tuple[str, ...]) -> frozenset[str] | None:
        if name in found:
            return found[name]
        if name in stack or name in bound:
            return None
        if name == "cluster":
            return frozenset()
        names: frozenset[str] | None
        spec = kind.inputs.get(name)
        if spec is not None:
            return frozenset({name}) if spec.verb == "get" else None
        value = kind.values.get(name)
        if value is not None:
            names = _value_names(value)
        elif name == "prefix":
            names = _text_names(kind.children.prefix)
        elif name == "childNamespace":
            names = _text_names(kind.children.namespace)
        elif name == "childLabels":
            names = frozenset({"cluster"})  # the order's name and namespace, and its cluster
        else:
            return None  # now, status, conditions, steps, clusters, or a name no rule defines
        result: frozenset[str] | None = frozenset()
        for read in names or ():
            if read == "order":
                continue  # checked: only what one (uid, generation) fixes
            sub = inputs_of(read, (*stack, name))
            if sub is None:
                result = None
                break
            result = result | sub  # type: ignore[operator]
        if names is None:
            result = None
        found[name] = result
        return result

    stable: dict[str, tuple[str, ...]] = {}
    for name in (*kind.values, *DERIVED):
        reads = inputs_of(name, ())
        if reads is not None:
            stable[name] = tuple(sorted(reads))
    return stable
