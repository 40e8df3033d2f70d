"""The generated reference pages are what the code gives now: a new flag or a new rule-file field that is not in
docs/reference/ fails here (regenerate with `python -m engine.docs --write`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import build_parser
from engine.docs import PAGES, ROOT, main, stale
from engine.rules.lint import schema_document


@pytest.mark.parametrize("path", sorted(PAGES))
def test_the_committed_page_is_what_the_generator_writes(path: str) -> None:
    assert (ROOT / path).read_text() == PAGES[path](), f"{path} is stale: run `python -m engine.docs --write`"


def test_every_schema_field_and_every_flag_is_on_its_page() -> None:
    """The pages name, and describe, every field of every object of the schema, and every option of every
    subcommand."""
    schema = json.loads(schema_document())
    page = (ROOT / "docs/reference/rule-schema.md").read_text()
    for name, definition in [("The rule file", schema), *schema["$defs"].items()]:
        section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for field in definition.get("properties", {}):
            row = next((line for line in section.splitlines() if line.startswith(f"| `{field}` |")), None)
            assert row is not None, f"{name}.{field} missing"
            assert not row.endswith("|  |"), f"{name}.{field} has no description: give its Field one in schema.py"
    cli = (ROOT / "docs/reference/cli.md").read_text()
    subparsers = build_parser()._subparsers
    assert subparsers is not None
    for action in subparsers._group_actions:
        for command, parser in action.choices.items():
            section = cli.split(f"\n## engine {command}\n", 1)[1].split("\n## ", 1)[0]
            for option in (o for a in parser._actions for o in a.option_strings if o not in ("-h", "--help")):
                assert f"`{option}`" in section, f"engine {command} {option} missing"


def test_check_names_a_stale_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--check` fails on a page edited by hand, and stale() names it."""
    for path in PAGES:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(PAGES[path]())
    edited = next(iter(PAGES))
    (tmp_path / edited).write_text((tmp_path / edited).read_text() + "edited\n")
    assert stale(tmp_path) == [edited]
    assert main(["--check"]) == 0  # the repository's own pages are fresh
