"""A projection: an object cut down to the fields some reads need, plus what a cache needs to keep it.

A cache that answers only reads known to look at a few paths of each object (decision 0040: a list input
read across orders, whose expressions read a handful of fields) keeps each object projected: its identity
(apiVersion, kind, name, namespace, uid, resourceVersion, labels) and, for each path, the subtree there
(``[]`` in a path stands for every element of a list). A read is answered from such a cache only when each of
its paths lies at or under a kept one (``covers``); anything else reads whole objects.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from engine.cluster.api import Obj

Path = tuple[str, ...]

ELEMENT = "[]"
"""A path segment standing for every element of a list."""

IDENTITY: tuple[Path, ...] = (
    ("apiVersion",), ("kind",),
    ("metadata", "name"), ("metadata", "namespace"), ("metadata", "uid"), ("metadata", "resourceVersion"),
    ("metadata", "labels"),
)
"""What every projected object keeps: a store keys, indexes, selects and expects by these."""

_WHOLE: dict[str, Any] = {}
"""The tree node of a subtree kept whole."""


def tree(paths: Iterable[Path]) -> dict[str, Any]:
    """The paths (identity included) as a nested map; a kept subtree's node is ``_WHOLE`` (empty)."""
    root: dict[str, Any] = {}
    for path in (*IDENTITY, *paths):
        if not path:
            raise ValueError("a projection of the whole object is no projection")
        node = root
        for index, segment in enumerate(path):
            if node is _WHOLE:
                break
            last = index == len(path) - 1
            child = node.get(segment)
            if last:
                node[segment] = _WHOLE
            elif child is None:
                node[segment] = child = {}
                node = child
            else:
                node = child
    return root


def project(obj: Obj, shape: Mapping[str, Any]) -> Obj:
    """``obj`` with only what ``shape`` (a ``tree``) keeps; the values kept are shared, not copied."""
    kept: Obj = _cut(obj, shape)
    return kept


def _cut(value: Any, shape: Mapping[str, Any]) -> Any:
    """``value`` cut to ``shape``; a field kept whole is copied in place, not cut by a call of its own (most of a
    shape's fields are: a projected watch cuts every event, decision 0078)."""
    if shape is _WHOLE:
        return value
    if isinstance(value, list):
        inner = shape.get(ELEMENT)
        return [_cut(item, inner) for item in value] if inner is not None else []
    if not isinstance(value, dict):
        return value  # a scalar where an object was expected: the read sees the same scalar
    out: dict[str, Any] = {}
    for key, sub in shape.items():
        if key in value:
            out[key] = value[key] if sub is _WHOLE else _cut(value[key], sub)
    return out


def covers(kept: Collection[Path], reads: Iterable[Path]) -> bool:
    """Whether every path read lies at or under a kept path (or is part of the identity)."""
    whole = (*IDENTITY, *kept)
    return all(any(read[:len(path)] == path for path in whole) for read in reads)
