"""A pass formats the clock's reading, which changes once a second: the same moment formatted again costs no
``strftime``, and every moment still reads as RFC 3339 in UTC."""

from __future__ import annotations

import datetime as dt

from engine.clock import format_time
from tests.call_count import calls

MOMENT = dt.datetime(2026, 12, 6, 18, 4, 5, tzinfo=dt.UTC)


def test_the_same_moment_formatted_again_costs_one_call() -> None:
    format_time(MOMENT)
    assert calls(lambda: format_time(MOMENT)) <= 3  # the lambda, format_time, the profiler's disable: 5 before


def test_moments_read_as_utc_whatever_came_before() -> None:
    plus_two = dt.timezone(dt.timedelta(hours=2))
    assert format_time(MOMENT) == "2026-12-06T18:04:05Z"
    assert format_time(MOMENT.astimezone(plus_two)) == "2026-12-06T18:04:05Z"
    assert format_time(MOMENT + dt.timedelta(seconds=1)) == "2026-12-06T18:04:06Z"
    assert format_time(dt.datetime(2026, 1, 1, 1, tzinfo=plus_two)) == "2025-12-31T23:00:00Z"
    assert format_time(MOMENT) == "2026-12-06T18:04:05Z"
