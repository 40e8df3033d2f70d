"""What the runtime needs of compiled kinds and watches, as structural types.

The runtime only reads a few members of ``engine.rules.model.CompiledKind`` and
``CompiledWatch``; naming them here keeps the runtime testable with small fakes
and free of the compiler's internals. The compiled classes satisfy these
protocols without knowing them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from engine.clock import Clock
from engine.cluster.api import Obj
from engine.cluster.registry import ClusterSet
from engine.outcome import Request, Result

Index = Callable[[str], Iterable[tuple[str, str]]]
"""index(key): (namespace, name) of the management cluster's orders whose index key is ``key``."""

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
    def index_origin(self) -> object:
        """Where the index expression is written (``file:line:col``)."""
        ...

    def index_key(self, order: Obj) -> str | None: ...


Catalog = Mapping[str, OrderKind]

K_contra = TypeVar("K_contra", bound=OrderKind, contravariant=True)


class RunPass(Protocol[K_contra]):
    """``engine.reconcile.run.run_pass``: one pass of one order; API errors come back in the Result."""

    def __call__(self, kind: K_contra, request: Request, *, clusters: ClusterSet, clock: Clock, log: Log) -> Result: ...
