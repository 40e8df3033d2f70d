"""Compiled expressions (engine.expr.jmes_closures) answer exactly as JMESPath's tree interpreter does."""

from __future__ import annotations

from typing import Any

import pytest
from jmespath import visitor as jvisitor

from engine.expr import jmes
from engine.expr.errors import ExprError
from engine.expr.jmes import compile_query
from engine.expr.jmes_closures import compile_closure

INTERPRETER = jvisitor.TreeInterpreter(jmes._OPTIONS)

DATA: list[Any] = [
    None, 0, 1, True, False, "", "a", 2.5, [], {},
    [0, 1, 2, 3], [{"a": 1}, {"a": 0}, {"a": None}, {"b": [1, [2, 3]]}, 5],
    {"a": {"b": {"c": "x"}}, "l": [3, 1, 2], "n": 0, "t": True, "s": "text", "e": "", "z": None,
     "items": [{"name": "b", "gone": "t", "n": 2}, {"name": "a", "gone": None, "n": 1}, {"name": "c", "n": 3}],
     "m": {"k1": {"v": 1}, "k2": {"v": None}, "k3": 7}, "nested": [[1, 2], [3, [4]], 5]},
]

EXPRESSIONS = [
    "a", "a.b.c", "a.b.c.d", "l[0]", "l[-1]", "l[5]", "l[1:]", "l[::-1]", "l[0:2:1]", "s[0]",
    "items[*].name", "items[].n", "items[?gone].name", "items[?!gone].name", "items[?n > `1`].name",
    "items[?n >= `2` && name != 'c'].name", "m.*.v", "m.*", "nested[]", "nested[][]", "@", "@.a",
    "a || 'd'", "z || e || 'last'", "n || 'zero is true'", "e && 'never'", "t && s", "!n", "!z", "!e", "!l",
    "!`0.0`", "n == `0`", "n == `false`", "t == `1`", "`1` == `1.0`", "s < 'u'", "n < s", "l < `1`",
    "z == `null`", "{x: a.b.c, y: l[0], z: missing}", "[s, n, z]", "z.{x: a}", "z.[a]",
    "length(l)", "length(s)", "sort(l)", "sort_by(items, &name)[].name", "max_by(items, &n).name",
    "map(&n, items)", "join('/', [s, 'x'])", "contains(l, `3`)", "keys(m)", "merge(m, {k4: `4`})",
    "to_string(n)", "type(@)", "not_null(z, e, s)", "starts_with(s, 'te')", "l | [0]", "items | length(@)",
    "if_else(t, 'yes', 'no')", "sha256(s)", "first(l)", "`[1, 2]`[0]", "'literal'", "`{\"k\": [1]}`.k",
]


def outcome(run: Any, data: Any) -> tuple[str, Any]:
    try:
        value = run(data)
    except Exception as exc:
        return ("error", type(exc).__name__)
    return ("value", (type(value).__name__, value))


@pytest.mark.parametrize("source", EXPRESSIONS)
def test_every_expression_answers_as_the_interpreter(source: str) -> None:
    query = compile_query(source)
    closure = compile_closure(query._parsed.parsed, jmes._OPTIONS.custom_functions)
    for data in DATA:
        expected = outcome(lambda d: INTERPRETER.visit(query._parsed.parsed, d), data)
        assert outcome(closure, data) == expected, (source, data)


def test_a_function_given_the_wrong_type_fails_as_before() -> None:
    """The checks JMESPath makes before calling a function still run: the same error text."""
    with pytest.raises(ExprError, match=r"length\(\) expected string\|array\|object, got number"):
        compile_query("length(n)").evaluate({"n": 1})
    with pytest.raises(ExprError, match=r"sort\(\)"):
        compile_query("sort(l)").evaluate({"l": [1, "a"]})


def test_an_unknown_node_type_keeps_the_interpreter() -> None:
    with pytest.raises(NotImplementedError):
        compile_closure({"type": "no_such_node", "children": []}, jmes._OPTIONS.custom_functions)
