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


@contextmanager
def stamping(labels: Mapping[str, str]) -> Iterator[None]:
    """Passes run inside the block stamp ``labels`` on the objects they write for their order."""
    token = CHILD_STAMP.set(MappingProxyType(dict(labels)))
    try:
        yield
    finally:
        CHILD_STAMP.reset(token)
