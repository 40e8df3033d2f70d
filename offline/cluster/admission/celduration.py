"""CEL durations that keep nanoseconds, as the API server's (Go) CEL does.

celpy's DurationType is a ``datetime.timedelta``, which holds microseconds: ``duration('1ns')``
was ``0s`` there, so ``duration(self) == duration('0s')`` admitted ``1ns``, and ``59.999999999s``
rounded up to ``1m``. ExactDuration carries Go's integer nanoseconds and compares, adds and
reports on them; the timedelta underneath (truncated to microseconds) serves timestamp arithmetic.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from celpy import celtypes

from engine import durations

__all__ = ["ExactDuration", "parse"]


class ExactDuration(celtypes.DurationType):
    """A CEL duration of exact nanoseconds."""

    nanos: int

    def __new__(cls, nanos: int) -> ExactDuration:
        self = cast(ExactDuration, super().__new__(cls, durations.to_timedelta(nanos)))
        self.nanos = nanos
        return self

    def __repr__(self) -> str:
        return f"ExactDuration({durations.format_ns(self.nanos)!r})"

    def __str__(self) -> str:
        whole, rest = divmod(abs(self.nanos), durations.SECOND)
        fraction = f".{rest:09d}".rstrip("0") if rest else ""
        return f"{'-' if self.nanos < 0 else ''}{whole}{fraction}s"

    def __hash__(self) -> int:
        return hash(self.nanos)

    def __eq__(self, other: object) -> bool:
        theirs = _nanos(other)
        return NotImplemented if theirs is None else self.nanos == theirs

    def __ne__(self, other: object) -> bool:
        theirs = _nanos(other)
        return NotImplemented if theirs is None else self.nanos != theirs

    def __lt__(self, other: object) -> bool:
        theirs = _nanos(other)
        return NotImplemented if theirs is None else self.nanos < theirs

    def __le__(self, other: object) -> bool:
        theirs = _nanos(other)
        return NotImplemented if theirs is None else self.nanos <= theirs

    def __gt__(self, other: object) -> bool:
        theirs = _nanos(other)
        return NotImplemented if theirs is None else self.nanos > theirs

    def __ge__(self, other: object) -> bool:
        theirs = _nanos(other)
        return NotImplemented if theirs is None else self.nanos >= theirs

    def __add__(self, other: Any) -> Any:
        theirs = _nanos(other)
        return super().__add__(other) if theirs is None else _checked(self.nanos + theirs)

    def __radd__(self, other: Any) -> Any:
        theirs = _nanos(other)
        return super().__radd__(other) if theirs is None else _checked(theirs + self.nanos)

    def __sub__(self, other: Any) -> Any:
        theirs = _nanos(other)
        return super().__sub__(other) if theirs is None else _checked(self.nanos - theirs)

    def __rsub__(self, other: Any) -> Any:
        theirs = _nanos(other)
        return super().__rsub__(other) if theirs is None else _checked(theirs - self.nanos)

    def __neg__(self) -> ExactDuration:
        return _checked(-self.nanos)

    def getHours(self, tz_name: Any = None) -> celtypes.IntType:
        return celtypes.IntType(_towards_zero(self.nanos, durations.HOUR))

    def getMinutes(self, tz_name: Any = None) -> celtypes.IntType:
        return celtypes.IntType(_towards_zero(self.nanos, durations.MINUTE))

    def getSeconds(self, tz_name: Any = None) -> celtypes.IntType:
        return celtypes.IntType(_towards_zero(self.nanos, durations.SECOND))

    def getMilliseconds(self, tz_name: Any = None) -> celtypes.IntType:
        return celtypes.IntType(_towards_zero(self.nanos, durations.MS))


def parse(text: str) -> ExactDuration:
    """A Go duration string as a CEL duration; ValueError worded as Go's ``time: invalid duration "..."``."""
    try:
        return ExactDuration(durations.parse_ns(text))
    except durations.DurationError:
        raise ValueError(f'time: invalid duration "{text}"') from None


def _nanos(other: object) -> int | None:
    if isinstance(other, ExactDuration):
        return other.nanos
    if isinstance(other, dt.timedelta):
        return (other // dt.timedelta(microseconds=1)) * durations.US
    return None


def _checked(nanos: int) -> ExactDuration:
    if not -(1 << 63) <= nanos < 1 << 63:
        raise ValueError("duration out of range")
    return ExactDuration(nanos)


def _towards_zero(nanos: int, unit: int) -> int:
    whole = abs(nanos) // unit
    return -whole if nanos < 0 else whole
