"""Warnings admission has for a write that it nonetheless admits, as the API server sends them in ``Warning``
headers: a CEL rule's error on a value the update left unchanged (ratcheted) is told, not refused.

Admission runs deep inside a cluster's write; whoever answers the request (the HTTP emulator) collects what it
said with ``collecting()`` around the call. Outside such a block nothing is collected.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

_COLLECTED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("admission_warnings", default=None)


def warn(text: str) -> None:
    """Tell the request being answered, if anyone is listening."""
    collected = _COLLECTED.get()
    if collected is not None:
        collected.append(text)


@contextlib.contextmanager
def collecting() -> Iterator[list[str]]:
    """The warnings admission gives while the block runs (in this thread or task)."""
    collected: list[str] = []
    token = _COLLECTED.set(collected)
    try:
        yield collected
    finally:
        _COLLECTED.reset(token)
