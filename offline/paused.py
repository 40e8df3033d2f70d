"""A cluster whose calls a Python-call count does not see: what a pass costs the engine, counted with cProfile,
without the in-memory API server's own work (admission, CEL rules), which a real operator leaves to the server.
Used by the cost tests (tests/reconcile/test_pass_cost.py) and ``bench/converged_pass.py --count-calls``."""

from __future__ import annotations

import cProfile
from collections.abc import Callable
from typing import Any

from engine.cluster.api import Verb
from engine.cluster.wrapper import ClusterWrapper, T


class ProfilePaused(ClusterWrapper):
    """Forwards every call to the wrapped cluster with ``profile`` (when set) disabled for its duration."""

    profile: cProfile.Profile | None = None

    def pause(self, send: Callable[[], T]) -> T:
        """``send()``, not counted by ``profile``."""
        profile = self.profile
        if profile is None:
            return send()
        profile.disable()
        try:
            return send()
        finally:
            profile.enable()

    def _call(self, verb: Verb, api_version: str, kind: str, namespace: str | None, name: str | None,
              send: Callable[[], T], **extra: Any) -> T:
        return self.pause(send)
