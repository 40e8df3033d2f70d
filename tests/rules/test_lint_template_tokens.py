"""Jinja mistakes are reported at the offending token (line and column inside the value or template
file, not the start of the value), and every unknown function or filter of one template comes out in
one lint run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.rules.lint import lint_paths
from tests.conftest import PART, WIDGET


def lines(rules: Path) -> list[str]:
    """Each error as `file:line:col: message`, the file named by its last path segment."""
    return [f"{Path(e.position.file).name}:{e.position.line}:{e.position.col}: {e.message}"
            for e in lint_paths([rules])]


# `    done: {reason: Built, message: "built {{ size }} parts"}` is line 29; the message value starts at col 37.
CASES = [
    ("a syntax error in a message", '"built {{ size size }} parts"',
     "widget.yaml:29:51: message: template syntax error: expected token 'end of print statement', got 'size'"),
    ("an unclosed call", '"built {{ sha256(size }} parts"',
     "widget.yaml:29:58: message: template syntax error: unexpected '}', expected ')'"),
    ("an unterminated string", "\"built {{ 'x }} parts\"",
     "widget.yaml:29:46: message: template syntax error: unexpected char"),
    ("an unknown filter", '"built {{ size | lowr }} parts"',
     "widget.yaml:29:53: message: unknown filter 'lowr'; did you mean 'lower'?"),
    ("a second unknown function on the line", '"{{ sha256(size) }} {{ sha265(size) }}"',
     "widget.yaml:29:59: message: unknown function sha265(); did you mean sha256()?"),
]


@pytest.mark.parametrize(("message", "expected"), [(m, e) for _, m, e in CASES], ids=[c[0] for c in CASES])
def test_a_message_mistake_is_named_at_its_token(rules_dir: Callable[..., Path], message: str, expected: str) -> None:
    found = lines(rules_dir(WIDGET.replace('"built {{ size }} parts"', message)))
    assert any(line.startswith(expected) for line in found), found


def test_every_unknown_function_of_a_message_in_one_run(rules_dir: Callable[..., Path]) -> None:
    found = lines(rules_dir(WIDGET.replace('"built {{ size }} parts"',
                                           '"{{ sha265(size) }} {{ hash9(size) ~ sha265(size) }}"')))
    assert [line.split(": message: ")[0] for line in found if "unknown function" in line] == [
        "widget.yaml:29:40", "widget.yaml:29:59", "widget.yaml:29:73"], found


def test_every_unknown_function_of_a_template_file_in_one_run(rules_dir: Callable[..., Path]) -> None:
    """Two unknown functions on two lines of a template file: both, each at its line and column."""
    template = (PART.replace("{{ (prefix ~ 'part') | tojson }}", "{{ (prefx(prefix) ~ 'part') | tojson }}")
                .replace("{{ size | string | tojson }}", "{{ sise(size) | string | tojson }}"))
    found = lines(rules_dir(WIDGET, template))
    assert [line.split(": ")[0] for line in found if "unknown function" in line] == [
        "part.yaml.j2:4:13", "part.yaml.j2:8:12"], found


def test_a_syntax_error_in_a_template_file_names_its_column(rules_dir: Callable[..., Path]) -> None:
    template = PART.replace("{{ size | string | tojson }}", "{{ size | string tojson }}")
    found = lines(rules_dir(WIDGET, template))
    assert any(line.startswith("part.yaml.j2:8:26:") and "template syntax error" in line for line in found), found
