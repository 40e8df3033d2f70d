"""Functions that ask about the clusters the operator knows: registered, and reachable now.

They are the only functions whose answer depends on the moment: a pass shows them its cluster
set (``clusters_in_view``), read through a context variable as ``password()`` finds its sink.
The management cluster (``''``) is registered and reachable everywhere; any other name, outside
a pass (a watch's query), is an error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Protocol

from engine.expr.errors import FunctionError
from engine.expr.registry import register

__all__ = ["ClusterView", "clusters_in_view"]


class ClusterView(Protocol):
    def registered(self, name: str) -> bool: ...

    def reachable(self, name: str) -> bool: ...


_view: ContextVar[ClusterView | None] = ContextVar("cluster_view", default=None)


@contextlib.contextmanager
def clusters_in_view(view: ClusterView) -> Iterator[None]:
    """Answer ``cluster_registered`` and ``cluster_reachable`` from ``view`` inside the block."""
    token = _view.set(view)
    try:
        yield
    finally:
        _view.reset(token)


def _current(function: str) -> ClusterView:
    view = _view.get()
    if view is None:
        raise FunctionError(f"{function}() knows the clusters only during a pass")
    return view


@register("cluster_registered", ("string",), returns="boolean", pure=False)
def cluster_registered(name: str) -> bool:
    """Whether a registration names the cluster (reachable or not); ``''``, the management cluster, always is."""
    return name == "" or _current("cluster_registered").registered(name)


@register("cluster_reachable", ("string",), returns="boolean", pure=False)
def cluster_reachable(name: str) -> bool:
    """Whether the cluster is registered and its API server answered the last call made to it; ``''`` always is."""
    return name == "" or _current("cluster_reachable").reachable(name)
