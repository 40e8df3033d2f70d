"""Go duration strings (time.ParseDuration), as CRD rules and the ``duration`` format read them."""

from __future__ import annotations

import datetime
import re
from fractions import Fraction

_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_WHOLE = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+\Z")
_NANOS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_MAX_NANOS = 2**63 - 1


def parse_duration(text: str) -> datetime.timedelta:
    """``1h30m``, ``-1.5h``, ``300ms``, ``0``; ValueError worded like Go's for anything else,
    including durations beyond Go's int64 nanoseconds (about 292 years)."""
    if text in ("0", "+0", "-0"):
        return datetime.timedelta(0)
    nanos = Fraction(0)
    if _WHOLE.match(text):
        nanos = sum((Fraction(number) * _NANOS[unit] for number, unit in _PART.findall(text)), Fraction(0))
    if not _WHOLE.match(text) or nanos > _MAX_NANOS:
        raise ValueError(f'time: invalid duration "{text}"')
    sign = -1 if text.startswith("-") else 1
    return sign * datetime.timedelta(microseconds=int(nanos) / 1000)
