"""Python calls a piece of work makes, counted with cProfile: the load-independent measure the cost tests bound
(issue 11), where a timed assertion would be flaky."""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable


def calls(work: Callable[[], object]) -> int:
    """How many Python calls ``work()`` makes (every function entered, C functions included)."""
    profile = cProfile.Profile()
    profile.enable()
    work()
    profile.disable()
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]
