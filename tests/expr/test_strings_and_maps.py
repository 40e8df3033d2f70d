"""String and map functions (replace, split, lower, upper, trim, matches, get, keys, values, items,
from_items): each called as rule authors call them, in a JMESPath expression and in a Jinja
template, with the same result in both."""

from typing import Any

import jmespath
import pytest

from engine.expr import ExprError, ExprSyntaxError, compile_query, compile_text
from engine.rules.lint import lint_paths


def q(expr: str, **context: Any) -> Any:
    return compile_query(expr).evaluate(context)


def j(source: str, **context: Any) -> str:
    return compile_text(source).render(context)


def jv(source: str, **context: Any) -> Any:
    """A Jinja expression's value, carried through to_json so lists and objects compare exactly."""
    import json

    return json.loads(j("{{ (" + source + ") | to_json }}", **context))


LABELS = {"app.kubernetes.io/name": "db", "tier": "data"}

# (JMESPath expression, Jinja expression, context, expected value)
AGREE = [
    ("replace(s, '-', '_')", "replace(s, '-', '_')", {"s": "my-db-name"}, "my_db_name"),
    ("replace(s, '', '.')", "s | replace('', '.')", {"s": "ab"}, ".a.b."),
    ("split(s, ',')", "split(s, ',')", {"s": "a,b,,c"}, ["a", "b", "", "c"]),
    ("split(s, '')", "s | split('')", {"s": "héj"}, ["h", "é", "j"]),
    ("split(s, ',')", "split(s, ',')", {"s": ""}, [""]),
    ("lower(s)", "s | lower", {"s": "ÄbC"}, "äbc"),
    ("upper(s)", "upper(s)", {"s": "äbc"}, "ÄBC"),
    ("trim(s)", "s | trim", {"s": " \t x y\n"}, "x y"),
    ("matches(s, '[A-Za-z0-9_]{1,64}')", "matches(s, '[A-Za-z0-9_]{1,64}')", {"s": "db_user_1"}, True),
    ("matches(s, '[A-Za-z0-9_]{1,64}')", "s | matches('[A-Za-z0-9_]{1,64}')", {"s": "db-user"}, False),
    ("matches(s, '[a-z]+')", "matches(s, '[a-z]+')", {"s": "abc1"}, False),  # a full match, not a search
    ("matches(s, 'a.c')", "matches(s, 'a.c')", {"s": "a\nc"}, False),  # `.` stops at a newline, as in Go
    ("matches(s, p)", "matches(s, p)", {"s": "Ab", "p": "(?i)ab"}, True),
    ("get(l, 'app.kubernetes.io/name')", "get(l, 'app.kubernetes.io/name')", {"l": LABELS}, "db"),
    ("get(l, 'missing')", "l | get('missing')", {"l": LABELS}, None),
    ("get(l, 'tier')", "get(l, 'tier')", {"l": None}, None),
    ("keys(l)", "keys(l)", {"l": LABELS}, ["app.kubernetes.io/name", "tier"]),
    ("values(l)", "l | values", {"l": LABELS}, ["db", "data"]),
    ("items(l)", "l | items", {"l": LABELS}, [["app.kubernetes.io/name", "db"], ["tier", "data"]]),
    ("from_items(items(l))", "from_items(items(l))", {"l": LABELS}, LABELS),
    ("from_items(p)", "from_items(p)", {"p": [["a", 1], ["b", 2], ["a", 3]]}, {"a": 3, "b": 2}),
    ("from_items(`[]`)", "from_items([])", {}, {}),
]


@pytest.mark.parametrize(("expr", "template", "context", "expected"), AGREE, ids=[a[0] for a in AGREE])
def test_jmespath_and_jinja_agree(expr: str, template: str, context: dict[str, Any], expected: Any) -> None:
    """Each function gives the documented result, the same in an expression and in a template."""
    assert q(expr, **context) == expected
    assert jv(template, **context) == expected


def test_computed_name_with_replace_then_check() -> None:
    """The issue's case: a `-` to `_` replacement and a name check, one expression each."""
    name = q("replace(order.metadata.name, '-', '_')", order={"metadata": {"name": "shop-eu-1"}})
    assert name == "shop_eu_1"
    assert q("matches(n, '^[A-Za-z0-9_]{1,64}$')", n=name) is True
    assert q("matches(n, '^[A-Za-z0-9_]{1,64}$')", n="x" * 65) is False


def test_keys_and_values_agree_with_the_jmespath_builtins() -> None:
    """The redefined keys()/values() return exactly what JMESPath's own built-ins return."""
    data = {"o": {"z": 1, "a": [2], "m": {"k": None}}}
    for name in ("keys", "values"):
        assert q(f"{name}(o)", **data) == jmespath.search(f"{name}(o)", data)


