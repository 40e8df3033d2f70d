"""Lint of what issue 10 adds to the rule language: each mistake named with file:line:col."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.rules.lint import lint_paths
from tests.conftest import WIDGET


def lines(rules: Path) -> list[str]:
    return [str(e) for e in lint_paths([rules])]


STEP_WHEN = WIDGET.replace("    metric: WidgetBuild\n", "    metric: WidgetBuild\n    when: \"size > `0`\"\n")

CASES = [
    ("step when without otherwise", STEP_WHEN,
     "widget.yaml:19:5: steps.0: Value error, a step with `when` needs `otherwise` (or `skipped`)"),
    ("unknown name in step when", STEP_WHEN.replace("size > `0`", "sise > `0`").replace(
        "    when:", "    otherwise: {reason: Built, message: off}\n    when:"),
     "step build.when: unknown name 'sise'"),
    ("undeclared reason in otherwise", STEP_WHEN.replace(
        "    when:", "    otherwise: {reason: Off, message: off}\n    when:"),
     "reason 'Off' is not declared in conditions.reasons"),
    ("undeclared reason of a gate condition", WIDGET.replace("steps:\n", """gates:
  - {name: g, when: "size > `3`", reason: Broken, message: big, conditions: [{type: BuiltReady, reason: Huge}]}
steps:
"""), "reason 'Huge' is not declared in conditions.reasons"),
    ("unknown name in a cluster", WIDGET.replace("      - apply: part.yaml.j2\n",
                                                 "      - apply: part.yaml.j2\n        cluster: \"{{ targt }}\"\n"),
     "widget.yaml:24:22: apply action cluster: unknown name 'targt'"),
    ("unknown name in a teardown cluster", WIDGET.replace("    - delete: {apiVersion: v1, kind: ConfigMap}\n",
                                                          "    - delete: {apiVersion: v1, kind: ConfigMap}\n"
                                                          "      cluster: \"{{ targt }}\"\n"),
     "teardown delete action: unknown name 'targt'"),
]


@pytest.mark.parametrize(("rule", "expected"), [(r, e) for _, r, e in CASES], ids=[c[0] for c in CASES])
def test_mistake_is_named_with_its_place(rules_dir: Callable[..., Path], rule: str, expected: str) -> None:
    found = lines(rules_dir(rule))
    assert any(expected in line for line in found), found
