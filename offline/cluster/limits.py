"""Request bodies a cluster refuses or reads as the API server does, before anything recurses over them.

A body nested deeper than ``MAX_DEPTH`` is refused with BadRequest (400): every later stage
(copying, merge patches, pruning, schema and CEL validation) walks objects recursively, and a
5000-deep document must be an answer, not a crash. Whole numbers beyond int64 are read as the
API server's JSON decoder reads them, as floating point numbers, so an ``integer`` field holding
10^30 is refused by the schema (422) instead of overflowing the CEL runtime.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.api import BadRequest

__all__ = ["MAX_DEPTH", "check_depth", "int64_or_float"]

MAX_DEPTH = 200
"""The deepest nesting of objects and lists a request body may have."""

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def check_depth(body: Any, what: str = "the request body") -> None:
    """BadRequest when ``body`` nests objects and lists deeper than MAX_DEPTH (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(body, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > MAX_DEPTH:
            raise BadRequest(f"{what} nests objects and lists deeper than {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children)


def int64_or_float(value: Any) -> Any:
    """``value`` with every whole number outside int64 turned into a float, as the API server decodes JSON."""
    if isinstance(value, dict):
        return {key: int64_or_float(item) for key, item in value.items()}
    if isinstance(value, list):
        return [int64_or_float(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _INT64_MAX:
        return float(value)
    return value
