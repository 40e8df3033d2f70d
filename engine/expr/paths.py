"""The data paths an expression or template reads, for checking them against schemas.

``order.spec.region || 'x'`` reads ``("order", "spec", "region")``; ``[]`` stands for an array
element (``order.spec.hosts[0].name`` reads ``("order", "spec", "hosts", "[]", "name")``).
Only what can be followed exactly is reported: a path through a function call, a pipe of a
computed value or a multiselect is left out, so a path reported is a path read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jmespath
from jinja2 import nodes

from engine.expr.jinja import environment

__all__ = ["ELEMENT", "PathWalk", "parsed", "query_paths", "template_paths"]

ELEMENT = "[]"
"""The path segment of an array element."""

Path = tuple[str, ...]
_ROOT: Path = ()


class PathWalk:
    """A walk of a JMESPath AST that follows a value from the context through field steps.

    ``visit`` returns the context path of a node's value when it is one (None when it is computed); field,
    current and subexpression nodes are followed here alike for every walk, and each walk says in ``step``
    what any other node reads (its policy: report what can be followed, or find every path read)."""

    def visit(self, node: Mapping[str, Any], base: Path | None) -> Path | None:
        """The context path of ``node``'s value, evaluated on the value at ``base``; None when computed."""
        kind = node.get("type")
        children = [c for c in node.get("children", []) if isinstance(c, Mapping)]
        if kind == "field":
            return self.field(base, str(node.get("value")))
        if kind in ("current", "identity"):
            return base
        if kind == "subexpression":
            current = base
            for child in children:
                current = self.visit(child, current)
            return current
        return self.step(kind, node, children, base)

    def field(self, base: Path | None, name: str) -> Path | None:
        """The path of field ``name`` of the value at ``base``."""
        return None if base is None else (*base, name)

    def step(self, kind: Any, node: Mapping[str, Any], children: list[Mapping[str, Any]],
             base: Path | None) -> Path | None:
        """Any node but a field, current or subexpression one: its path, recording what it reads."""
        raise NotImplementedError


def parsed(source: str) -> Mapping[str, Any] | None:
    """The AST of a JMESPath expression; None when it does not parse."""
    try:
        tree: Mapping[str, Any] = jmespath.compile(source).parsed
    except jmespath.exceptions.JMESPathError:
        return None
    return tree


class _QueryWalk(PathWalk):
    """Reports every path it can follow exactly, and only those."""

    def __init__(self) -> None:
        self.paths: set[Path] = set()

    def field(self, base: Path | None, name: str) -> Path | None:
        path = super().field(base, name)
        if path is not None:
            self.paths.add(path)
        return path

    def element(self, base: Path | None) -> Path | None:
        return None if base is None or base == _ROOT else (*base, ELEMENT)

    def step(self, kind: Any, node: Mapping[str, Any], children: list[Mapping[str, Any]],
             base: Path | None) -> Path | None:
        if kind == "index_expression" and len(children) == 2:
            left = self.visit(children[0], base)
            return self.element(left) if children[1].get("type") == "index" else None
        if kind == "projection" and len(children) == 2:
            left = self.visit(children[0], base)
            self.visit(children[1], self.element(left))
            return None
        if kind == "filter_projection" and len(children) == 3:
            left = self.visit(children[0], base)
            element = self.element(left)
            self.visit(children[1], element)
            self.visit(children[2], element)
            return None
        if kind == "pipe" and len(children) == 2:
            left = self.visit(children[0], base)
            self.visit(children[1], left)
            return None
        if kind == "expref":
            for child in children:
                self.visit(child, None)
            return None
        for child in children:  # functions, comparisons, and/or/not, multiselects: read on the same base
            self.visit(child, base)
        return None


def query_paths(source: str) -> frozenset[Path]:
    """Every data path a JMESPath expression reads from its context (empty when it does not parse)."""
    tree = parsed(source)
    if tree is None:
        return frozenset()
    walk = _QueryWalk()
    walk.visit(tree, _ROOT)
    return frozenset(walk.paths)


def _chain(node: nodes.Node) -> Path | None:
    """``a.b['c']`` as ``("a", "b", "c")``; None when the chain does not start at a plain name."""
    if isinstance(node, nodes.Name):
        return (node.name,)
    if isinstance(node, nodes.Getattr):
        inner = _chain(node.node)
        return None if inner is None else (*inner, node.attr)
    if isinstance(node, nodes.Getitem):
        inner = _chain(node.node)
        if inner is None or not isinstance(node.arg, nodes.Const):
            return None
        key = node.arg.value
        return (*inner, key) if isinstance(key, str) else (*inner, ELEMENT) if isinstance(key, int) else None
    return None


def template_paths(source: str) -> frozenset[Path]:
    """Every data path a Jinja template or rule string reads through ``a.b`` and ``a['b']`` chains."""
    try:
        ast = environment().parse(source)
    except Exception:
        return frozenset()
    bound = {n.name for n in ast.find_all(nodes.Name) if n.ctx in ("store", "param")}
    methods = {id(call.node) for call in ast.find_all(nodes.Call) if isinstance(call.node, nodes.Getattr)}
    paths: set[Path] = set()
    for node in ast.find_all((nodes.Getattr, nodes.Getitem)):
        if id(node) in methods:
            continue
        path = _chain(node)
        if path is not None and path[0] not in bound:
            paths.add(path)
    return frozenset(paths)
