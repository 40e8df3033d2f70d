"""Templates rendered without Jinja's machinery (issue 11): rule strings whose outputs compile to closures, and
child templates rendered straight to their object. Each fast path is compared with the generic path (Jinja's
own render, then the rendered text read by ``rendered_yaml`` or PyYAML) on values of every JSON type and on
hostile ones: the same object or text, or the same error."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.expr import ExprError, compile_object_template, compile_text, jinja_render, object_templates, rendered_yaml
from tests.expr.test_rendered_yaml import STRINGS, _stand_in, same

ROOT = Path(__file__).resolve().parents[2]

# Values of every JSON type, and what JSON or YAML treat specially: floats (YAML 1.1 reads 1e-05 as a string),
# NaN, big integers, YAML words, escapes, non-ASCII, surrogate pairs, line breaks, tuples, non-string keys.
SCALARS: list[Any] = [
    "", "plain", "a: b", "x #y", "- z", '"', "\\", "\\u0041", 'q"\\"', "multi\nline", "tab\there", "{a}",
    "é", "😀", "\u2028", "\x85", "\x00", "\x7f", "yes", "null", "~", "1e5", "0755", "2026-01-01T00:00:00Z",
    '"a\\b"', '"quoted"', " lead", "trail ", 0, 1, -5, 10**30, True, False, None, 1.5, 1e-05, -0.0,
    float("nan"), float("inf"),
    *STRINGS[0], *STRINGS[1],
]
CONTAINERS: list[Any] = [
    {}, [], {"a": "b"}, {"c5c3.io/x": "y", "n": 1, "t": True, "z": None}, ["a", 1, None, False], {"a": {"b": [1]}},
    {"a": 1.5}, [1e-05], {1: "int key"}, {"k": "é"}, ["😀"], ("tu", "ple"), {"a": ("t",)}, {"a": {"b": "line\nbreak"}},
    [{"x": "\\u0041"}], {"": ""}, {"on": "yes"}, {"q": '"'}, {"k": "a\u2028b"}, ["a\x85b"], {"k": "\x7f"},
    ["\ud83d"], {"tab": "\t"},
]
VALUES = SCALARS + CONTAINERS

OBJECT_TEMPLATES = {
    "values after keys": "apiVersion: v1\nkind: {{ kind | tojson }}\nmetadata:\n  name: {{ v | tojson }}\n"
                         "  labels: {{ labels | tojson }}\ndata:\n  x: {{ w | tojson }}\n",
    "list items": "kind: K\nmetadata:\n  name: nm\nitems:\n  - {{ v | tojson }}\n  - fixed\n  - {{ w | tojson }}\n",
    "keys of list items": "kind: K\nmetadata:\n  name: nm\nitems:\n  - a: {{ v | tojson }}\n    b: {{ w | tojson }}\n",
    "computed values": "kind: K\nmetadata:\n  name: {{ (prefix ~ v ~ 'x') | tojson }}\n"
                       "  h: {{ hash8(prefix) | tojson }}\n  d: {{ d.k | tojson }}\n"
                       "  e: {{ (v or 'dflt') | tojson }}\n  f: {{ (v | string) | tojson }}\n",
    "outputs without tojson": "kind: K\nmetadata:\n  name: {{ v }}\n  other: {{ w }}\n",
    "comments and blank lines": "{# a comment #}\nkind: K\n\n# text\nmetadata:\n  name: {{ v | tojson }}\n",
    "a value of json text": "kind: K\nmetadata:\n  name: nm\ndata:\n  doc: {{ v | tojson | tojson }}\n",
}
NO_SKELETON = {
    "inside quotes": 'kind: K\nname: "{{ v | tojson }}"\n',
    "two on a line": "kind: K\nname: {{ v | tojson }}{{ w | tojson }}\n",
    "part of a value": "kind: K\nname: x{{ v | tojson }}\n",
    "a key": "kind: K\n{{ v | tojson }}: 1\n",
    "in a flow list": "kind: K\nname: [1, {{ v | tojson }}]\n",
    "a block after it": "kind: K\nname: {{ v | tojson }}\n  more: 1\n",
    "a block": "kind: K\n{% if v %}name: {{ v | tojson }}\n{% endif %}",
    "not plain yaml": "kind: K\nstamp: 2026-01-01T00:00:00Z\nname: {{ v | tojson }}\n",
}


def generic(template: Any, context: dict[str, Any]) -> tuple[str, Any]:
    """What rendering did before the fast paths: Jinja's render, then the text read (or the error)."""
    try:
        text = jinja_render._render(template._template, template.names, template._globals, context, template.source,
                             template.path)
        try:
            return ("value", rendered_yaml.parse(text))
        except rendered_yaml.NotPlain:
            return ("value", yaml.load(text, Loader=object_templates._ObjectLoader))
    except (yaml.YAMLError, UnicodeEncodeError) as exc:  # PyYAML's error for a lone surrogate, read as invalid
        return ("yaml error", type(exc).__name__)
    except ExprError as exc:
        return ("error", str(exc))


