"""Labels the engine adds to the objects a pass writes for its order: a shard member's (decision 0032).

``engine run --sharded`` sets them around each pass (the member's ``sharding.c5c3.io/shard: <member>``);
elsewhere (scenarios, ``engine test``, an unsharded run) there are none and nothing changes. An object the
pass renders is stamped when it is the order's own: it carries the order's name label and, when present,
its namespace and cluster labels with the order's values (a child, or a delivered object beside the order).
So a member's caches of those kinds can select by the stamp and hold only its orders' objects.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType

CHILD_STAMP: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "child_stamp", default=MappingProxyType({}))
"""The labels every object a pass writes for its order carries (set by the runtime around the pass)."""

STAMPED_KINDS: contextvars.ContextVar[frozenset[tuple[str, str]]] = contextvars.ContextVar(
    "stamped_kinds", default=frozenset())
"""(apiVersion, kind) whose children of the order all carry the stamp before a pass (the runtime relabels them
first): a list of the order's children of those kinds selects by the stamp too; of other kinds it does not (a
child another member stamped may still carry its label)."""


@contextmanager
def stamping(labels: Mapping[str, str], kinds: frozenset[tuple[str, str]] = frozenset()) -> Iterator[None]:
    """Passes run inside the block stamp ``labels`` on the objects they write for their order; ``kinds``: those
    whose children carry the stamp already (``STAMPED_KINDS``)."""
    token = CHILD_STAMP.set(MappingProxyType(dict(labels)))
    kinds_token = STAMPED_KINDS.set(kinds)
    try:
        yield
    finally:
        STAMPED_KINDS.reset(kinds_token)
        CHILD_STAMP.reset(token)
