"""Go durations (``time.ParseDuration`` and ``Duration.String``): the one parser of the engine.

Rule files (``requeue:``), expression functions, CRD admission (CEL ``duration()`` and the
``duration`` format), scenario files and the operator's flags all read durations here, so
``.5s`` or ``1ns`` mean the same thing everywhere: Go's integer nanoseconds, with Go's own
float rounding of fractions and int64 range. Imports nothing of the engine: every layer may use it.
"""

from __future__ import annotations

import datetime as dt
import re

__all__ = ["PATTERN", "DurationError", "format_ns", "looks_like_duration", "parse_ns", "parse_seconds", "to_timedelta"]

NS = 1
US = 1000 * NS
MS = 1000 * US
SECOND = 1000 * MS
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS = {
    "ns": NS,
    "us": US,
    "\u00b5s": US,  # MICRO SIGN
    "\u03bcs": US,  # GREEK SMALL LETTER MU
    "ms": MS,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_MAX = 1 << 63
_DIGITS = "0123456789"

PATTERN = r"^[-+]?(0|(([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$"
"""The shape of a Go duration, for JSON Schema and pydantic; parse_ns also checks the int64 range."""
_SHAPE = re.compile(PATTERN)


class DurationError(ValueError):
    """Not a Go duration. The message names the problem, never the text (it may come from anywhere)."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"invalid duration: {problem}")
        self.problem = problem


def looks_like_duration(text: str) -> bool:
    """Whether the text has a duration's shape (it may still overflow)."""
    return bool(_SHAPE.match(text))


def _leading_int(s: str) -> tuple[int, str]:
    i = 0
    value = 0
    while i < len(s) and s[i] in _DIGITS:
        if value > _MAX // 10:
            raise DurationError("overflow")
        value = value * 10 + int(s[i])
        if value > _MAX:
            raise DurationError("overflow")
        i += 1
    return value, s[i:]


def _leading_fraction(s: str) -> tuple[int, float, str]:
    i = 0
    value = 0
    scale = 1.0
    overflow = False
    while i < len(s) and s[i] in _DIGITS:
        if not overflow:
            nxt = value * 10 + int(s[i])
            if value > (_MAX - 1) // 10 or nxt > _MAX:
                overflow = True  # Go ignores the digits it can no longer hold
            else:
                value = nxt
                scale *= 10
        i += 1
    return value, scale, s[i:]


def parse_ns(text: str) -> int:
    """Go's ``time.ParseDuration`` in integer nanoseconds: ``1h30m``, ``-1.5h``, ``.5s``, ``1ns``, ``0``."""
    s = text
    negative = False
    if s and s[0] in "+-":
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise DurationError("empty")
    total = 0
    while s:
        if not (s[0] == "." or s[0] in _DIGITS):
            raise DurationError("expected a number")
        before = len(s)
        whole, s = _leading_int(s)
        has_whole = len(s) != before
        frac, scale, has_frac = 0, 1.0, False
        if s and s[0] == ".":
            s = s[1:]
            before = len(s)
            frac, scale, s = _leading_fraction(s)
            has_frac = len(s) != before
        if not has_whole and not has_frac:
            raise DurationError("a number has no digits")
        i = 0
        while i < len(s) and not (s[i] == "." or s[i] in _DIGITS):
            i += 1
        if i == 0:
            raise DurationError("missing unit")
        unit_text, s = s[:i], s[i:]
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise DurationError("unknown unit (use h, m, s, ms, us or ns)")
        if whole > _MAX // unit:
            raise DurationError("overflow")
        value = whole * unit
        if frac > 0:
            value += int(float(frac) * (float(unit) / scale))  # Go rounds fractions through float64 too
            if value > _MAX:
                raise DurationError("overflow")
        total += value
        if total > _MAX:
            raise DurationError("overflow")
    if negative:
        return -total
    if total > _MAX - 1:
        raise DurationError("overflow")
    return total


def parse_seconds(text: str) -> float:
    """A Go duration in seconds (a float: nanoseconds beyond its precision are rounded)."""
    return parse_ns(text) / SECOND


def to_timedelta(ns: int) -> dt.timedelta:
    """Nanoseconds as a timedelta, which holds microseconds: the rest is dropped (towards zero)."""
    whole = abs(ns) // US
    return dt.timedelta(microseconds=-whole if ns < 0 else whole)


def _frac(value: int, precision: int) -> tuple[str, int]:
    """Go's ``fmtFrac``: the fraction of value/10**precision without trailing zeros, and the quotient."""
    digits: list[str] = []
    printed = False
    for _ in range(precision):
        digit = value % 10
        printed = printed or digit != 0
        if printed:
            digits.append(str(digit))
        value //= 10
    text = "." + "".join(reversed(digits)) if printed else ""
    return text, value


def format_ns(ns: int) -> str:
    """Go's ``time.Duration.String``: ``1h0m0s``, ``1m30s``, ``1.5s``, ``10ms``, ``0s``."""
    negative = ns < 0
    u = -ns if negative else ns
    if u < SECOND:
        if u == 0:
            return "0s"
        if u < US:
            body = f"{u}ns"
        elif u < MS:
            frac, whole = _frac(u, 3)
            body = f"{whole}{frac}\u00b5s"
        else:
            frac, whole = _frac(u, 6)
            body = f"{whole}{frac}ms"
    else:
        frac, seconds = _frac(u, 9)
        body = f"{seconds % 60}{frac}s"
        minutes = seconds // 60
        if minutes > 0:
            body = f"{minutes % 60}m{body}"
            hours = minutes // 60
            if hours > 0:
                body = f"{hours}h{body}"
    return f"-{body}" if negative else body
