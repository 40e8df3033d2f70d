"""where_cmp (a filter against a root value) and Go's host:port split and join."""

from __future__ import annotations

import pytest

from engine.expr import ExprError, compile_query, compile_text


def q(source: str, **context: object) -> object:
    return compile_query(source).evaluate(context)


RECS = [{"gen": 1, "failed": False}, {"gen": 2, "failed": True}, {"gen": 3, "failed": False}, {"failed": True}]


class TestWhereCmp:
    def test_orders_numbers_against_a_root_value(self) -> None:
        """Elements whose path is above, at or below a root number are kept; a missing path never orders."""
        assert q("where_cmp(r, 'gen', '>', cur)[].gen", r=RECS, cur=1) == [2, 3]
        assert q("where_cmp(r, 'gen', '>=', cur)[].gen", r=RECS, cur=2) == [2, 3]
        assert q("where_cmp(r, 'gen', '<', cur)[].gen", r=RECS, cur=2) == [1]
        assert q("where_cmp(r, 'gen', '<=', cur)[].gen", r=RECS, cur=2) == [1, 2]

    def test_membership_in_a_root_list(self) -> None:
        """`in` keeps elements whose path is in the list; `not in` keeps the rest, missing paths included."""
        assert q("where_cmp(r, 'gen', 'in', keep)[].gen", r=RECS, keep=[1, 3]) == [1, 3]
        assert q("where_cmp(r, 'gen', 'not in', keep)", r=RECS, keep=[1, 3]) == [RECS[1], RECS[3]]

    def test_equality_and_the_element_itself(self) -> None:
        """An empty path compares the element itself; == and != compare any values."""
        assert q("where_cmp(n, '', '!=', `2`)", n=[1, 2, 3]) == [1, 3]
        assert q("where_cmp(r, 'failed', '==', `true`)", r=RECS) == [RECS[1], RECS[3]]

    def test_mixed_types_never_order(self) -> None:
        """A string never orders against a number (JMESPath's rule), and a null list reads empty."""
        assert q("where_cmp(n, '', '>', `1`)", n=["5", 5, None, True]) == [5]
        assert q("where_cmp(n, '', '<', 'b')", n=["a", "c", 1]) == ["a"]
        assert q("where_cmp(missing, '', '>', `1`)") == []

    @pytest.mark.parametrize("source", ["where_cmp(n, '', '=~', `1`)", "where_cmp(n, '', 'in', `1`)"])
    def test_bad_operator_or_membership_value(self, source: str) -> None:
        """An unknown operator, or `in` with a value that is not an array, is an evaluation error."""
        with pytest.raises(ExprError, match="where_cmp"):
            q(source, n=[1])


class TestSplitHostPort:
    @pytest.mark.parametrize(
        ("text", "host", "port"),
        [("broker.example.test:5672", "broker.example.test", "5672"), ("[fd00::1]:5672", "fd00::1", "5672"),
         ("h:", "h", ""), (":80", "", "80"), ("h:99999", "h", "99999"), ("h:x", "h", "x"), ("[::1]:0", "::1", "0")],
    )  # fmt: skip
    def test_splits_as_go_does(self, text: str, host: str, port: str) -> None:
        """Host and port as Go's net.SplitHostPort gives them; the port is not validated."""
        assert q("split_host_port(s)", s=text) == {"host": host, "port": port}

    @pytest.mark.parametrize(
        "text", ["", "broker", "fd00::1:5672", "[fd00::1]", "[fd00::1", "[h]x:1", "h]:1", "h[:1", "[a]:[1"]
    )
    def test_what_go_refuses_is_null(self, text: str) -> None:
        """A missing port, too many colons or stray brackets give null (Go returns an error)."""
        assert q("split_host_port(s)", s=text) is None


class TestJoinHostPort:
    def test_brackets_ipv6_only(self) -> None:
        """A host holding a colon is bracketed; any other host is joined as it is."""
        assert q("join_host_port('cp-rabbitmq.ns.svc', '5672')") == "cp-rabbitmq.ns.svc:5672"
        assert q("join_host_port('::1', '5672')") == "[::1]:5672"

    def test_round_trips_with_split_in_jinja(self) -> None:
        """The two functions are available in Jinja too and undo each other."""
        text = compile_text("{{ join_host_port(split_host_port(e).host, split_host_port(e).port) }}")
        assert text.render({"e": "[fd00::1]:5672"}) == "[fd00::1]:5672"
