"""Bounded retries for the loops that run for ever (watches): how long to wait, and how often to say so.

Shared by every informer and the registration watch, so a watch that keeps failing costs at most about one
request a second and a cluster that cannot be reached does not fill the log (decision 0055):

- ``Backoff``: the first Gone (410) of a streak re-lists at once (a resourceVersion expiring is normal); each
  further failure in a row waits RETRY_MIN doubling up to RETRY_MAX, stretched by up to JITTER so loops do not
  retry in step. A stream that ends before its first event is a failure too (``ended``), unless it lasted its
  whole timeout or QUIET seconds (a real API server sends no bookmark on a quiet kind). An event (a bookmark
  counts) ends the streak; after FAILING_AFTER failures in a row the watch is ``failing`` (metric and /readyz).
- ``WarningLimiter``: at most one warning per cluster per minute; the next one says how many were held back.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

RETRY_MIN = 1.0
RETRY_MAX = 30.0
JITTER = 0.5
"""A wait is its nominal length times 1 to 1 + JITTER: never shorter, so the bound holds."""
QUIET = 30.0
"""Seconds after which a stream that ended without an event was a quiet watch, not a cut one."""
FAILING_AFTER = 5
"""Failures in a row after which a watch is failing: at least 15 s of them (waits of 1 + 2 + 4 + 8 s), 7 s when
every one is a Gone (the first re-lists at once)."""

WARNING_PERIOD = 60.0


class Backoff:
    """The waits of one loop, from its current streak of failures."""

    def __init__(self, *, minimum: float = RETRY_MIN, maximum: float = RETRY_MAX, jitter: float = JITTER,
                 rand: Callable[[], float] = random.random, failing_after: int = FAILING_AFTER) -> None:
        self._failing_after = failing_after
        self._minimum = minimum
        self._maximum = maximum
        self._jitter = jitter
        self._rand = rand
        self.streak = 0
        """Failures in a row since the last event of a watch."""

    @property
    def failing(self) -> bool:
        """Whether the streak has reached FAILING_AFTER failures."""
        return self.streak >= self._failing_after

    def after_gone(self) -> float:
        """Seconds to wait before listing again after a Gone: none the first time in a streak."""
        self.streak += 1
        return 0.0 if self.streak == 1 else self._delay(self.streak - 1)

    def after_failure(self) -> float:
        """Seconds to wait after any other failure."""
        self.streak += 1
        return self._delay(self.streak)

    def ended(self, events: int, *, lasted: float, timeout: float | None) -> float:
        """Seconds to wait after a stream ended that delivered ``events`` (a bookmark counts) in ``lasted`` seconds,
        having asked for ``timeout``. One that ended before its first event, before its timeout and within QUIET
        seconds (cut after its headers) is a failure: the wait of one. Any other ends the streak: none."""
        if not events and lasted < min(timeout or QUIET, QUIET):
            return self.after_failure()
        self.reset()
        return 0.0

    def reset(self) -> None:
        """A watch worked (an event, or a quiet watch that lasted): the streak ends, the next Gone re-lists at once."""
        self.streak = 0

    def _delay(self, n: int) -> float:
        nominal = min(self._maximum, self._minimum * 2.0 ** min(n - 1, 16))
        return nominal * (1.0 + self._jitter * self._rand())


class WarningLimiter:
    """At most one warning per key (a cluster's name) per ``period`` seconds."""

    def __init__(self, *, period: float = WARNING_PERIOD, clock: Callable[[], float] = time.monotonic) -> None:
        self._period = period
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def allow(self, key: str) -> int | None:
        """None: hold this warning back. Else the warning may be written; the number is how many were
        held back since the last one."""
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._period:
                self._held[key] = self._held.get(key, 0) + 1
                return None
            self._last[key] = now
            return self._held.pop(key, 0)

    @staticmethod
    def suffix(held: int) -> str:
        """What to append to the warning that is written."""
        return f" ({held} more like it in the last minute not shown)" if held else ""


CLUSTER_WARNINGS = WarningLimiter()
"""The process's limiter, shared by every layer that warns about one cluster (its informers, its cache)."""
