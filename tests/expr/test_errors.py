"""Error messages of the expression layer: positions, and no data values."""

from engine.expr.errors import ExprError, ExprSyntaxError, FunctionError, safe_reason


def test_safe_reason_keeps_messages_quoting_only_source_tokens() -> None:
    """A library message is kept when every quoted token comes from the expression or is a type name."""
    exc = KeyError("x")
    assert safe_reason(AttributeError("'dict object' has no attribute 'spec'"), "o.spec") == (
        "AttributeError: 'dict object' has no attribute 'spec'"
    )
    assert safe_reason(exc, "d['x']") == "KeyError: 'x'"


def test_safe_reason_drops_messages_quoting_data() -> None:
    """A message that quotes anything not written in the expression is reduced to the error type."""
    assert safe_reason(ValueError("invalid literal for int() with base 10: 'hunter2'"), "v | int") == "ValueError"
    assert safe_reason(KeyError("hunter2"), "d[k]") == "KeyError"


def test_function_errors_pass_through() -> None:
    """FunctionError messages are written to be safe and are kept as they are."""
    assert safe_reason(FunctionError("b64dec(): not valid base64"), "") == "b64dec(): not valid base64"


def test_expr_error_text() -> None:
    """An expression error shows the expression on one line; a template error shows path:line."""
    assert str(ExprError("a.b\n  || c", "boom")) == "cannot evaluate 'a.b || c': boom"
    assert str(ExprError("src", "boom", path="t.yaml.j2", line=3)) == "t.yaml.j2:3: boom"
    assert str(ExprError("src", "boom", path="t.yaml.j2")) == "t.yaml.j2: boom"


def test_syntax_error_text() -> None:
    """A syntax error names its line and column when known."""
    assert str(ExprSyntaxError("bad", 4)) == "bad (column 4)"
    assert str(ExprSyntaxError("bad", line=2)) == "bad (line 2)"
    assert str(ExprSyntaxError("bad")) == "bad"
    assert isinstance(ExprSyntaxError("bad"), ValueError)


def test_a_failing_function_names_the_types_it_met() -> None:
    """A function that fails on its arguments says which types it was given, never their values."""
    import pytest

    from engine.expr.jmes import compile_query

    query = compile_query("time_add(t, `5`)", "rules/x.yaml:3:9")
    with pytest.raises(ExprError) as caught:
        query.evaluate({"t": "hunter2-not-a-time"})
    text = str(caught.value)
    assert text.startswith("rules/x.yaml:3:9: cannot evaluate 'time_add(t, `5`)': time_add(): ")
    assert text.endswith("(arguments: string, number)")
    assert "hunter2" not in text


def test_a_failing_value_names_its_readers_first_to_last() -> None:
    """A value's failure keeps its own place and cause first; each reader follows, a long chain shortened to the
    first and the last two readers (an Event note holds 1024 bytes)."""
    err = ExprError("b64dec(x)", "b64dec(): not valid base64", origin="r.yaml:3:9").named("values.a")
    err.read_by("r.yaml:4:9", "a != ''").named("values.b")
    err.read_by("t/part.yaml.j2", None)
    assert str(err) == ("r.yaml:3:9: cannot evaluate 'b64dec(x)': b64dec(): not valid base64; values.a, "
                        "read by r.yaml:4:9 values.b, read by t/part.yaml.j2")
    for line in range(5, 9):
        err.read_by(f"r.yaml:{line}:9", "x" * 300)
    text = str(err)
    assert "read by r.yaml:4:9 values.b, (3 more), read by r.yaml:7:9 'xxx" in text
    assert text.endswith("x…'") and len(text) < 400
