"""`engine lint` reports each kind of rule-file mistake as one `file:line:col: message` line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.rules.catalog import load_catalog
from engine.rules.lint import lint_paths
from tests.conftest import PART, WIDGET, RuleText


def lines(rules: Path) -> list[str]:
    return [str(e) for e in lint_paths([rules])]


def test_valid_rule_file_lints_clean(rules_dir: Callable[..., Path]) -> None:
    """The minimal Widget kind compiles without a single error."""
    assert lines(rules_dir()) == []


CASES = [
    ("unknown function", WIDGET.swap("order.spec.size || `1`", "order.spec.size || sizee(`1`)"),
     "widget.yaml:17:29: size: unknown function sizee()"),
    ("unknown name", WIDGET.swap('"built {{ size }} parts"', '"built {{ sise }} parts"'),
     "widget.yaml:29:46: step build.done: unknown name 'sise'"),
    ("undeclared reason", WIDGET.swap("reason: Waiting", "reason: Wating"),
     "widget.yaml:25:9: reason 'Wating' is not declared in conditions.reasons"),
    ("undeclared condition", WIDGET.swap("condition: BuiltReady", "condition: BuildReady"),
     "widget.yaml:19:5: condition 'BuildReady' is not declared in conditions.types"),
    ("missing template", WIDGET.swap("apply: part.yaml.j2", "apply: parts.yaml.j2"),
     "widget.yaml:23:16: apply: no template"),
    ("duplicate key", WIDGET.swap("  plural: widgets\n", "  plural: widgets\n  plural: gadgets\n"),
     "widget.yaml:5:3: duplicate key"),
    ("unknown field", WIDGET.swap("  finalizer: example.io/teardown\n",
                                     "  finalizer: example.io/teardown\n  finaliser: x\n"),
     "widget.yaml:6:3: order: unknown field 'finaliser'"),
    ("unknown action", WIDGET.swap("      - wait:", "      - wiat:"),
     "widget.yaml:25:9: steps.0.do.1: an action needs one of"),
    ("bad JMESPath", WIDGET.swap('wait: "part.status.ready"', 'wait: "part.status.ready =="'),
     "widget.yaml:25:36: wait: invalid JMESPath expression"),
    ("negation trap", WIDGET.swap('wait: "part.status.ready"', 'wait: "!part.status.ready"'),
     "wait: `!a.b` reads as `(!a).b`, which is always null; write `!(a.b)`"),
    ("bad duration", WIDGET.swap("requeue: 10s", "requeue: 10 seconds"),
     "widget.yaml:28:18: requeue: '10 seconds' is neither a Go duration"),
    ("duration overflow", WIDGET.swap("requeue: 10s", "requeue: 3000000h"),
     "widget.yaml:28:18: requeue: invalid duration: overflow"),
]


@pytest.mark.parametrize(("rule", "expected"), [(r, e) for _, r, e in CASES], ids=[c[0] for c in CASES])
def test_broken_rule_file_names_file_line_column_and_problem(
        rules_dir: Callable[..., Path], rule: str, expected: str) -> None:
    """Each mistake yields a line starting with file:line:col and saying what is wrong."""
    found = lines(rules_dir(rule))
    assert any(line.endswith(expected) or expected in line for line in found), found


def test_template_without_kind_is_reported(rules_dir: Callable[..., Path]) -> None:
    """A template that renders no kind is an error on the template file."""
    found = lines(rules_dir(template=PART.swap("kind: ConfigMap\n", "")))
    assert any("part.yaml.j2:1:1: the template does not render an object with kind" in line for line in found)


def test_template_value_without_tojson_is_reported(rules_dir: Callable[..., Path]) -> None:
    """An interpolation not piped through tojson is flagged with its line (YAML injection)."""
    found = lines(rules_dir(template=PART.swap("{{ size | string | tojson }}", "{{ size }}")))
    assert any("part.yaml.j2:8:1: an interpolated value is not piped through `| tojson`" in line for line in found)


def test_unknown_function_in_template_is_reported(rules_dir: Callable[..., Path]) -> None:
    """A misspelled function in a template is a compile error naming the template."""
    found = lines(rules_dir(template=PART.swap("{{ childNamespace | tojson }}", "{{ nmspace() | tojson }}")))
    assert any("part.yaml.j2" in line and "nmspace" in line for line in found), found


def test_lint_command_exit_status_and_output(rules_dir: Callable[..., Path]) -> None:
    """The command exits 1 with one line per error, 0 when clean, and never prints a traceback."""
    bad = rules_dir(WIDGET.swap("reason: Waiting", "reason: Wating"))
    done = subprocess.run([sys.executable, "-m", "engine.cli", "lint", str(bad)], capture_output=True, text=True)
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    assert "reason 'Wating' is not declared" in done.stdout
    good = rules_dir()
    done = subprocess.run([sys.executable, "-m", "engine.cli", "lint", str(good)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_project_rules_lint_clean() -> None:
    """The shipped rule files lint clean."""
    assert lint_paths([Path(__file__).resolve().parents[2] / "rules"]) == []


@pytest.mark.parametrize(("written", "seconds"), [(".5s", 0.5), ("1.5m", 90.0), ("1\u03bcs", 1e-6), ("+2h", 7200.0)])
def test_requeue_reads_go_durations_as_go_does(rules_dir: Callable[..., Path], written: str, seconds: float) -> None:
    """`requeue:` takes every Go duration (a leading-dot fraction, a sign, the Greek mu) as the one parser does."""
    kind = next(iter(load_catalog(rules_dir(WIDGET.swap("requeue: 10s", f"requeue: {written}"))).values()))
    wait = kind.steps[0].actions[1]
    assert wait.outcome is not None
    assert wait.outcome.requeue.seconds == seconds


TEARDOWN = WIDGET.swap("""teardown:
  patientWhile: "`true`"
  do:
    - delete: {apiVersion: v1, kind: ConfigMap}
