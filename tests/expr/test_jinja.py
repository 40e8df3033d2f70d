"""Compiled Jinja rule strings and object templates: names, strictness, sandboxing and safe YAML output."""

import json
from typing import Any

import pytest

from engine.expr import (
    ExprError,
    ExprSyntaxError,
    SecretSink,
    compile_object_template,
    compile_text,
    jinja_render,
    untojsoned_outputs,
    use_sink,
)
from engine.expr.jinja import environment

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ (order.metadata.name ~ "-" ~ hash8(key)) | tojson }}
  namespace: {{ order.metadata.namespace | tojson }}
  labels:
{% for k in keys_sorted(labels) %}
    {{ k | tojson }}: {{ labels[k] | tojson }}
{% endfor %}
data:
  note: {{ order.spec.note | tojson }}
  stamp: 2026-01-01T00:00:00Z
  doc: {{ order.spec | tojson | tojson }}
"""

ORDER = {"metadata": {"name": "web", "namespace": "ns"}, "spec": {"note": "hello"}}


def render(source: str, **context: Any) -> str:
    return compile_text(source).render(context)


class TestText:
    def test_constant_without_delimiters(self) -> None:
        """A string without template delimiters is returned as written, braces and all."""
        text = compile_text("plain {not a template}")
        assert text.is_constant
        assert text.render({}) == "plain {not a template}"
        assert text.names == frozenset() and text.functions == frozenset()

    def test_names_and_functions(self) -> None:
        """Names are the context variables read; functions the registered or global callables used."""
        text = compile_text("{% set n = order.metadata.name %}{{ n }}-{{ hash8(key) }}-{{ other | go_quote }}")
        assert text.names == {"order", "key", "other"}
        assert text.functions == {"hash8", "go_quote"}

    def test_functions_are_globals_and_filters(self) -> None:
        """A function can be called or piped with the same result."""
        assert render("{{ sha256(x) }}", x="a") == render("{{ x | sha256 }}", x="a")
        assert render("{{ 'x' | truncate_bytes(0, '') }}|{{ add(1, 2) }}") == "|3"

    def test_none_and_booleans_render_like_go(self) -> None:
        """None renders empty; booleans render true and false."""
        assert render("[{{ a }}] {{ b }} {{ c }}", a=None, b=True, c=False) == "[] true false"

    def test_undefined_top_level_name_is_an_error(self) -> None:
        """A name the context does not define is an error naming it, with the template line."""
        with pytest.raises(ExprError) as info:
            render("ok\n{{ nothere.x }}", order={})
        assert info.value.line == 2
        assert "'nothere' is undefined" in info.value.reason
        with pytest.raises(ExprError, match="'nothere' is undefined"):
            render("{{ nothere }}")

    def test_missing_keys_read_null_like_expressions(self) -> None:
        """A missing key, a key of null and an index past the end read as null, so `or` supplies a default."""
        assert render("[{{ o.missing }}][{{ o.missing.deeper }}][{{ o['k'] }}][{{ l[5] }}]", o={}, l=[1]) == "[][][][]"
        assert render("{{ c.message or 'FailedCreateOrUpdate' }}", c={"status": "False"}) == "FailedCreateOrUpdate"
        assert render("{{ c.message or 'x' }}", c={"message": "boom"}) == "boom"

    def test_a_missing_key_passed_to_a_function_is_null(self) -> None:
        """Passing a missing key to a function passes null (a type error names the function, not a value)."""
        with pytest.raises(ExprError, match=r"sha256\(\) argument 1 must be string, got null"):
            render("{{ sha256(o.missing) }}", o={})

    def test_function_type_error(self) -> None:
        """A wrong argument type is reported by function and type."""
        with pytest.raises(ExprError, match=r"sha256\(\) argument 1 must be string, got number"):
            render("{{ sha256(n) }}", n=5)

    def test_unknown_function_at_compile_time(self) -> None:
        """Calling an unregistered function fails to compile, with its line."""
        with pytest.raises(ExprSyntaxError) as info:
            compile_text("a\nb\n{{ sha265(x) }}")
        assert info.value.message == "unknown function sha265(); did you mean sha256()?"
        assert info.value.line == 3

    def test_macros_and_jinja_globals_are_not_unknown(self) -> None:
        """Template-defined macros and Jinja's own globals may be called."""
        text = compile_text(
            "{% macro m(v) %}<{{ v }}>{% endmacro %}{{ m(1) }}{% for i in range(2) %}{{ i }}{% endfor %}"
        )
        assert text.render({}) == "<1>01"

    def test_unknown_filter_and_bad_syntax(self) -> None:
        """Unknown filters and broken syntax are compile errors with a line."""
        with pytest.raises(ExprSyntaxError, match="unknown filter 'nope'") as info:
            compile_text("{{ x | nope }}")
        assert info.value.line == 1
        with pytest.raises(ExprSyntaxError) as info:
            compile_text("x\n{% if %}")
        assert info.value.line == 2

    def test_render_does_not_recompile(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Rendering a compiled text or template never parses or compiles again."""
        text = compile_text("{{ a }}")
        template = compile_object_template("a: {{ a | tojson }}", "t.yaml.j2")

        def refuse(*args: object, **kwargs: object) -> None:
            raise AssertionError("recompiled")

        env = environment()
        monkeypatch.setattr(env, "parse", refuse)
        monkeypatch.setattr(env, "compile", refuse)
        monkeypatch.setattr(env, "from_string", refuse)
        assert text.render({"a": 1}) == "1"
        assert template.render({"a": 1}) == {"a": 1}


class TestSandbox:
    @pytest.mark.parametrize(
        "source",
        ["{{ s.__class__.__mro__ }}", "{{ d.update({'a': 1}) }}", "{{ l.append(1) }}", "{{ f.__globals__ }}"],
    )
    def test_refused(self, source: str) -> None:
        """Dunder access and mutation of the context are refused as security errors."""
        with pytest.raises(ExprError, match="SecurityError"):
            render(source, s="x", d={}, l=[], f=lambda: None)

    def test_context_stays_unchanged(self) -> None:
        """A refused mutation leaves the caller's data as it was."""
        data: dict[str, Any] = {"a": 1}
        with pytest.raises(ExprError):
            render("{{ d.pop('a') }}", d=data)
        assert data == {"a": 1}

    def test_huge_range_refused(self) -> None:
        """Ranges beyond the sandbox limit fail instead of exhausting memory."""
        with pytest.raises(ExprError, match="OverflowError"):
            render("{{ range(10**9) | list | length }}")


class OnlyLookups(dict[str, Any]):
    """A pass's scope stand-in: many values, and a failure if anything copies or walks all of them."""

    def keys(self) -> Any:
        raise AssertionError("the render walked the whole scope")

    def __iter__(self) -> Any:
        raise AssertionError("the render walked the whole scope")


class TestRenderReadsOnlyItsNames:
    def test_an_object_template_looks_up_only_the_names_it_reads(self) -> None:
        """A render costs the names the template reads, not the size of the pass's scope (issue 11)."""
        scope = OnlyLookups({f"value{i}": i for i in range(1000)}, order=ORDER, key="k", labels={"a": "1"})
        obj = compile_object_template(CONFIGMAP, "templates/configmap/cm.yaml.j2").render(scope)
        assert obj["metadata"]["labels"] == {"a": "1"}

    def test_a_rule_string_looks_up_only_the_names_it_reads(self) -> None:
        scope = OnlyLookups({f"value{i}": i for i in range(1000)}, name="web")
        assert compile_text("{{ name }}-{{ hash8(name) }}").render(scope).startswith("web-")

    def test_a_value_named_like_a_function_shadows_it(self) -> None:
        """A rule value called ``password`` (also a function) is the value inside templates, as before."""
        assert render("{{ b64enc(password) }}", password="s3") == "czM="

    def test_an_error_still_names_the_template_line(self) -> None:
        """Rendering outside Jinja's own render keeps its line numbers in errors."""
        template = compile_object_template("kind: ConfigMap\ndata:\n  v: {{ 1 // zero }}\n", "t.yaml.j2")
        with pytest.raises(ExprError) as caught:
            template.render({"zero": 0})
        assert caught.value.line == 3


PLAIN_TEXTS = [
    "{{ a }}", "{{ a }}-x", "x{{ a }}y{{ b }}z", "{{ d.k }}", "{{ d.k.k }}", "{{ d.missing }}", "{{ n.k }}",
    "{{ d.items }}", "{{ d.get }}", "{{ s.upper }}", "{{ l.k }}", "{{ undefined_name }}", "{{ d.k }}\n",
    "line\n{{ a }}\n", "{# a comment #}{{ a }}", "{{ t }} {{ f }} {{ n }} {{ i }} {{ x }} {{ l }} {{ d }}",
]
PLAIN_CONTEXTS: list[dict[str, Any]] = [
    {"a": "v", "b": 2, "d": {"k": {"k": "deep"}, "items": "a key"}, "n": None, "s": "text", "l": [1, "2"],
     "t": True, "f": False, "i": 1.5, "x": {"k": None}},
    {"a": None, "b": True, "d": {"k": "flat", "get": None}, "n": {"k": 0}, "s": "", "l": [], "t": 0,
     "f": "", "i": -1, "x": [None]},
    {"a": "", "b": None, "d": {}, "n": "s", "s": {"upper": "key"}, "l": {"k": [1]}, "t": None, "f": {},
     "i": 0, "x": ""},
]


def _jinja_render(text: Any, context: dict[str, Any]) -> tuple[str, Any]:
    try:
        return ("value", jinja_render._render(text._template, text.names, text._globals, context, text.source, None,
                                       text.origin))
    except ExprError as exc:
        return ("error", str(exc))


def _plain_render(text: Any, context: dict[str, Any]) -> tuple[str, Any]:
    try:
        return ("value", text.render(context))
    except ExprError as exc:
        return ("error", str(exc))


class TestPlainTexts:
    def test_rule_strings_of_names_and_text_skip_jinja(self) -> None:
        """``{{ prefix }}user`` and ``{{ order.metadata.name }}`` are plain; a call, a filter or a block is not."""
        for source in ("{{ prefix }}user", "{{ childNamespace }}", "{{ order.metadata.name }}-credentials"):
            assert compile_text(source)._parts is not None, source
        for source in ("{{ go_quote(a) }}", "{{ a | lower }}", "{% if a %}x{% endif %}", "{{ a['k'] }}",
                       "{{ 'x' }}", "{{ a ~ b }}"):
            assert compile_text(source)._parts is None, source

    @pytest.mark.parametrize("source", PLAIN_TEXTS)
    def test_a_plain_text_renders_what_jinja_renders(self, source: str) -> None:
        """Every value kind (None, booleans, numbers, lists, objects), a missing key, a key named like a dict
        method, an attribute of a non-object and an undefined name: the same text or the same error."""
        text = compile_text(source)
        for context in PLAIN_CONTEXTS:
            assert _plain_render(text, context) == _jinja_render(text, context), (source, context)

    def test_a_plain_render_reads_a_lazy_scope_once(self) -> None:
        """A name the scope resolves on first use is resolved once, also when Jinja takes over the render."""
        resolved: list[str] = []

        class Lazy(dict[str, Any]):
            def __missing__(self, key: str) -> Any:
                resolved.append(key)
                self[key] = {"k": "v"} if key == "d" else "s"
                return self[key]

            def __contains__(self, key: object) -> bool:
                return key in ("d", "s")

        scope = Lazy()
        assert compile_text("{{ d.k }}/{{ s.upper }}").render(scope).startswith("v/")
        assert resolved == ["d", "s"]


class TestParsedTextsReused:
    def test_the_same_rendered_text_is_parsed_once_and_each_caller_owns_its_object(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A child rendered with the same values as last pass skips the YAML parse (issue 11), and
        changing one returned object never changes the next."""
        import yaml

        parses: list[str] = []
        load = yaml.load

        def counting(text: str, Loader: Any) -> Any:
            parses.append(text)
            return load(text, Loader=Loader)

        monkeypatch.setattr(yaml, "load", counting)
        template = compile_object_template(CONFIGMAP, "templates/configmap/cm.yaml.j2")
        context = {"order": {**ORDER, "metadata": {"name": "reuse-test", "namespace": "ns"}}, "key": "k",
                   "labels": {"a": "1"}}
        first = template.render(context)
        first["metadata"]["labels"]["a"] = "changed"
        first["data"].clear()
        second = template.render(context)
        assert len(parses) == 1
        assert second["metadata"]["labels"] == {"a": "1"} and second["data"]["note"] == "hello"
        context["labels"] = {"a": "2"}
        assert template.render(context)["metadata"]["labels"] == {"a": "2"}
        assert len(parses) == 2


class TestObjectTemplate:
    def test_render_to_object(self) -> None:
        """A template renders to the parsed object; timestamps stay strings; tojson|tojson gives JSON text."""
        template = compile_object_template(CONFIGMAP, "templates/configmap/cm.yaml.j2")
        obj = template.render({"order": ORDER, "key": "k", "labels": {"b": "2", "a": "1"}})
        assert obj == {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "web-" + render("{{ hash8('k') }}"),
                "namespace": "ns",
                "labels": {"a": "1", "b": "2"},
            },
            "data": {"note": "hello", "stamp": "2026-01-01T00:00:00Z", "doc": '{"note": "hello"}'},
        }
        assert list(obj["metadata"]["labels"]) == ["a", "b"]
        assert template.names == {"order", "key", "labels"}
        assert template.functions == {"hash8", "keys_sorted"}

    @pytest.mark.parametrize(
        "value", ["x\nkind: Secret", "a: b", "- item", "{x: 1}", "'quoted", "#comment", "", "null"]
    )
    def test_tojson_values_stay_strings(self, value: str) -> None:
        """Whatever a string holds, through tojson it stays that one string."""
        template = compile_object_template("kind: ConfigMap\ndata:\n  v: {{ v | tojson }}\n", "t.yaml.j2")
        assert template.render({"v": value}) == {"kind": "ConfigMap", "data": {"v": value}}

    @pytest.mark.parametrize("value", ["Grüße ☺", {"k": [1, 2.5, None, True]}, float("nan"), "\u2028"])
    def test_tojson_writes_what_json_dumps_writes(self, value: Any) -> None:
        """The shared encoder writes as ``json.dumps(value, ensure_ascii=False)`` did; no value of another kind."""
        assert compile_text("{{ v | tojson }}").render({"v": value}) == json.dumps(value, ensure_ascii=False)
        with pytest.raises(ExprError, match="not JSON serializable"):
            compile_text("{{ v | tojson }}").render({"v": {1, 2}})

    def test_plain_output_is_an_injection_the_lint_reports(self) -> None:
        """Without tojson a value rewrites the document, and untojsoned_outputs points at that line."""
        source = "kind: ConfigMap\ndata:\n  ok: {{ v | tojson }}\n  bad: {{ v }}\n"
        template = compile_object_template(source, "t.yaml.j2")
        assert template.render({"v": "x\nkind: Secret"})["kind"] == "Secret"
        assert untojsoned_outputs(template) == [4]
        assert untojsoned_outputs(source) == [4]

    def test_lint_accepts_only_a_final_tojson(self) -> None:
        """An output counts as safe only when tojson (or to_json) is applied last."""
        source = "a: {{ x | tojson }}\nb: {{ x | tojson | trim }}\nc: {{ x ~ 'y' | tojson }}\nd: {{ x | to_json }}\n"
        assert untojsoned_outputs(source) == [2, 3]

    def test_tojson_does_not_html_escape(self) -> None:
        """tojson is plain json.dumps: <, >, & and ' and non-ASCII come through as written."""
        assert render("{{ v | tojson }}", v="<a href='x'>&é") == "\"<a href='x'>&é\""

    def test_empty_render_is_none(self) -> None:
        """A template that renders nothing gives None (no object)."""
        template = compile_object_template("{% if make %}a: 1{% endif %}", "t.yaml.j2")
        assert template.render({"make": False}) is None
        assert template.render({"make": True}) == {"a": 1}

    def test_invalid_yaml_names_the_path_not_the_values(self) -> None:
        """Output that is not YAML fails with the template path and the rendered line, without values."""
        template = compile_object_template("a: 1\nb: {{ v }}\n", "templates/x/broken.yaml.j2")
        with pytest.raises(ExprError) as info:
            template.render({"v": "s3cr3t: [unclosed"})
        assert str(info.value).startswith("templates/x/broken.yaml.j2: rendered YAML is invalid at rendered line")
        assert "s3cr3t" not in str(info.value)

    def test_render_error_carries_path_and_line(self) -> None:
        """An undefined value in a template reports path:line."""
        template = compile_object_template("a: 1\n\nb: {{ missing | tojson }}\n", "templates/x/t.yaml.j2")
        with pytest.raises(ExprError) as info:
            template.render({})
        assert str(info.value) == "templates/x/t.yaml.j2:3: UndefinedError: 'missing' is undefined"

    def test_syntax_error_carries_path_and_line(self) -> None:
        """A syntax error or unknown function in a template file names the file and line."""
        with pytest.raises(ExprSyntaxError) as info:
            compile_object_template("a: 1\nb: {{ nope(1) }}\n", "templates/x/t.yaml.j2")
        assert info.value.message == "templates/x/t.yaml.j2: unknown function nope()"
        assert info.value.line == 2

    def test_secret_in_a_failing_key_is_not_reported(self) -> None:
        """A generated password used as a key a value cannot have never appears in the error."""
        with use_sink(SecretSink()) as sink:
            pw = render("{{ password() }}")
        template = compile_object_template("v: {{ s[pw] | tojson }}\n", "t.yaml.j2")
        with pytest.raises(ExprError) as info:
            template.render({"s": "text", "pw": pw})
        assert sink.values() == (pw,)
        assert pw not in str(info.value)
