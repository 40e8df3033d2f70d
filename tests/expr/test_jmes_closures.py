"""Compiled expressions (engine.expr.jmes_closures) answer exactly as JMESPath's tree interpreter does."""

from __future__ import annotations

from typing import Any

import jmespath
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
    {"f": False, "one": 1, "onef": 1.0, "zerof": 0.0, "strs": ["b", "A"], "mixed": [1, "a"], "nums": [3, 1.5],
     "bools": [True, False], "s": "Grüße \"q\"\n", "t": "2026-01-01T00:00:00Z", "n": 0, "l": [0, "x"]},
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
    # Equality and order where a boolean meets 0 or 1, and negation of zeros (the interpreter's special cases).
    "n == f", "f == n", "one == t", "t == one", "onef == `true`", "zerof == `false`", "one != `true`", "f != n",
    "one == onef", "s == s", "l == l", "!zerof", "!one", "!f", "!`0`", "one < onef", "t < s", "f < one",
    # Functions: declared types, arrays of typed elements (one or several alternatives), expression references,
    # registered functions and their failures, a function met by a value of no JMESPath type.
    "max(nums)", "max(strs)", "max(mixed)", "max(bools)", "min(l)", "sort(strs)", "sort(mixed)", "sum(nums)",
    "join('/', strs)", "join('/', mixed)", "join(n, strs)", "avg(nums)", "avg(strs)", "contains(s, 'q')",
    "map(&fold(@), strs)", "contains(map(&fold(@), strs), fold('a'))", "fold(s)", "fold(n)", "go_quote(s)",
    "go_quote(n)", "time_add(t, `60`)", "time_add(t, s)", "time_add(n, `1`)", "int_or(s, `1`)",
    "truncate_bytes(sha256(s), `8`, '')", "b64dec(s)", "sha256(n)", "starts_with(n, 'x')", "merge(m, l)",
    "not_null(z, `null`)", "length(@)", "keys(@)", "sort_by(strs, &@)", "max_by(nums, &@)",
    # Field walks (one closure for a run of fields) and equality against a literal (read once).
    "a.b.missing.c", "s.x.y", "l.x.y", "@.a.b", "z.a.b", "items[0].name.x", "a.b.c == 'x'", "m.k1.v != `1`",
    "n == `0`", "f == `0`", "t != `1`", "one == `1.0`", "onef != `1`", "`false` == n", "s != `null`",
    "z == `null`", "strs == `[\"b\", \"A\"]`", "m.k1 == `{\"v\": 1}`", "a.b.c | length(@)",
]


def outcome(run: Any, data: Any) -> tuple[str, Any]:
    try:
        value = run(data)
    except Exception as exc:
        return ("error", f"{type(exc).__name__}: {exc}")
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


@pytest.mark.parametrize("source", ["length(a, b)", "sort()", "join('/')", "not_null()", "fold(a, b)"])
def test_a_call_with_the_wrong_count_fails_as_the_interpreter(source: str) -> None:
    """``compile_query`` refuses these; a tree compiled as it is still fails as the interpreter does."""
    tree = jmespath.compile(source).parsed
    closure = compile_closure(tree, jmes._OPTIONS.custom_functions)
    for data in DATA:
        expected = outcome(lambda d: INTERPRETER.visit(tree, d), data)
        assert outcome(closure, data) == expected, (source, data)


def test_a_registered_function_failure_names_the_types_it_met() -> None:
    """A registered function called straight from compiled code reports its failure as before."""
    with pytest.raises(ExprError, match=r"time_add\(\).*\(arguments: string, string\)"):
        compile_query("time_add(t, s)").evaluate({"t": "2026-01-01T00:00:00Z", "s": "soon"})


def test_an_unknown_node_type_keeps_the_interpreter() -> None:
    with pytest.raises(NotImplementedError):
        compile_closure({"type": "no_such_node", "children": []}, jmes._OPTIONS.custom_functions)
