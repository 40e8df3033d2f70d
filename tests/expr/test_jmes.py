"""Compiled JMESPath queries: name extraction, compile-time checks, and evaluation errors."""

import pytest

from engine.expr import ExprError, ExprSyntaxError, SecretSink, compile_query, use_sink


class TestNames:
    @pytest.mark.parametrize(
        ("source", "names"),
        [
            ("parent.spec.replicas", {"parent"}),
            ("a.b || c", {"a", "c"}),
            ("!ready && count > `2`", {"ready", "count"}),
            ("items[?status == wanted].name | [0]", {"items"}),
            ("items[*].metadata.name", {"items"}),
            ("items[].spec", {"items"}),
            ("children.*.status", {"children"}),
            ("sort_by(items, &metadata.name)[0]", {"items"}),
            ("hash8(join('/', [cluster, order.metadata.namespace]))", {"cluster", "order"}),
            ("{name: order.metadata.name, when: now}", {"order", "now"}),
            ("[a, b.c][0]", {"a", "b"}),
            ('`{"a": 1}`.a', set()),
            ("'literal'", set()),
            ("@", {"@"}),
            ("*.x", {"@"}),
            ('"quoted-name".x', {"quoted-name"}),
            ("a | b", {"a"}),
            ("time_max(a.t, b.t)", {"a", "b"}),
        ],
    )
    def test_root_names(self, source: str, names: set[str]) -> None:
        """Only identifiers evaluated against the context itself count as names."""
        assert compile_query(source).names == frozenset(names)

    def test_functions(self) -> None:
        """Every called function, builtin or registered, is listed, including nested calls and exprefs."""
        query = compile_query("length(items[?condition_true(@, 'Ready')]) > `0` && sha256(to_string(x)) != ''")
        assert query.functions == {"length", "condition_true", "sha256", "to_string"}


class TestCompile:
    def test_unknown_function(self) -> None:
        """An unknown function is a syntax error pointing at the call."""
        with pytest.raises(ExprSyntaxError) as info:
            compile_query("a.b && sha265(a)")
        assert info.value.message == "unknown function sha265(); did you mean sha256()?"
        assert info.value.offset == 7

    def test_unknown_function_inside_a_filter(self) -> None:
        """Calls nested in filters and exprefs are checked too."""
        with pytest.raises(ExprSyntaxError, match="unknown function nope"):
            compile_query("sort_by(items[?nope(@)], &name)")

    def test_arity_checked_at_compile_time(self) -> None:
        """Registered and builtin functions with the wrong argument count fail to compile."""
        with pytest.raises(ExprSyntaxError, match=r"time_add\(\) takes 2 argument\(s\), got 1"):
            compile_query("time_add(now)")
        with pytest.raises(ExprSyntaxError, match=r"length\(\) takes 1"):
            compile_query("length(a, b)")
        with pytest.raises(ExprSyntaxError, match=r"time_max\(\) takes at least 1"):
            compile_query("time_max()")

    @pytest.mark.parametrize(("source", "offset"), [("a.[", 3), ("a ||", 4), ("a[?b ==]", 7), ("", 0), ("a ^ b", 2)])
    def test_syntax_error_offset(self, source: str, offset: int) -> None:
        """A parse error carries the character offset of the problem."""
        with pytest.raises(ExprSyntaxError) as info:
            compile_query(source)
        assert info.value.offset == offset
        assert info.value.source == source

    def test_query_keeps_its_source(self) -> None:
        """A compiled query remembers the text it came from."""
        assert compile_query("a.b").source == "a.b"
        assert repr(compile_query("a.b")) == "Query('a.b')"


class TestEvaluate:
    def test_reads_context(self) -> None:
        """Evaluation reads the context; missing paths are null, as JMESPath defines."""
        query = compile_query("order.spec.n")
        assert query.evaluate({"order": {"spec": {"n": 3}}}) == 3
        assert query.evaluate({}) is None

    def test_custom_functions_combine_with_builtins(self) -> None:
        """Registered functions work inside builtins, projections and exprefs."""
        items = [{"n": "b-password-v2"}, {"n": "a-password-v10"}, {"n": "other"}]
        query = compile_query("max(items[*].parse_suffix_int(n, '-password-v') | [?@ != null])")
        assert query.evaluate({"items": items}) == 10

    def test_repeated_evaluation_is_independent(self) -> None:
        """One compiled query serves many contexts."""
        query = compile_query("hash8(k)")
        assert [query.evaluate({"k": k}) for k in ("a", "b", "a")] == [
            query.evaluate({"k": "a"}),
            query.evaluate({"k": "b"}),
            query.evaluate({"k": "a"}),
        ]

    def test_type_error_names_types_not_values(self) -> None:
        """A wrong argument type reports function and types, never the value."""
        with pytest.raises(ExprError) as info:
            compile_query("sha256(secret)").evaluate({"secret": 123456789})
        assert info.value.reason == "sha256() expected string, got number"
        assert "123456789" not in str(info.value)
        assert info.value.source == "sha256(secret)"

    def test_errors_never_carry_a_secret(self) -> None:
        """Failures on a generated password never put it in the message."""
        with use_sink(SecretSink()) as sink:
            pw = compile_query("password()").evaluate({})
        for source in ("b64dec(pw)", "duration_seconds(pw)", "time_add(pw, '1s')", "go_quote_list([pw, `1`])"):
            with pytest.raises(ExprError) as info:
                compile_query(source).evaluate({"pw": pw})
            assert all(value not in str(info.value) for value in sink.values()), source


class TestOneInterpreter:
    def test_an_evaluation_builds_no_interpreter(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Evaluations share one interpreter and its method cache (a fresh one per call cost 5x; issue 11)."""
        from jmespath import visitor

        built: list[object] = []
        original = visitor.TreeInterpreter.__init__

        def counting(self: visitor.TreeInterpreter, *args: object, **kwargs: object) -> None:
            built.append(self)
            original(self, *args, **kwargs)

        monkeypatch.setattr(visitor.TreeInterpreter, "__init__", counting)
        query = compile_query("a.b == `1` && length(c) > `0`")
        assert [query.evaluate({"a": {"b": 1}, "c": [1]}) for _ in range(5)] == [True] * 5
        assert built == []
