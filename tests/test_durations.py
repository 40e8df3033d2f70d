"""The one Go-duration parser (engine/durations.py): time.ParseDuration and Duration.String, Go's edge cases.

Expected values are Go's own (the standard library's test tables where they exist). Every reader of a
duration goes through this module: rule files, expression functions, admission, scenarios, flags.
"""

import datetime as dt
import re
from pathlib import Path

import pytest

from engine import durations

NS, US, MS, S, M, H = 1, 1000, 1_000_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000


class TestParseDuration:
    @pytest.mark.parametrize(
        ("text", "ns"),
        [
            ("0", 0),
            ("5s", 5 * S),
            ("1478s", 1478 * S),
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            ("10ns", 10 * NS),
            ("11us", 11 * US),
            ("12\u00b5s", 12 * US),
            ("12\u03bcs", 12 * US),
            ("13ms", 13 * MS),
            ("15m", 15 * M),
            ("16h", 16 * H),
            ("720h", 720 * H),
            ("3h30m", 3 * H + 30 * M),
            ("10.5s4m", 4 * M + 10 * S + 500 * MS),
            ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
            ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
            ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
            ("52763797000ns", 52763797000),
            ("0.3333333333333333333h", 20 * M),
            ("9007199254740993ns", (1 << 53) + 1),
            ("9223372036854775807ns", (1 << 63) - 1),
            ("9223372036854775.807us", (1 << 63) - 1),
            ("9223372036s854ms775us807ns", (1 << 63) - 1),
            ("-9223372036854775808ns", -(1 << 63)),
            ("-9223372036854775.808us", -(1 << 63)),
            ("-9223372036s854ms775us808ns", -(1 << 63)),
            ("-2562047h47m16.854775808s", -(1 << 63)),
            ("0.100000000000000000000h", 6 * M),
            ("0.830103483285477580700h", 49 * M + 48 * S + 372539827),
            ("1.1s", S + 100 * MS),
            (".001s", MS),
            ("1h.5m", H + 30 * S),
        ],
    )
    def test_valid(self, text: str, ns: int) -> None:
        """Valid durations parse to Go's nanosecond values, fraction rounding included."""
        assert durations.parse_ns(text) == ns

    @pytest.mark.parametrize(
        "text",
        [
            "",
            "3",
            "-",
            "s",
            ".",
            "-.",
            ".s",
            "+.s",
            "1d",
            "1 h",
            "\ufffd",
            "9223372036854775810ns",
            "9223372036854775808ns",
            "-9223372036854775809ns",
            "9223372036854776us",
            "3000000h",
            "9223372036854775.808us",
            "9223372036854ms775us808ns",
            "-2562047h2562047h",
        ],
    )
    def test_invalid(self, text: str) -> None:
        """Inputs Go rejects raise DurationError."""
        with pytest.raises(durations.DurationError, match="invalid duration"):
            durations.parse_ns(text)

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            ("", "empty"),
            ("-", "empty"),
            ("3", "missing unit"),
            ("1h2", "missing unit"),
            ("s", "expected a number"),
            ("1h-2m", "unknown unit (use h, m, s, ms, us or ns)"),
            (".s", "a number has no digits"),
            ("1d", "unknown unit (use h, m, s, ms, us or ns)"),
            ("-2562047h2562047h", "overflow"),
        ],
    )
    def test_the_problem_is_named(self, text: str, problem: str) -> None:
        """The error says what is wrong (as Go tells a missing unit from an unknown one), so a rule author can
        fix the duration without guessing."""
        with pytest.raises(durations.DurationError) as caught:
            durations.parse_ns(text)
        assert str(caught.value) == f"invalid duration: {problem}"


