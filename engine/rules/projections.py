"""Which fields of its items each list input's rules read (decision 0040), derived from every compiled expression.

A list read across orders (another order's objects) can be answered from a cache that keeps only some fields of
every object, when every expression that can see an item reads only those: each expression naming the input
(``engine.expr.reads``: a value passed anywhere but a field step is read whole), and the input's own ``where``
and ``sortBy`` (reading ``item``). A template or text naming the input receives it whole; an expression reading
``@`` at the root reads the whole context. Either gives None: the whole object is cached and read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from engine.expr.jinja import ObjectTemplate, Text
from engine.expr.jmes import Query
from engine.expr.reads import Path, element_reads, merge_reads
from engine.rules import model

__all__ = ["whole_reads", "with_reads"]


def _reads(spec: model.Input, exprs: Iterable[Query | Text | ObjectTemplate]) -> tuple[Path, ...] | None:
    found: list[frozenset[Path] | None] = []
    for expr in exprs:
        own = expr is spec.where or expr is spec.sort_by
        if not own and spec.name not in expr.names and "@" not in expr.names:
            continue
        if not isinstance(expr, Query):
            return None  # a template or text receives the list itself
        if own:
            found.append(element_reads(expr.source, "item", element=True))
        found.append(element_reads(expr.source, spec.name))
    return merge_reads(found)


def with_reads(inputs: Mapping[str, model.Input],
               exprs: Iterable[Query | Text | ObjectTemplate]) -> dict[str, model.Input]:
    """The inputs, each list with the paths of its items that ``exprs`` (every expression, text and template of the
    kind) read (``Input.reads``)."""
    every = list(exprs)
    return {name: dataclasses.replace(spec, reads=_reads(spec, every)) if spec.verb == "list" else spec
            for name, spec in inputs.items()}


def whole_reads(kind: model.CompiledKind) -> list[tuple[model.Input, str]]:
    """The list inputs read across orders whose items are read whole, with a note saying so (``engine lint``)."""
    notes = []
    for spec in kind.inputs.values():
        if spec.verb == "list" and not spec.children_only and spec.reads is None:
            notes.append((spec, f"note: input {spec.name!r} lists objects beyond the order's children and its items "
                                "are read whole (an expression passes an item or the list on, or a template names "
                                "it): under --sharded every replica keeps that kind whole, not by its label "
                                "(decision 0040)"))
    return notes