def rendered(template: Any, context: dict[str, Any]) -> tuple[str, Any]:
    try:
        return ("value", template.render(context))
    except ExprError as exc:
        if "rendered YAML is invalid" in exc.reason:
            return ("yaml error", "invalid")
        return ("error", str(exc))
    except Exception as exc:
        return ("exception", type(exc).__name__)


def same_outcome(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    if a[0] == b[0] == "yaml error":
        return True
    if a[0] != b[0]:
        return False
    return same(a[1], b[1]) if a[0] == "value" else a[1] == b[1]


class TestObjectsWithoutText:
    @pytest.mark.parametrize("name", sorted(OBJECT_TEMPLATES))
    def test_the_object_is_the_one_its_text_reads_as(self, name: str) -> None:
        """Every value in every whole-value place: the fast object equals the read text's, type for type, or
        both fail alike."""
        template = compile_object_template(OBJECT_TEMPLATES[name], f"{name}.yaml.j2")
        assert template._skeleton is not None
        rng = random.Random(name)
        contexts = [{"kind": "K", "v": v, "w": w, "labels": rng.choice(CONTAINERS), "prefix": "p-",
                     "d": rng.choice([{"k": v}, {}, None, "s"])}
                    for v in VALUES for w in rng.sample(VALUES, 3)]
        for context in contexts:
            assert same_outcome(rendered(template, context), generic(template, context)), context

    def test_plain_values_are_answered_without_jinja_or_a_text(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Strings, integers, booleans, null, objects and lists of them: no Jinja render, no text read."""
        template = compile_object_template(OBJECT_TEMPLATES["values after keys"], "t.yaml.j2")

        def refuse(*args: object, **kwargs: object) -> None:
            raise AssertionError("rendered through the text")

        monkeypatch.setattr(object_templates, "_render", refuse)
        monkeypatch.setattr(rendered_yaml, "parse", refuse)
        for v in ["plain", 'q"\\"', 0, 10**30, True, None, {"a": ["b", 1, None]}, []]:
            obj = template.render({"kind": "Secret", "v": v, "w": v, "labels": {"a": "b"}})
            assert same(obj["metadata"]["name"], v) and same(obj["data"]["x"], v)

    def test_each_render_is_a_new_object(self) -> None:
        template = compile_object_template(OBJECT_TEMPLATES["values after keys"], "t.yaml.j2")
        context = {"kind": "K", "v": "n", "w": {"a": ["b"]}, "labels": {"a": "b"}}
        first = template.render(context)
        first["data"]["x"]["a"].append("changed")
        first["metadata"]["labels"]["a"] = "changed"
        second = template.render(context)
        assert second["data"]["x"] == {"a": ["b"]} and second["metadata"]["labels"] == {"a": "b"}
        assert context["w"] == {"a": ["b"]}

    @pytest.mark.parametrize("name", sorted(NO_SKELETON))
    def test_a_hole_that_is_not_a_whole_value_renders_the_text(self, name: str) -> None:
        template = compile_object_template(NO_SKELETON[name], f"{name}.yaml.j2")
        assert template._skeleton is None
        for v in ["a", 1, {"k": "v"}]:
            context = {"v": v, "w": v}
            assert same_outcome(rendered(template, context), generic(template, context))

    def test_errors_are_jinjas(self) -> None:
        """An undefined name, a failed call and an unserializable value fail with Jinja's own texts and lines."""
        template = compile_object_template("kind: K\nmetadata:\n  name: {{ sha256(v) | tojson }}\n", "t.yaml.j2")
        for context in [{}, {"v": 5}, {"v": None}]:
            outcome = rendered(template, context)
            assert outcome[0] == "error" and outcome == generic(template, context)
        with pytest.raises(ExprError) as caught:
            template.render({"v": 5})
        assert caught.value.line == 3

    def test_every_shipped_template_renders_straight_to_its_object(self) -> None:
        """The rules' own child templates take the fast path, and give the objects their texts read as."""
        templates = sorted((ROOT / "templates").glob("*/*.yaml.j2"))
        assert templates
        for path in templates:
            template = compile_object_template(path.read_text(), str(path))
            assert template._skeleton is not None, path
            for n in range(3):
                context = {name: _stand_in(name, n) for name in template.names}
                if "password" in template.functions:
                    continue  # a new random password per render: compared by shape below
                assert same_outcome(rendered(template, context), generic(template, context)), path


TEXTS = [
    "{{ v ~ '-' ~ w }}", "{{ v or w }}", "{{ v and w }}", "{{ not v }}", "x{{ hash8(v) }}y", "{{ go_quote(v) }}",
    "{{ v | string }}", "{{ v | lower }}", "{{ v | tojson }}", "{{ d.k }}-{{ d['k'] }}", "{{ d.k.k or 'none' }}",
    "{{ (d.k ~ v) | tojson }}", "{{ b64enc(v) }}", "{{ password }}", "{{ undefined_x }}",
    "{{ d['items'] }}", "{{ v.k }}", "{{ add(v, 1) }}", "{{ v | truncate_bytes(3, '') }}",
]


class TestCompiledRuleStrings:
    @pytest.mark.parametrize("source", TEXTS)
    def test_a_compiled_text_renders_what_jinja_renders(self, source: str) -> None:
        """Concatenations, and/or/not, calls, filters and lookups over every value kind: the same text, or the
        same error (a wrong argument type, an undefined name, an attribute of a string)."""
        text = compile_text(source)
        rng = random.Random(source)
        for v in VALUES:
            for w in rng.sample(VALUES, 2):
                context = {"v": v, "w": w, "d": rng.choice([{"k": v}, {"k": {"k": w}}, {}, None, "s", [1]]),
                           "password": v}
                assert outcome(text.render, context) == outcome(_jinja, context, text), (source, context)

    def test_calls_and_concatenations_compile(self) -> None:
        """The rule strings with calls and ``~`` that Jinja rendered before take the closures."""
        for source in ("{{ order.metadata.name }}-{{ hash8(cluster ~ '/' ~ order.metadata.name) }}-user-",
                       "Keystone user {{ go_quote(userName) }}", "{{ x | string }}", "{{ a or b }}"):
            text = compile_text(source)
            assert text._parts is None and text._compiled is not None, source
        for source in ("{% if a %}x{% endif %}", "{{ a if b else c }}", "{{ range(3) | list }}", "{{ a[0] }}",
                       "{{ a + 1 }}"):
            assert compile_text(source)._compiled is None, source

    def test_a_value_named_like_a_function_is_the_value(self) -> None:
        """A rule value called like a function shadows it inside templates, as in Jinja's own render."""
        assert compile_text("{{ b64enc(password) }}").render({"password": "s3"}) == "czM="
        text = compile_text("{{ go_quote('x') }}")
        for context in [{"go_quote": "shadow"}, {"go_quote": None}, {}]:
            assert outcome(text.render, context) == outcome(_jinja, context, text)


def _jinja(context: dict[str, Any], text: Any) -> str:
    return str(jinja_render._render(text._template, text.names, text._globals, context, text.source, None, text.origin))


def outcome(render: Any, *args: Any) -> tuple[str, str]:
    try:
        return ("value", render(*args))
    except ExprError as exc:
        return ("error", str(exc))
