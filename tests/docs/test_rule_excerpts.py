"""Every rule-file excerpt in the docs is accepted by the rule-file JSON Schema (`engine schema`), so a renamed or
removed field, or a value of the wrong shape, in docs/rules.md fails here.

An excerpt is a YAML block of docs/rules.md, or of another page when its first key is a rule file's. It may leave
parts out with `...`: a value `...` (or one holding it), `{...}`, `[ ...actions... ]` or a line `...` alone; what
is left out is not checked, and neither are required fields (an excerpt shows some). An excerpt indented in its
page (a part of a larger one) is checked where it fits: under `inputs`, `values`, a step's `do` or the teardown's."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
import yaml

from engine.rules.lint import schema_document
from tests.docs.blocks import ROOT, Block, blocks, pages

SCHEMA = json.loads(schema_document())
TOP = set(SCHEMA["properties"])
PLACES = (lambda f: f, lambda f: {"inputs": f}, lambda f: {"values": f}, lambda f: {"steps": [{"do": f}]},
          lambda f: {"teardown": {"do": f}}, lambda f: {"watches": f})


def excerpts() -> Iterator[Block]:
    for page in pages():
        for block in blocks(page, "yaml"):
            first = re.search(r"^\s*-?\s*([A-Za-z]+):", block.body, re.M)
            if page.name == "rules.md" or (first is not None and first[1] in TOP and not page.is_relative_to(
                    ROOT / "docs/reference")):
                yield block


EXCERPTS = list(excerpts())


def elided(value: Any) -> bool:
    """Whether a value is itself a placeholder: `...` (or a text holding it), `{...}`, `[...]`."""
    if isinstance(value, str):
        return "..." in value
    if isinstance(value, dict):
        return set(value) == {"..."}
    if isinstance(value, list):
        return bool(value) and all(elided(v) for v in value)
    return False


def real(error: jsonschema.ValidationError) -> bool:
    """Whether a schema error is a mistake of the excerpt rather than a part it leaves out."""
    if error.validator == "required":
        return False
    if error.validator in ("anyOf", "oneOf"):
        branches: dict[Any, list[jsonschema.ValidationError]] = {}
        for sub in error.context or ():
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        return all(any(real(sub) for sub in subs) for subs in branches.values())
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        return any(key not in allowed and key != "..." for key in error.instance)
    return not elided(error.instance)


def mistakes(excerpt: Any, *, part: bool = False) -> list[str]:
    """The schema errors of the excerpt (of a part: at the first place it fits); [] when it fits."""
    validator = jsonschema.Draft202012Validator(SCHEMA)
    found: list[str] = []
    for place in PLACES[1:] if part else PLACES[:1]:
        errors = [e for e in validator.iter_errors(place(excerpt)) if real(e)]
        if not errors:
            return []
        found = found or [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors]
    return found


def test_the_docs_hold_rule_excerpts() -> None:
    assert len(EXCERPTS) > 15


@pytest.mark.parametrize("block", EXCERPTS, ids=str)
def test_a_rule_excerpt_is_accepted_by_the_schema(block: Block) -> None:
    text = "\n".join(line for line in block.body.splitlines() if line.strip() != "...")
    excerpt = yaml.safe_load(text)
    part = re.match(r"(?:\s*#.*\n)*[ -]", block.body) is not None  # indented, or list items: a part of a larger one
    assert excerpt is None or not mistakes(excerpt, part=part), f"{block}: {mistakes(excerpt, part=part)}"


def test_a_field_the_schema_does_not_know_is_a_mistake() -> None:
    """The check is real: a misspelt field, or a value of the wrong type, is reported; an elision is not."""
    assert mistakes({"gates": [{"name": "g", "wen": "x"}]})
    assert mistakes({"steps": [{"name": "s", "do": [{"apply": "a.yaml.j2", "once": "sometimes"}]}]})
    assert mistakes({"inputs": {"r": {"list": {"apiVersion": "v1", "kind": "X"}, "sortedBy": "x"}, "s": {"...": None}}})
    assert not mistakes({"steps": [{"name": "s", "do": ["...actions..."]}], "inputs": {"x": {"get": {"...": None}}}})
