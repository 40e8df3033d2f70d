"""Go-exact formatting: strconv.Quote and net/url escaping.

Expected values are Go's own (the standard library's test tables where they exist).
"""

import pytest

from engine.expr import golang


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

    def test_every_ascii_character_quotes_as_character_by_character(self) -> None:
        """Plain strings skip the per-character walk; each ASCII character, alone and amid plain text, is
        still written as the walk writes it (the quote and the backslash escaped, controls as escapes)."""
        for code in range(128):
            char = chr(code)
            for text in (char, f"name-{char}-x", f"{char}{char}"):
                assert golang.quote(text) == '"' + "".join(golang._quote_char(c) for c in text) + '"', code

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
