"""What an expression reads of each element of a named list, completely, or None when that cannot be known.

``engine.expr.paths`` reports the paths an expression reads for checking them against a schema: a path
through a function call is left out there, so what it reports is read, but not all that is read. A cache
that keeps only some fields of an object (a projection, decision 0040) needs the converse: every field an
expression may look at. So here a value that flows anywhere but into a field or index step (a function's
argument, a comparison, a ``||``, the expression's result) is read whole, as a subtree: ``length(claims)``
reads the whole list, ``claims[].spec`` every element's whole ``spec``. Anything this walk does not know is
read whole too. When the list itself or a whole element is read, the answer is None: only the whole object
will do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.expr.paths import ELEMENT, PathWalk, parsed

__all__ = ["Path", "context_reads", "element_reads", "merge_reads"]

Path = tuple[str, ...]


class _Walk(PathWalk):
    """Follows values from the context through field and index steps; records each one consumed as a leaf."""

    def __init__(self) -> None:
        self.leaves: set[Path] = set()

    def use(self, node: Mapping[str, Any], base: Path | None) -> None:
        """Evaluate ``node`` on the value at ``base`` and consume its result whole."""
        path = self.visit(node, base)
        if path is not None:
            self.leaves.add(path)

    def step(self, kind: Any, node: Mapping[str, Any], children: list[Mapping[str, Any]],
             base: Path | None) -> Path | None:
        if kind == "literal":
            return None
        if kind == "index_expression" and len(children) == 2:
            left = self.visit(children[0], base)
            if children[1].get("type") in ("index", "slice"):
                return None if left is None else (left if children[1].get("type") == "slice" else (*left, ELEMENT))
            self.use(children[1], left)
            return None
        if kind == "flatten" and len(children) == 1:
            return self.visit(children[0], base)  # a list of objects flattens to itself
        if kind == "projection" and len(children) == 2:
            left = self.visit(children[0], base)
            self.use(children[1], None if left is None else (*left, ELEMENT))
            return None
        if kind == "filter_projection" and len(children) == 3:
            left = self.visit(children[0], base)
            element = None if left is None else (*left, ELEMENT)
            self.use(children[2], element)
            self.use(children[1], element)
            return None
        if kind == "pipe" and len(children) == 2:
            return self.visit(children[1], self.visit(children[0], base))
        if kind == "key_val_pair":
            for child in children:
                self.use(child, base)
            return None
        if kind == "expref":
            for child in children:  # applied to the elements of another argument, which is consumed whole
                self.use(child, None)
            return None
        if kind in ("function_expression", "comparator", "and_expression", "or_expression", "not_expression",
                    "multi_select_dict", "multi_select_list"):
            for child in children:
                self.use(child, base)
            return None
        # Anything else (a value projection over an object's values, a node this walk does not know): the value
        # it starts from is read whole.
        if base is not None:
            self.leaves.add(base)
        for child in children:
            self.use(child, None)
        return None


def _leaves(source: str) -> set[Path] | None:
    tree = parsed(source)
    if tree is None:
        return None
    walk = _Walk()
    walk.use(tree, ())
    return walk.leaves


def context_reads(source: str) -> frozenset[Path] | None:
    """Every subtree of the context a JMESPath expression may read, as paths from the context (``()``: the
    whole context), or None when it does not parse. Complete: a value that flows anywhere but into a field
    or index step is read whole at that point."""
    leaves = _leaves(source)
    return None if leaves is None else frozenset(leaves)


def element_reads(source: str, name: str, *, element: bool = False) -> frozenset[Path] | None:
    """The subtrees of each element of the list ``name`` (in the context) that a JMESPath expression reads.

    element: ``name`` is one element itself (a ``where`` clause's ``item``). Empty when the expression does
    not read ``name``; None when it reads the list or a whole element (or does not parse)."""
    leaves = _leaves(source)
    if leaves is None:
        return None
    depth = 1 if element else 2
    found: set[Path] = set()
    for leaf in leaves:
        if not leaf:
            return None  # ``@`` at the root: the whole context, the list with it
        if leaf[0] != name:
            continue
        if not element and len(leaf) > 1 and leaf[1] != ELEMENT:
            continue  # a field of the list itself: null however much of each element is kept
        if len(leaf) <= depth:
            return None  # the list, or a whole element
        found.add(leaf[depth:])
    return frozenset(found)


def merge_reads(reads: Iterable[frozenset[Path] | None]) -> tuple[Path, ...] | None:
    """The union of several reads, as sorted paths none of which lies under another; None when one is None."""
    union: set[Path] = set()
    for read in reads:
        if read is None:
            return None
        union |= read
    kept = [path for path in union if not any(other != path and path[:len(other)] == other for other in union)]
    return tuple(sorted(kept))