class TestFormatDuration:
    @pytest.mark.parametrize(
        ("ns", "text"),
        [
            (0, "0s"),
            (1, "1ns"),
            (1100, "1.1\u00b5s"),
            (2200 * US, "2.2ms"),
            (3300 * MS, "3.3s"),
            (4 * M + 5 * S, "4m5s"),
            (4 * M + 5001 * MS, "4m5.001s"),
            (5 * H + 6 * M + 7001 * MS, "5h6m7.001s"),
            (8 * M + 1, "8m0.000000001s"),
            (H, "1h0m0s"),
            (-H, "-1h0m0s"),
            (10 * MS, "10ms"),
            ((1 << 63) - 1, "2562047h47m16.854775807s"),
            (-(1 << 63), "-2562047h47m16.854775808s"),
        ],
    )
    def test_matches_go(self, ns: int, text: str) -> None:
        """Duration.String output, from Go's own test table."""
        assert durations.format_ns(ns) == text

    @pytest.mark.parametrize(
        ("ns", "text"),
        [(999, "999ns"), (US, "1\u00b5s"), (999_999, "999.999\u00b5s"), (MS, "1ms"), (S - 1, "999.999999ms"),
         (S, "1s"), (M, "1m0s"), (M - 1, "59.999999999s")],
    )
    def test_unit_boundaries(self, ns: int, text: str) -> None:
        """Exactly one of a unit is written in that unit, as Go writes time.Microsecond, Millisecond, Second and
        Minute; one nanosecond less stays in the smaller unit."""
        assert durations.format_ns(ns) == text

    @pytest.mark.parametrize("text", ["1h15m30.918273645s", "720h0m0s", "1.5s", "10\u00b5s", "-3m0.5s"])
    def test_round_trip(self, text: str) -> None:
        """Formatting a parsed canonical duration gives the same text back."""
        assert durations.format_ns(durations.parse_ns(text)) == text


class TestShape:
    @pytest.mark.parametrize("text", [".5s", "1.s", "+1h", "-0", "0", "1μs", "1µs", "1h2m3s4ms5us6ns"])
    def test_every_go_duration_has_the_shape(self, text: str) -> None:
        """The pattern for schemas accepts exactly what Go parses, leading-dot fractions and signs included."""
        assert durations.looks_like_duration(text)
        durations.parse_ns(text)

    @pytest.mark.parametrize("text", ["", "3", "1d", ".s", "1 h", "1h ", "sha256(x)", "`10`", "order.spec.x"])
    def test_other_text_has_not(self, text: str) -> None:
        """Queries and malformed text are not durations."""
        assert not durations.looks_like_duration(text)


class TestConversions:
    def test_seconds(self) -> None:
        """parse_seconds is nanoseconds over 10**9: .5s is half a second everywhere."""
        assert durations.parse_seconds(".5s") == 0.5
        assert durations.parse_seconds("1ns") == 1e-9
        assert durations.parse_seconds("-1m30s") == -90.0

    @pytest.mark.parametrize(
        ("ns", "micros"), [(0, 0), (999, 0), (1500, 1), (-1500, -1), ((1 << 63) - 1, 9223372036854775)]
    )
    def test_timedelta_drops_below_microseconds_towards_zero(self, ns: int, micros: int) -> None:
        """A timedelta holds microseconds; the nanoseconds below are dropped, never rounded up."""
        assert durations.to_timedelta(ns) == dt.timedelta(microseconds=micros)

    def test_the_message_never_quotes_the_text(self) -> None:
        """The error names the problem only: the text may come from anywhere."""
        with pytest.raises(durations.DurationError) as caught:
            durations.parse_ns("12hunter2s")
        assert "unter" not in str(caught.value)
        assert str(caught.value) == "invalid duration: unknown unit (use h, m, s, ms, us or ns)"


def test_no_other_module_parses_go_durations() -> None:
    """One parser: no other module of engine/ or offline/ spells Go's unit list (the mark of a second parser)."""
    root = Path(__file__).resolve().parent.parent
    modules = [p for folder in ("engine", "offline") for p in sorted((root / folder).rglob("*.py"))]
    others = [str(p.relative_to(root)) for p in modules
              if p.name != "durations.py" and re.search(r"ns\|us|\"ms\":|'ms':", p.read_text(encoding="utf-8"))]
    assert others == []
