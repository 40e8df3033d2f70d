"""The secret sink: every secret value the process knows, so logs and outputs can blank them.

``password()`` reports each value it generates to the current sink, and a pass that reads Secrets makes their
values known (``remember_secrets``); log redaction and the leak checks of the tests read the sink. The current sink
is a context variable, so each thread (and each test world) has its own.
"""

from __future__ import annotations

import base64
import contextlib
import threading
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

from engine.expr.secret_data import is_secret_object, secret_values_of


class SecretSink:
    """Collects every secret value the process knows (each generated password, and the secret values of
    every Secret a pass read), so log redaction blanks them and tests can check none leaks."""

    LEARNED = 65536
    """Versions of Secrets remembered as learned (then forgotten all at once): one version, one content."""

    def __init__(self) -> None:
        self._values: dict[str, None] = {}
        self._order: list[str] = []
        """The values in the order they were learned (the sink only grows): a reader catches up from its count."""
        self._lock = threading.Lock()
        self._learned: set[tuple[str, str]] = set()

    def _add_locked(self, values: Iterable[str]) -> None:
        for value in values:
            if value not in self._values:
                self._values[value] = None
                self._order.append(value)

    def add(self, value: str) -> None:
        with self._lock:
            self._add_locked((value,))

    def add_all(self, values: Iterable[str]) -> None:
        with self._lock:
            self._add_locked(values)

    def learn(self, value: Any) -> None:
        """Add the secret values (engine.expr.secret_data's rule) of every Secret in ``value``: an object,
        or a list of objects; anything else is ignored. A version of a Secret (uid, resourceVersion) learned
        already is not read again (issue 11: every pass reads the same Secrets; their values are known)."""
        for obj in value if isinstance(value, list) else (value,):
            if not is_secret_object(obj):
                continue
            meta = obj.get("metadata")
            version = (meta.get("uid"), meta.get("resourceVersion")) if type(meta) is dict else (None, None)
            known = version[0] and version[1] and type(version[0]) is str and type(version[1]) is str
            if known and version in self._learned:
                continue
            secrets_found = list(secret_values_of(obj))
            with self._lock:
                self._add_locked(secrets_found)
                if known:
                    if len(self._learned) >= self.LEARNED:
                        self._learned.clear()
                    self._learned.add(version)  # type: ignore[arg-type]

    def values(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._values)

    def count(self) -> int:
        """How many values the sink holds (a method, not ``len``: an empty sink stays truthy)."""
        return len(self._order)

    def values_from(self, start: int) -> list[str]:
        """The values learned after the first ``start`` ones, in the order they were learned."""
        with self._lock:
            return self._order[start:]

    def redact(self, text: str) -> str:
        """``text`` with every collected secret, plain or base64-encoded as Secret data holds it, replaced by
        ``[redacted]`` (longest first, so no part of a longer secret is left beside a shorter one's blank)."""
        for value in sorted(self.values(), key=len, reverse=True):
            if value:
                text = text.replace(value, "[redacted]")
                text = text.replace(base64.b64encode(value.encode("utf-8", "replace")).decode("ascii"), "[redacted]")
        return text


_Read = TypeVar("_Read")

current_sink: ContextVar[SecretSink | None] = ContextVar("current_sink", default=None)
"""The sink ``password()`` reports to; per thread (context), unset by default."""


def redact_secrets(text: str) -> str:
    """``text`` with every secret the current sink knows blanked (``SecretSink.redact``); as it is with no sink."""
    sink = current_sink.get()
    return text if sink is None else sink.redact(text)


def remember_secrets(value: _Read) -> _Read:
    """Make the secret values of every Secret in ``value`` (read from a cluster) known to the current sink,
    so a restarted operator blanks passwords it read back as it blanks those it generated; returns ``value``."""
    sink = current_sink.get()
    if sink is not None:
        sink.learn(value)
    return value


@contextlib.contextmanager
def use_sink(sink: SecretSink) -> Iterator[SecretSink]:
    """Report generated secrets to ``sink`` inside the block."""
    token = current_sink.set(sink)
    try:
        yield sink
    finally:
        current_sink.reset(token)
