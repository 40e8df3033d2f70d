"""Go-exact formatting: strconv.Quote, net/url escaping, time.ParseDuration and Duration.String.

Expected values are Go's own (the standard library's test tables where they exist).
"""

import pytest

from engine.expr import golang
from engine.expr.errors import FunctionError

NS, US, MS, S, M, H = 1, 1000, 1_000_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000


class TestQuote:
    @pytest.mark.parametrize(
        ("text", "quoted"),
        [
            ("", '""'),
            ("admin", '"admin"'),
            ('say "hi"', '"say \\"hi\\""'),
            ("back\\slash", '"back\\\\slash"'),
            ("line\nbreak", '"line\\nbreak"'),
            ("\a\b\f\r\t\v", '"\\a\\b\\f\\r\\t\\v"'),
            ("\x00\x1b", '"\\x00\\x1b"'),
            ("\x7f", '"\\x7f"'),
            ("\u00a0", '"\\u00a0"'),
            ("\u00ad", '"\\u00ad"'),
            ("\u2028", '"\\u2028"'),
            ("\u3000", '"\\u3000"'),
            ("\ufeff", '"\\ufeff"'),
            ("\U000e0001", '"\\U000e0001"'),
            ("\U0010ffff", '"\\U0010ffff"'),
            ("é", '"é"'),
            ("☺", '"☺"'),
            ("\U0001f600", '"\U0001f600"'),
            ('"Fran & Freddie\'s Diner\t☺"', '"\\"Fran & Freddie\'s Diner\\t☺\\""'),
            ('admin"\n  evil: x', '"admin\\"\\n  evil: x"'),
        ],
    )
    def test_quote_matches_go(self, text: str, quoted: str) -> None:
        """Each case is what Go's strconv.Quote returns for the same string."""
        assert golang.quote(text) == quoted

    def test_lone_surrogate_becomes_replacement_character(self) -> None:
        """A lone surrogate (only from a JSON escape) prints as U+FFFD, as Go decodes it."""
        assert golang.quote("a\ud800b") == '"a\ufffdb"'

    def test_quote_list(self) -> None:
        """%q of a []string is space-separated quoted items in brackets."""
        assert golang.quote_list(["a", 'b"c']) == '["a" "b\\"c"]'
        assert golang.quote_list([]) == "[]"


SPECIALS = " ?&=#+%!<>#\"{}|\\^[]`☺\t:/@$'()*,;"


class TestEscape:
    def test_query_escape_matches_go(self) -> None:
        """url.QueryEscape escapes every reserved byte and writes space as +."""
        assert golang.query_escape("") == ""
        assert golang.query_escape("one two") == "one+two"
        assert golang.query_escape("10%") == "10%25"
        assert golang.query_escape(SPECIALS) == (
            "+%3F%26%3D%23%2B%25%21%3C%3E%23%22%7B%7D%7C%5C%5E%5B%5D%60%E2%98%BA%09%3A%2F%40%24%27%28%29%2A%2C%3B"
        )

    def test_path_escape_matches_go(self) -> None:
        """url.PathEscape keeps & = + : @ $ and escapes / ; , ? and space as %20."""
        assert golang.path_escape("one two") == "one%20two"
        assert golang.path_escape("10%") == "10%25"
        assert golang.path_escape(SPECIALS) == (
            "%20%3F&=%23+%25%21%3C%3E%23%22%7B%7D%7C%5C%5E%5B%5D%60%E2%98%BA%09:%2F@$%27%28%29%2A%2C%3B"
        )

    def test_userinfo_escape_matches_go(self) -> None:
        """url.UserPassword escapes only @ / ? : among the reserved characters."""
        assert golang.userinfo_escape("p@ss") == "p%40ss"
        assert golang.userinfo_escape("p@ss:w/o?rd$&+,;=") == "p%40ss%3Aw%2Fo%3Frd$&+,;="
        assert golang.userinfo_escape("A-z_0.9~") == "A-z_0.9~"
        assert golang.userinfo_escape("é %") == "%C3%A9%20%25"


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
        ],
    )
    def test_valid(self, text: str, ns: int) -> None:
        """Valid durations parse to Go's nanosecond values, fraction rounding included."""
        assert golang.parse_duration_ns(text) == ns

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
        ],
    )
    def test_invalid(self, text: str) -> None:
        """Inputs Go rejects raise FunctionError."""
        with pytest.raises(FunctionError, match="invalid duration"):
            golang.parse_duration_ns(text)


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
        assert golang.format_duration_ns(ns) == text

    @pytest.mark.parametrize("text", ["1h15m30.918273645s", "720h0m0s", "1.5s", "10\u00b5s", "-3m0.5s"])
    def test_round_trip(self, text: str) -> None:
        """Formatting a parsed canonical duration gives the same text back."""
        assert golang.format_duration_ns(golang.parse_duration_ns(text)) == text
