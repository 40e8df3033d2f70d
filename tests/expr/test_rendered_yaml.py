"""Rendered child templates read without PyYAML: exactly what PyYAML reads, or left to it."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.expr import object_templates, rendered_yaml
from engine.expr.jinja import compile_object_template
from engine.expr.object_templates import _ObjectLoader

ROOT = Path(__file__).resolve().parents[2]


def pyyaml(text: str) -> Any:
    return yaml.load(text, Loader=_ObjectLoader)


def same(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down (True is not 1, "1" is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    return bool(a == b)


# (benign, hostile): a hostile pick now and then, so most documents stay in the subset and some leave it.
KEYS = (["name", "kind", "c5c3.io/keystoneuser-name", "clouds.yaml", "_x", "a-b", "k", "spec", "data"],
        ["on", "yes", "y", "null", "No", "1abc", "a b", "-a"])
WORDS = (["v1", "Secret", "Delete", "true", "False", "yes", "off", "Off", "null", "~", "0", "-0", "12",
          "a.b/c-d", "external-secrets.io/v1alpha1"],
         ["y", "n", "0755", "1e5", "1.5", ".inf", "a b", "x:y", "-x", "=", "2026-01-01", "0x1f", "+1", "1_000"])
STRINGS = (["", "plain", "yes", "null", "1e5", "0755", "a: b", "x #y", "- z", "'q'", '"', "\\", "multi\nline",
            "tab\there", "{a}", "[1]", "*ref", "&anchor", "!tag", "%", "@", "2026-01-01T00:00:00Z"],
           ["é", "\u2028", "\x85", "😀", "\x00", "\x7f"])


def pick(rng: random.Random, pools: tuple[list[str], list[str]]) -> str:
    return rng.choice(pools[1] if rng.random() < 0.05 else pools[0])


def scalar(rng: random.Random) -> Any:
    if rng.random() < 0.05:
        return rng.choice([1.5, 1e-05, float("nan")])
    return rng.choice([pick(rng, STRINGS), rng.randint(-3, 3), 10 ** 20, rng.random() < 0.5, None])


def value(rng: random.Random, depth: int) -> Any:
    if depth >= 3 or rng.random() < 0.4:
        return scalar(rng)
    if rng.random() < 0.6:
        return {pick(rng, KEYS): value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def emit_value(rng: random.Random, v: Any, indent: int, lines: list[str], head: str) -> None:
    """``head`` (``key:`` or ``-``) followed by ``v``: inline as JSON or a plain word, or as a nested block."""
    pad = " " * indent
    if isinstance(v, dict) and v and rng.random() < 0.7:
        lines.append(pad + head)
        emit_block(rng, v, indent + rng.choice([2, 4]), lines)
    elif isinstance(v, list) and v and rng.random() < 0.7:
        lines.append(pad + head)
        emit_block(rng, v, indent + rng.choice([0, 2]) if head != "-" else indent + 2, lines)
    elif isinstance(v, str) and rng.random() < 0.5:
        lines.append(f"{pad}{head} {pick(rng, WORDS)}")
    else:
        tail = rng.choice(["", "", "", "", "", " ", "  # c"])
        lines.append(f"{pad}{head} {json.dumps(v, ensure_ascii=False)}{tail}")


def emit_block(rng: random.Random, v: Any, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    if rng.random() < 0.1:
        lines.append(rng.choice(["", pad + "# a comment", "   "]))
    if rng.random() < 0.02:
        lines.append(pad + rng.choice(["a:\tb", "&x", "? k", "a: |", "---"]))
    if isinstance(v, dict):
        for key, item in v.items():
            emit_value(rng, item, indent, lines, f"{key}:")
    else:
        for item in v:
            if isinstance(item, dict) and item and rng.random() < 0.6:
                first, *rest = item.items()
                sub: list[str] = []
                emit_value(rng, first[1], indent + 2, sub, f"{first[0]}:")
                sub[0] = pad + "- " + sub[0].lstrip(" ")
                lines.extend(sub)
                for key, nested in rest:
                    emit_value(rng, nested, indent + 2, lines, f"{key}:")
            else:
                emit_value(rng, item, indent, lines, "-")


def test_what_it_reads_pyyaml_reads_on_generated_documents() -> None:
    """Thousands of generated template-like documents: each is read as PyYAML reads it, or left to PyYAML
    (NotPlain), never read differently; and most of them are read here (the comparison is not vacuous)."""
    rng = random.Random(11)
    read = 0
    total = 3000
    for _ in range(total):
        doc = {pick(rng, KEYS): value(rng, 1) for _ in range(rng.randint(1, 4))}
        lines: list[str] = []
        emit_block(rng, doc, 0, lines)
        text = "\n".join(lines) + rng.choice(["", "\n", "\n\n"])
        try:
            fast = rendered_yaml.parse(text)
        except rendered_yaml.NotPlain:
            continue
        read += 1
        assert same(fast, pyyaml(text)), text
    assert read > total // 4


@pytest.mark.parametrize("text", [
    "a: 1\n  b: 2\n",             # more indented after a value: PyYAML's error
    "a:\n  b: 1\n c: 2\n",        # a sibling at another indentation
    "a: x\nb: |\n  text\n",       # a block scalar
    "---\na: 1\n",                # a document marker
    "a: &x 1\nb: *x\n",           # an anchor
    "a: !!str 1\n",               # a tag
    "a: 'single'\n",              # a single-quoted scalar
    "a: {b: c}\n",                # a flow mapping that is not JSON
    "a: 1e-05\n", 'a: [1.5]\n',   # floats
    'a: "\\ud83d\\ude00"\n',      # a surrogate pair
    "a: 1\na: 2\n",               # a repeated key
    "on: 1\n", "a:\n\tb: 1\n",     # a YAML 1.1 boolean as a key, a tab
    "a: é\n", "", "# only\n", "- a\n-\n", "a: b: c\n",
])
def test_anything_else_is_left_to_pyyaml(text: str) -> None:
    with pytest.raises(rendered_yaml.NotPlain):
        rendered_yaml.parse(text)


def test_every_shipped_template_reads_without_pyyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules' own child templates render in the subset: rendering them parses no YAML (PyYAML's ~3 ms a
    document was more than the rest of a converged pass, and the parsed-text cache stops hitting once the
    orders' texts outnumber it), and the objects are PyYAML's."""
    calls: list[str] = []
    real_load = yaml.load

    def counting_load(text: str, Loader: Any) -> Any:
        calls.append(text)
        return real_load(text, Loader=Loader)

    monkeypatch.setattr(object_templates.yaml, "load", counting_load)
    templates = sorted((ROOT / "templates").glob("*/*.yaml.j2"))
    assert templates
    for path in templates:
        template = compile_object_template(path.read_text(), str(path))
        for n in range(3):  # distinct texts each time: no cache can answer
            context = {name: _stand_in(name, n) for name in template.names}
            text = template.render_text(context)
            assert same(rendered_yaml.parse(text), real_load(text, Loader=_ObjectLoader)), path
            assert template.render(context)["metadata"]["name"]
    assert calls == []


def _stand_in(name: str, n: int) -> Any:
    """A value of the shape a template reads under ``name`` (orders and objects are mappings)."""
    if name in ("order", "cp", "probe", "user", "push", "pushLive", "managedUser"):
        return {"apiVersion": "c5c3.io/v1alpha1", "kind": "Thing",
                "metadata": {"name": f"thing-{n}", "namespace": "ns", "uid": f"uid-{n}",
                             "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "b"}},
                "spec": {"userName": f"u{n}"}}
    if name.endswith("Labels"):
        return {"c5c3.io/x-name": f"thing-{n}", "c5c3.io/x-cluster": ""}
    if name.endswith(("Gen", "Generation")):
        return n + 1
    return f"{name}-{n}"
