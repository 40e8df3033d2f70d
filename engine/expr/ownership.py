"""``is_child(obj)``: whether an object is the order's child, as the engine tests it before a write.

The test needs the pass (the order's three ownership labels and its child-name prefix), so a pass
shows it through a context variable (``children_in_view``), as it shows its clusters to
``cluster_registered``. ``null`` is no child anywhere; any object outside a pass (a watch's query)
is an error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from engine.expr.errors import FunctionError
from engine.expr.registry import register

__all__ = ["CHILD_TEST", "children_in_view"]

CHILD_TEST: ContextVar[Callable[[Any], bool] | None] = ContextVar("child_test", default=None)
"""The pass's ownership test; a pass sets it directly (a context manager costs calls on every pass)."""


@contextlib.contextmanager
def children_in_view(test: Callable[[Any], bool]) -> Iterator[None]:
    """Answer ``is_child`` with ``test`` (the pass's ownership test) inside the block."""
    token = CHILD_TEST.set(test)
    try:
        yield
    finally:
        CHILD_TEST.reset(token)


@register("is_child", ("object", "null"), returns="boolean", pure=False)
def is_child(obj: Mapping[str, Any] | None) -> bool:
    """Whether the object carries the order's three ownership labels with its values and a name with its child
    prefix (what an apply requires before it writes); ``null`` is not."""
    if obj is None:
        return False
    test = CHILD_TEST.get()
    if test is None:
        raise FunctionError("is_child() knows the order's children only during a pass")
    return test(obj)