""", """teardown:
  patientWhile: "`true`"
  do:
    - read: size
    - hold: "size > `3`"
      condition: BuiltReady
      reason: Waiting
      message: "held while {{ size }} parts exist"
    - patch: {apiVersion: v1, kind: ConfigMap}
      body: "{metadata: {labels: {gone: 'yes'}}}"
      guards: [parts]
      error: "patching {{ go_quote(item.metadata.name) }}: {{ error }}"
    - delete: {apiVersion: v1, kind: ConfigMap}
      name: parts
""")
assert TEARDOWN != WIDGET

TEARDOWN_CASES = [
    ("read of an unknown name", TEARDOWN.swap("- read: size", "- read: sise"),
     "widget.yaml:33:7: teardown read action: 'sise' is not an input or a value"),
    ("hold with an undeclared condition", TEARDOWN.swap("condition: BuiltReady\n      reason: Waiting",
                                                           "condition: BuildReady\n      reason: Waiting"),
     "widget.yaml:34:7: condition 'BuildReady' is not declared in conditions.types"),
    ("hold with an undeclared reason", TEARDOWN.swap("reason: Waiting\n      message: \"held",
                                                        "reason: Wating\n      message: \"held"),
     "widget.yaml:34:7: reason 'Wating' is not declared in conditions.reasons"),
    ("guard of no later action", TEARDOWN.swap("guards: [parts]", "guards: [partz]"),
     "widget.yaml:38:7: teardown patch action guards 'partz', which is not the name of a later action"),
    ("unknown name in an error text", TEARDOWN.swap("go_quote(item.metadata.name)", "go_quote(itme.metadata.name)"),
     "widget.yaml:41:36: teardown patch action: unknown name 'itme'"),
    ("unknown teardown action", TEARDOWN.swap("- read: size", "- reed: size"),
     "widget.yaml:33:7: teardown.do.0: a teardown action needs one of"),
]


def test_teardown_lints_clean(rules_dir: Callable[..., Path]) -> None:
    """Reads, holds, a guarding patch and a named delete compile without an error."""
    assert lines(rules_dir(TEARDOWN)) == []


@pytest.mark.parametrize(("rule", "expected"), [(r, e) for _, r, e in TEARDOWN_CASES],
                         ids=[c[0] for c in TEARDOWN_CASES])
def test_broken_teardown_names_file_line_column_and_problem(
        rules_dir: Callable[..., Path], rule: str, expected: str) -> None:
    """Teardown names, conditions, reasons and guards are checked, each error with file:line:col."""
    found = lines(rules_dir(rule))
    assert any(line.endswith(expected) or expected in line for line in found), found


class TestRuleText:
    """The edits tests make to rule text fail loudly instead of leaving the text as it was."""

    def test_an_edit_whose_anchor_is_gone_fails(self) -> None:
        """A renamed anchor would silently test the unedited rule file with str.replace."""
        with pytest.raises(AssertionError, match="occurs 0 times"):
            WIDGET.swap("requeue: 11s", "requeue: 1s")

    def test_an_edit_whose_anchor_is_ambiguous_fails(self) -> None:
        """An anchor that occurs twice would edit both places."""
        with pytest.raises(AssertionError, match="occurs 2 times"):
            WIDGET.swap("reason: ", "reason: X")

    def test_edits_compose(self) -> None:
        """swap, add_after, add_before and drop each change the one place, and chain."""
        text = RuleText("a: 1\nb: 2\n").swap("a: 1", "a: 3").add_after("b: 2\n", "c: 4\n").add_before("a:", "z: 0\n")
        assert text.drop("b: 2\n") == "z: 0\na: 3\nc: 4\n"


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (WIDGET.add_after("values:\n", "  doc:\n    text: |\n      a: {{ sise }}\n"),
         "widget.yaml:17:3: value doc: unknown name 'sise'"),
        (WIDGET.add_after("values:\n", "  doc:\n    text: \"{{ size \"\n"),
         "widget.yaml:18:19: text: template syntax error"),  # where the template ends, unclosed
        (WIDGET.swap("reason: Waiting", "reason: \"{{ sise }}\""),
         "widget.yaml:26:21: wait action: unknown name 'sise'"),
        (WIDGET.swap("done: {reason: Built,", "done: {reason: \"{{ size }}\","),
         "reason '{{ size }}' is not declared in conditions.reasons"),
    ],
    ids=["unknown name in a text value", "text syntax", "unknown name in a rendered reason",
         "a rendered reason outside an action's verdict"],
)
def test_text_values_and_rendered_reasons_are_checked(rules_dir: Callable[..., Path], rule: str, expected: str) -> None:
    """A text value's names and syntax are checked like any text; only actions' verdicts may render a reason."""
    found = lines(rules_dir(rule))
    assert any(expected in line for line in found), found


def test_a_row_gives_exactly_one_of_value_or_text(rules_dir: Callable[..., Path]) -> None:
    """A decision row with both a value and a text (or neither) is a rule error at the row."""
    table = "  x:\n    - {when: \"size\", value: \"'a'\", text: b}\n    - {value: \"'c'\"}\n"
    rule = WIDGET.add_after("values:\n", table)
    found = lines(rules_dir(rule))
    assert any("widget.yaml:18:7" in line and "exactly one of value or text" in line for line in found), found
