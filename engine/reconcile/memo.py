"""Each order's stable values, remembered from one pass to the next (decision 52).

``engine.rules.stable`` finds the values that stay the same for one version of the order (uid, generation)
and one version of each object their ``get`` inputs read; a pass puts those it remembers in its scope instead
of computing them again (``engine.reconcile.context``). The runtime owns the table of one set of clusters
(``Manager``: one per ``engine run``, one per scenario world) and sets it around each pass (``remembering``);
a pass run outside it (a test calling ``run_pass``) remembers nothing.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Remembered", "ValueMemos", "remembering"]

Remembered = dict[tuple[str, ...], tuple[tuple[Any, ...], dict[str, Any]]]
"""One order's stable values: by the inputs they read, the versions (uid, resourceVersion) those read then,
and the values (only strings, numbers, booleans and nulls: never a container a reader could change)."""


class ValueMemos:
    """The stable values of each order of each kind: bounded, least recently used out.

    An order's entry is dropped whole when its (uid, generation) differs, and a kind's when its rules were
    replaced (a reload compiles new values). One pass of an order runs at a time, so an entry is read and
    filled by one thread; the table itself is shared by the workers, under a lock."""

    def __init__(self, orders: int = 4096) -> None:
        self.orders = orders
        self._entries: dict[tuple[str, str, str, str], tuple[object, tuple[Any, ...], Remembered]] = {}
        self._lock = threading.Lock()

    def of(self, kind: object, key: tuple[str, str, str, str], version: tuple[Any, ...]) -> Remembered:
        """The memo of one order (kind key, cluster, namespace, name) at ``version`` (uid, generation) under the
        rules ``kind``: its own dict, which the pass reads and fills."""
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is None or entry[0] is not kind or entry[1] != version:
                entry = (kind, version, {})
            self._entries[key] = entry  # the most recently used last
            if len(self._entries) > self.orders:
                del self._entries[next(iter(self._entries))]
            return entry[2]

    def __len__(self) -> int:
        return len(self._entries)


VALUE_MEMOS: contextvars.ContextVar[ValueMemos | None] = contextvars.ContextVar("value_memos", default=None)
"""The table the passes of this thread remember stable values in (set by the runtime); None: nothing kept."""


@contextmanager
def remembering(memos: ValueMemos) -> Iterator[None]:
    """Passes run inside the block remember their orders' stable values in ``memos``."""
    token = VALUE_MEMOS.set(memos)
    try:
        yield
    finally:
        VALUE_MEMOS.reset(token)
