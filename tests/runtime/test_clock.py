"""The simulated clock: stands still until moved, never moves backwards."""

from __future__ import annotations

import datetime as dt

import pytest

from offline.clock import SimulatedClock

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_now_is_the_start_until_moved() -> None:
    """Reading the clock does not move it."""
    clock = SimulatedClock(START)
    assert clock.now() == START
    assert clock.now() == START


def test_advance_moves_forward_by_delta() -> None:
    """advance adds the delta and returns the new time."""
    clock = SimulatedClock(START)
    assert clock.advance(dt.timedelta(seconds=90)) == START + dt.timedelta(seconds=90)
    assert clock.now() == START + dt.timedelta(seconds=90)


def test_set_moves_to_a_later_moment() -> None:
    """set jumps to the given moment."""
    clock = SimulatedClock(START)
    clock.set(START + dt.timedelta(hours=1))
    assert clock.now() == START + dt.timedelta(hours=1)


def test_set_refuses_to_go_backwards() -> None:
    """Moving to an earlier moment raises and leaves the clock where it was."""
    clock = SimulatedClock(START + dt.timedelta(hours=1))
    with pytest.raises(ValueError, match="backwards"):
        clock.set(START)
    assert clock.now() == START + dt.timedelta(hours=1)


def test_advance_refuses_a_negative_delta() -> None:
    """A negative advance raises."""
    with pytest.raises(ValueError, match="backwards"):
        SimulatedClock(START).advance(dt.timedelta(seconds=-1))


def test_naive_start_is_refused() -> None:
    """The clock is always timezone-aware."""
    with pytest.raises(ValueError, match="timezone"):
        SimulatedClock(dt.datetime(2026, 1, 1))


def test_other_timezones_are_converted_to_utc() -> None:
    """A start in another zone reads back as the same instant in UTC."""
    clock = SimulatedClock(dt.datetime(2026, 1, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=2))))
    assert clock.now() == START
    assert clock.now().tzinfo == dt.UTC
