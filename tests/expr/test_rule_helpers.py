"""The helpers rule files lean on where JMESPath falls short: root comparisons, conditionals, ownership, time checks."""

from __future__ import annotations

from engine.expr.functions import FUNCTIONS, SecretSink, address_only, use_sink
from engine.expr.jmes import compile_query


def q(source: str, **context: object) -> object:
    return compile_query(source).evaluate(context)


class TestWhereEq:
    def test_compares_a_path_against_a_value_from_the_root(self) -> None:
        """Elements whose dotted path equals a root value are kept; a missing path reads null."""
        entries = [{"namespace": "a", "ref": {"name": "x"}}, {"namespace": "a"}, {"namespace": "b"}]
        assert q("where_eq(entries, 'namespace', ns)", entries=entries, ns="a") == entries[:2]
        assert q("where_eq(entries, 'ref.name', `null`)", entries=entries) == entries[1:]

    def test_null_list_reads_empty(self) -> None:
        """A missing list (null) yields an empty list, not an error."""
        assert q("where_eq(missing, 'a', 'b')") == []


class TestIfElse:
    def test_uses_jmespath_truthiness(self) -> None:
        """Zero is true; null, false and empty values are false."""
        assert q("if_else(`0`, 'yes', 'no')") == "yes"
        for falsy in ("`null`", "`false`", "''", "`[]`", "`{}`"):
            assert q(f"if_else({falsy}, 'yes', 'no')") == "no"


class TestControlledBy:
    def test_only_a_controller_reference_with_the_owners_uid_counts(self) -> None:
        """A controller ownerReference to the owner's uid is control; a plain reference or another uid is not."""
        owner = {"metadata": {"uid": "u1"}}
        mine = {"metadata": {"ownerReferences": [{"uid": "u1", "controller": True}]}}
        plain = {"metadata": {"ownerReferences": [{"uid": "u1"}]}}
        other = {"metadata": {"ownerReferences": [{"uid": "u2", "controller": True}]}}
        assert FUNCTIONS["controlled_by"].impl(mine, owner) is True
        assert FUNCTIONS["controlled_by"].impl(plain, owner) is False
        assert FUNCTIONS["controlled_by"].impl(other, owner) is False
        assert FUNCTIONS["controlled_by"].impl(None, owner) is False


class TestValidTimeAndTrimSuffix:
    def test_valid_time_accepts_rfc3339_only(self) -> None:
        """An RFC 3339 timestamp is valid; garbage, empty strings and non-strings are not."""
        assert q("valid_time('2026-01-01T00:00:00Z')") is True
        assert q("valid_time('yesterday')") is False
        assert q("valid_time('')") is False
        assert q("valid_time(`3`)") is False

    def test_valid_duration_accepts_go_durations_only(self) -> None:
        """A Go duration (negative included: its sign is the rule's to judge) is valid; other text, an empty string
        and a number are not."""
        assert q("valid_duration('720h')") is True
        assert q("valid_duration('-1h')") is True
        assert q("valid_duration('0')") is True
        assert q("valid_duration('1 hour')") is False
        assert q("valid_duration('')") is False
        assert q("valid_duration(`60`)") is False
        assert q("valid_duration(`null`)") is False

    def test_trim_suffix(self) -> None:
        """The suffix goes only when the string ends with it."""
        assert q("trim_suffix('a-user-', '-')") == "a-user"
        assert q("trim_suffix('a-user', '-')") == "a-user"


class TestAddressOnly:
    def test_password_generates_nothing_while_addressing(self) -> None:
        """Inside address_only() password() returns a placeholder and reports nothing to the sink."""
        sink = SecretSink()
        with use_sink(sink):
            with address_only():
                placeholder = FUNCTIONS["password"].impl()
            real = FUNCTIONS["password"].impl()
        assert set(placeholder) == {"-"}
        assert list(sink.values()) == [real]
