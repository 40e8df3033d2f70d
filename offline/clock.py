"""The simulated clock: time moves only when a test or scenario moves it.

Scenarios are deterministic because nothing reads the wall clock; the runtime's
timers and backoff run on this clock too, so `advance` is what retries a pass.
"""

from __future__ import annotations

import datetime as dt
import threading


class SimulatedClock:
    """A clock that stands still until ``advance`` or ``set``; never goes backwards.

    Satisfies ``engine.clock.Clock`` (and the runtime's movable clock).
    """

    def __init__(self, start: dt.datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("the simulated clock needs a timezone-aware start")
        self._lock = threading.Lock()
        self._now = start.astimezone(dt.UTC)

    def now(self) -> dt.datetime:
        with self._lock:
            return self._now

    def advance(self, delta: dt.timedelta) -> dt.datetime:
        """Move forward by ``delta`` (not negative); returns the new time."""
        if delta < dt.timedelta(0):
            raise ValueError(f"the clock cannot move backwards (advance by {delta})")
        with self._lock:
            self._now += delta
            return self._now

    def set(self, moment: dt.datetime) -> None:
        """Move to ``moment``, which must not be before the current time."""
        if moment.tzinfo is None:
            raise ValueError("the simulated clock needs a timezone-aware moment")
        moment = moment.astimezone(dt.UTC)
        with self._lock:
            if moment < self._now:
                raise ValueError(
                    f"the clock cannot move backwards (from {self._now.isoformat()} to {moment.isoformat()})"
                )
            self._now = moment

    def __repr__(self) -> str:
        return f"SimulatedClock({self.now().isoformat()})"
