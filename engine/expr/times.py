"""Time and duration functions of the shared function registry: RFC 3339 timestamps and Go durations.

Registered into ``registry`` on import (``functions.py`` imports this module). Parsed timestamps and formatted
seconds are cached by text: a pass reads the same few timestamps again and again.
"""

from __future__ import annotations

import functools
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from engine import durations
from engine.expr.errors import FunctionError
from engine.expr.registry import register as _register

_STR = ("string",)
_NUM = ("number",)
_ANY: tuple[str, ...] = ()


_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})",
    re.ASCII,
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _parse_time_us(ts: str, fn: str) -> int:
    """Microseconds since the epoch for an RFC 3339 timestamp."""
    us = _time_us(ts)
    if type(us) is str:
        raise FunctionError(f"{fn}(): {us}")
    return us  # type: ignore[return-value]


@functools.lru_cache(maxsize=4096)
def _time_us(ts: str) -> int | str:
    """``_parse_time_us`` of one text: the microseconds, or why there are none (the error names the calling
    function, so only the reason is kept). Cached (issue 11): a pass reads the same few timestamps (its order's
    status and conditions, ``now``) in several values, and each parse was a regex, a string and a datetime; the
    answer depends on the text alone."""
    match = _RFC3339.fullmatch(ts)
    if match is None:
        return "not an RFC 3339 timestamp"
    day, clock, fraction, zone = match.groups()
    micro = (fraction or "")[:6].ljust(6, "0")
    zone = "+00:00" if zone in "Zz" else zone
    try:
        parsed = datetime.fromisoformat(f"{day}T{clock}.{micro}{zone}")
    except ValueError:
        return "not a valid date or time"
    return (parsed - _EPOCH) // timedelta(microseconds=1)


def _format_time(seconds: int, fn: str) -> str:
    text = _time_text(seconds)
    if text is None:
        raise FunctionError(f"{fn}(): timestamp out of range")
    return text


@functools.lru_cache(maxsize=4096)
def _time_text(seconds: int) -> str | None:
    """RFC 3339 UTC whole seconds for seconds since the epoch (None: out of range); cached as ``_time_us``."""
    try:
        return (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    except OverflowError:
        return None


def _seconds(us: int) -> int | float:
    return us // 1_000_000 if us % 1_000_000 == 0 else us / 1_000_000


def _duration_ns(text: str, fn: str) -> int:
    try:
        return durations.parse_ns(text)
    except durations.DurationError as exc:
        raise FunctionError(f"{fn}(): {exc}") from None


@_register("duration_seconds", _STR, returns="number")
def duration_seconds(text: str) -> int | float:
    """A Go duration (``720h``, ``1m30s``, ``-1.5h``, ``10ms``, ``0``) in seconds."""
    ns = _duration_ns(text, "duration_seconds")
    return ns // 1_000_000_000 if ns % 1_000_000_000 == 0 else ns / 1e9


def _to_ns(seconds: float, fn: str) -> int:
    if isinstance(seconds, float) and not math.isfinite(seconds):
        raise FunctionError(f"{fn}(): seconds must be finite")
    if isinstance(seconds, int):
        return seconds * 1_000_000_000
    return round(seconds * 1e9)


@_register("format_duration", _NUM, returns="string")
def format_duration(seconds: float) -> str:
    """Seconds as Go's Duration.String writes them: ``1h0m0s``, ``1m30s``, ``1.5s``, ``10ms``, ``0s``."""
    return durations.format_ns(_to_ns(seconds, "format_duration"))


@_register("time_add", _STR, ("string", "number"), returns="string")
def time_add(ts: str, duration: str | float) -> str:
    """The timestamp plus a Go duration string or a number of seconds, as RFC 3339 UTC whole seconds."""
    ns = _duration_ns(duration, "time_add") if isinstance(duration, str) else _to_ns(duration, "time_add")
    total_us = _parse_time_us(ts, "time_add") + ns // 1000
    return _format_time(total_us // 1_000_000, "time_add")


@_register("time_diff", _STR, _STR, returns="number")
def time_diff(a: str, b: str) -> int | float:
    """Seconds from b to a (a - b)."""
    return _seconds(_parse_time_us(a, "time_diff") - _parse_time_us(b, "time_diff"))


@_register("time_before", _STR, _STR, returns="boolean")
def time_before(a: str, b: str) -> bool:
    """Whether a is strictly earlier than b."""
    return _parse_time_us(a, "time_before") < _parse_time_us(b, "time_before")


def _pick_time(fn: str, stamps: tuple[str | None, ...], latest: bool) -> str | None:
    best: tuple[int, str] | None = None
    for ts in stamps:
        if ts is None:
            continue
        us = _parse_time_us(ts, fn)
        if best is None or (us > best[0] if latest else us < best[0]):
            best = (us, ts)
    return None if best is None else best[1]


@_register("time_max", ("string", "null"), returns="string|null", variadic=True)
def time_max(*stamps: str | None) -> str | None:
    """The latest of the timestamps given (returned as written), ignoring nulls; null if all are null."""
    return _pick_time("time_max", stamps, latest=True)


@_register("time_min", ("string", "null"), returns="string|null", variadic=True)
def time_min(*stamps: str | None) -> str | None:
    """The earliest of the timestamps given (returned as written), ignoring nulls; null if all are null."""
    return _pick_time("time_min", stamps, latest=False)


@_register("valid_time", _ANY, returns="boolean")
def valid_time(value: Any) -> bool:
    """Whether ``value`` is an RFC 3339 timestamp the time functions accept."""
    if not isinstance(value, str):
        return False
    try:
        _parse_time_us(value, "valid_time")
    except FunctionError:
        return False
    return True


@_register("valid_duration", _ANY, returns="boolean")
def valid_duration(value: Any) -> bool:
    """Whether ``value`` is a Go duration string the duration functions accept (``720h``, ``-1h``, ``0``): a
    rule tests a field an order may hold past its CRD before it reads it."""
    if not isinstance(value, str):
        return False
    try:
        _duration_ns(value, "valid_duration")
    except FunctionError:
        return False
    return True
