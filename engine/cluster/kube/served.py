"""Which kinds a server serves, as discovery last answered, so a rule's `served:` input (read on every
pass) does not ask the server each time.

A "served" answer stands until the cluster learns otherwise: a request or watch on the kind answers
a 404 that names no object (the kind left the server), or a CustomResourceDefinition is written
through this cluster. A "not served" answer stands for ``recheck`` seconds only, so a CRD installed
by someone else is found within that time (the informer of an unserved kind asks again every 30 s).

A real API server establishes a new CRD's kind, and drops a deleted one, a moment after the write: for
``settle`` seconds after a CRD written through this cluster no answer is remembered, so discovery is asked
until it shows the change.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

UNSERVED_RECHECK = 10.0
"""Seconds a "not served" answer stands before discovery is asked again."""
CRD_SETTLE = 5.0
"""Seconds after a CRD write through the cluster during which discovery's answers are not remembered."""

Key = tuple[str, str]
"""(apiVersion, kind)."""


class ServedKinds:
    """Discovery's answers per kind: "served" until forgotten, "not served" for ``recheck`` seconds."""

    def __init__(self, *, recheck: float = UNSERVED_RECHECK, settle: float = CRD_SETTLE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._recheck = recheck
        self._settle = settle
        self._settled_at = float("-inf")
        """Until when (the clock) answers are not remembered: a CRD was written through the cluster."""
        self._clock = clock
        self._lock = threading.Lock()
        self._served: set[Key] = set()
        self._unserved: dict[Key, float] = {}
        """Kind -> when discovery said it is not served."""

    def known(self, api_version: str, kind: str) -> bool | None:
        """The remembered answer, or None when discovery must be asked."""
        key = (api_version, kind)
        with self._lock:
            if key in self._served:
                return True
            since = self._unserved.get(key)
            if since is not None and self._clock() - since < self._recheck:
                return False
            return None

    def note(self, api_version: str, kind: str, served: bool) -> None:
        """Remember what discovery answered just now."""
        key = (api_version, kind)
        with self._lock:
            if self._clock() < self._settled_at:
                return
            if served:
                self._served.add(key)
                self._unserved.pop(key, None)
            else:
                self._served.discard(key)
                self._unserved[key] = self._clock()

    def forget(self, api_version: str | None = None, kind: str | None = None) -> None:
        """Ask discovery again next time: for one kind, or (no arguments, a CRD written) for every kind, and
        keep asking while the server settles."""
        with self._lock:
            if api_version is None or kind is None:
                self._settled_at = self._clock() + self._settle
                self._served.clear()
                self._unserved.clear()
            else:
                self._served.discard((api_version, kind))
                self._unserved.pop((api_version, kind), None)