def test_lower_filter_is_the_registry_function() -> None:
    """`x | lower` in a template type-checks as lower(x) in an expression (Jinja's filter is replaced)."""
    with pytest.raises(ExprError, match=r"lower\(\) argument 1 must be string, got number"):
        j("{{ n | lower }}", n=5)
    with pytest.raises(ExprError, match=r"lower\(\) expected string, got number"):
        q("lower(n)", n=5)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(?=a)b", "invalid perl operator"),  # lookahead
        ("(?<!a)b", "invalid perl operator"),  # lookbehind
        (r"(a)\1", "invalid escape sequence"),  # backreference
        ("(?P=x)", "invalid perl operator"),  # named backreference
        ("(?>a)", "invalid perl operator"),  # atomic group
        ("a++", "bad repetition operator"),  # possessive quantifier
        (r"a\Z", "invalid escape sequence"),  # Python's end anchor (RE2 writes \z)
        ("(", "missing )"),
    ],
)
def test_a_literal_pattern_that_is_not_re2_fails_at_compile_time(pattern: str, why: str) -> None:
    """A Python-only or broken literal pattern is a compile (lint) error, in expressions and templates."""
    with pytest.raises(ExprSyntaxError, match=f"not RE2 syntax: {__import__('re').escape(why)}"):
        compile_query(f"matches(s, '{pattern}')")
    with pytest.raises(ExprSyntaxError, match="not RE2 syntax"):
        compile_text("{{ matches(s, " + repr(pattern) + ") }}")
    with pytest.raises(ExprSyntaxError, match="not RE2 syntax"):
        compile_text("{{ s | matches(" + repr(pattern) + ") }}")


def test_a_computed_pattern_is_judged_at_run_time_without_quoting_it() -> None:
    """A pattern from data that RE2 refuses is an evaluation error that quotes neither text nor pattern."""
    secret_pattern = "(?<=hunter2)x"
    with pytest.raises(ExprError) as caught:
        q("matches(s, p)", s="hunter2x", p=secret_pattern)
    assert "not RE2 syntax" in str(caught.value)
    assert "hunter2" not in str(caught.value)
    with pytest.raises(ExprError) as caught_jinja:
        j("{{ matches(s, p) }}", s="hunter2x", p=secret_pattern)
    assert "hunter2" not in str(caught_jinja.value)


@pytest.mark.parametrize(
    ("expr", "context", "message"),
    [
        ("from_items(p)", {"p": [["s3cr3t"]]}, "each item must be a [key, value] pair"),
        ("from_items(p)", {"p": [[1, "s3cr3t"]]}, "each item must be a [key, value] pair"),
        ("split(s, `1`)", {"s": "s3cr3t"}, "split() expected string, got number"),
        ("get(s, 'k')", {"s": "s3cr3t"}, "get() expected object|null, got string"),
    ],
)
def test_errors_name_types_never_values(expr: str, context: dict[str, Any], message: str) -> None:
    """A failing call says what is wrong with which argument, and never quotes the data."""
    with pytest.raises(ExprError) as caught:
        q(expr, **context)
    assert message in str(caught.value)
    assert "s3cr3t" not in str(caught.value)


def test_lint_reports_a_python_only_pattern_at_its_field(rules_dir: Any) -> None:
    """`engine lint` flags a lookahead in a rule file's expression with file:line:col."""
    from tests.conftest import WIDGET

    rule = WIDGET.replace("order.spec.size || `1`", "if_else(matches(order.metadata.name, '(?!x).*'), `1`, `2`)")
    found = [str(e) for e in lint_paths([rules_dir(rule)])]
    assert any("widget.yaml:17:" in line and "not RE2 syntax: invalid perl operator: (?!" in line
               for line in found), found


DOCS = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "rules.md"
_ROW = __import__("re").compile(r"^\| (``? .+? ``?|`[^`]+`) \| (`` .+? ``|`[^`]+`) \| (`` .+? ``|`[^`]+`) \|$")


def _doc_rows() -> list[tuple[str, str, str]]:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Functions"):]

    def code(span: str) -> str:
        return span.strip("`").strip().replace("\\|", "|")

    rows = []
    for line in section.splitlines():
        match = _ROW.match(line)
        if match:
            rows.append((code(match[1]), code(match[2]), code(match[3])))
    return rows


def test_docs_give_every_function_a_signature_and_a_working_example() -> None:
    """docs/rules.md lists each registered function's signature with an example that gives what it says."""
    import json

    from engine.expr import FUNCTIONS

    rows = _doc_rows()
    documented = {sig for sig, _, _ in rows}
    assert {fn.signature for fn in FUNCTIONS.values()} <= documented
    for signature, example, result in rows:
        assert compile_query(example).evaluate({}) == json.loads(result), (signature, example)


def test_docs_list_every_jinja_filter_the_sandbox_allows() -> None:
    """Every filter the template environment has is named in docs/rules.md."""
    from engine.expr import FUNCTIONS
    from engine.expr.jinja import environment

    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("### Jinja in the sandbox"):]
    for name in set(environment().filters) - set(FUNCTIONS):
        assert f"`{name}`" in section, name
