"""The clock the engine reads: injected everywhere, so tests move time by hand."""

from __future__ import annotations

import datetime as dt
from typing import Protocol


class Clock(Protocol):
    """Tells the current time, always timezone-aware UTC."""

    def now(self) -> dt.datetime: ...


class SystemClock:
    """The wall clock, for the operator in production."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC).replace(microsecond=0)


def format_time(moment: dt.datetime) -> str:
    """RFC 3339 in UTC with a Z and whole seconds, as the API server stores timestamps.

    The last moment formatted is remembered: every pass formats the clock's reading, which changes once a
    second, and ``strftime`` is most of the cost."""
    global _last_formatted
    last = _last_formatted
    if last[0] == moment:
        return last[1]
    text = moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _last_formatted = (moment, text)  # one tuple replaced whole: a thread reads one pair or the other, never half
    return text


_last_formatted: tuple[dt.datetime | None, str] = (None, "")


def parse_time(text: str) -> dt.datetime:
    """Parse an RFC 3339 timestamp into an aware UTC datetime."""
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)
