"""Module docstrings of a few lines: what the module is for and why it is shaped so.

Every module of engine/, offline/ and simulators/ opens with a docstring of at most twelve lines (a screen, as in
controller-runtime's package docs and kopf's modules) that names at most one decision record; the history of
how a module came to be lives in docs/decisions/, not in its docstring.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "offline", "simulators")

# Twelve lines hold a purpose, the shape and its reason, and one pointer; more is a journal.
MAX_LINES = 12
MAX_POINTERS = 1

# A pointer to a decision record: "decision 45", "decisions 0039", or a record file name "0045-some-title.md".
POINTER = re.compile(r"\bdecisions? \d+|\b\d{4}-[a-z0-9-]+\.md\b")

# Temporary exceptions, each with its reason; the lead removes them when the branches merge.
EXCEPTIONS: dict[str, str] = {}


def _modules() -> list[str]:
    found = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    return [p.relative_to(ROOT).as_posix() for p in found if ".venv" not in p.parts]


MODULES = _modules()


def _docstring(module: str) -> str | None:
    return ast.get_docstring(ast.parse((ROOT / module).read_text(encoding="utf-8")))


def test_the_modules_are_found() -> None:
    assert "engine/operator.py" in MODULES
    assert "simulators/base.py" in MODULES


def test_every_exception_names_a_module_and_a_reason() -> None:
    for module, reason in EXCEPTIONS.items():
        assert reason.strip(), module
        assert (ROOT / module).exists(), f"{module} is gone: drop its exception"


@pytest.mark.parametrize("module", [m for m in MODULES if m not in EXCEPTIONS])
def test_module_docstring_is_a_few_lines(module: str) -> None:
    doc = _docstring(module)
    assert doc, f"{module} has no module docstring"
    lines = doc.splitlines()
    assert len(lines) <= MAX_LINES, f"{module}: module docstring of {len(lines)} lines (at most {MAX_LINES})"
    pointers = POINTER.findall(doc)
    assert len(pointers) <= MAX_POINTERS, f"{module}: {len(pointers)} decision pointers {pointers} (at most one)"
