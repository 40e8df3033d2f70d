"""Gates that compute their verdict: one gate whose `verdicts` rows give the reason, message and requeue (the
first row whose `when` holds), a reason rendered from the pass and held to the declared ones, and a listed
condition written only `when:` its query holds (else it keeps what it held)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.rules.catalog import load_catalog
from engine.rules.lint import lint_paths
from offline.render.verdict import written_by
from tests.conftest import WIDGET, RuleText
from tests.reconcile.test_run import World, part_is_ready

TWO = WIDGET.swap("types: [BuiltReady]", "types: [BuiltReady, ShownReady]").swap(
    "reasons: [AllReady, NotAllReady, Built, Waiting, Broken]",
    "reasons: [AllReady, NotAllReady, Built, Waiting, Broken, TooBig, TooSmall, Shown, NotShown, Queued]",
).swap("teardown:\n", """  - name: show
    condition: ShownReady
    metric: WidgetShow
    requires: [build]
    skipped: {reason: NotShown, message: "nothing built yet"}
    do:
      - status: {shown: "`true`"}
    done: {reason: Shown, message: shown}
teardown:
""")

TABLE = TWO.swap("steps:\n", """gates:
  - name: size
    requeue: 1m
    verdicts:
      - name: size-too-big
        when: "size > `3`"
        reason: TooBig
        message: "size {{ size }} is more than 3"
      - name: size-too-small
        when: "size < `1`"
        reason: TooSmall
        message: "size {{ size }} is less than 1"
        requeue: 5m
      - when: "size == `2` && order.spec.broken"
        reason: Broken
        message: "size 2 is broken"
        fail: true
  - finalizer: true
    requeue: 1s
steps:
""")


@pytest.fixture
def world(rules_dir: Callable[..., Path]) -> Callable[[str], World]:
    def make(rule: str) -> World:
        return World(next(iter(load_catalog(rules_dir(rule)).values())))
    return make


def lint(rules_dir: Callable[..., Path], rule: str) -> list[str]:
    return [str(e) for e in lint_paths([rules_dir(rule)])]


def conditions(w: World) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in w.live()["status"]["conditions"]}


@pytest.mark.parametrize(("size", "broken", "reason", "message", "requeue"), [
    (5, False, "TooBig", "size 5 is more than 3", dt.timedelta(minutes=1)),
    (0, False, "TooSmall", "size 0 is less than 1", dt.timedelta(minutes=5)),
])
def test_the_first_row_that_holds_is_the_gates_verdict(world: Callable[[str], World], size: int, broken: bool,
                                                       reason: str, message: str, requeue: dt.timedelta) -> None:
    """Each row's reason and message go on every condition; its requeue, else the gate's, is the pass's."""
    w = world(TABLE)
    w.order(size=size, broken=broken)
    result = w.run()
    assert conditions(w)["BuiltReady"] == ("False", reason, message)
    assert conditions(w)["ShownReady"] == ("False", reason, message)
    assert result.requeue_after == requeue
    assert "finalizers" not in w.live()["metadata"]


def test_a_row_may_fail_the_pass_and_no_row_holding_passes_the_gate(world: Callable[[str], World]) -> None:
    w = world(TABLE)
    w.order(size=2, broken=True)
    result = w.run()
    assert str(result.error) == "size 2 is broken"
    assert conditions(w)["BuiltReady"][:2] == ("False", "Broken")
    w.cluster.patch("example.io/v1", "Widget", "ns", "w", {"spec": {"broken": False}})
    assert w.run().requeue_after == dt.timedelta(seconds=1)
    assert w.live()["metadata"]["finalizers"] == ["example.io/teardown"]


def test_render_names_a_row_by_its_own_name(world: Callable[[str], World]) -> None:
    """`engine render` says which row refused: a named row by its name, as the gate it replaces was."""
    w = world(TABLE)
    w.order(size=5)
    w.run()
    condition = next(c for c in w.live()["status"]["conditions"] if c["type"] == "BuiltReady")
    assert [s.element for s in written_by(w.kind, condition)] == ["gate size-too-big"]


RENDERED = TWO.swap("values:\n", "values:\n  cause: \"if_else(size > `3`, 'TooBig', 'Nope')\"\n").swap(
    "steps:\n", """gates:
  - name: size
    when: "size > `3` || size < `1`"
    reason: "{{ cause }}"
    message: "size {{ size }} refused: {{ cause }}"
steps:
""")


def test_a_gate_reason_may_be_rendered_and_must_be_declared(world: Callable[[str], World]) -> None:
    """A declared rendered reason is written; an undeclared one is a rule error naming where it is written."""
    w = world(RENDERED)
    w.order(size=5)
    w.run()
    assert conditions(w)["BuiltReady"] == ("False", "TooBig", "size 5 refused: TooBig")
    w.cluster.patch("example.io/v1", "Widget", "ns", "w", {"spec": {"size": 0}})
    result = w.run()
    assert result.error is not None
    assert "widget.yaml:" in str(result.error)
    assert "'Nope', which is not declared in conditions.reasons" in str(result.error)
    assert conditions(w)["BuiltReady"][1] == "Error"


ONLY_WHEN = TWO.swap("steps:\n", """gates:
  - name: size-limit
    when: "size > `3`"
    conditions:
      - BuiltReady
      - type: ShownReady
        when: "status.shown == `null`"
        reason: Queued
        message: "nothing is shown until size {{ size }} is at most 3"
    reason: TooBig
    message: "size {{ size }} is more than 3"
    requeue: 1m
steps:
""")


def test_a_listed_condition_is_written_only_when_its_query_holds(world: Callable[[str], World]) -> None:
    """Before anything is shown, the gate writes ShownReady too; once shown, ShownReady keeps what it held."""
    w = world(ONLY_WHEN)
    w.order(size=5)
    w.run()
    assert conditions(w)["ShownReady"] == ("False", "Queued", "nothing is shown until size 5 is at most 3")
    w.cluster.patch("example.io/v1", "Widget", "ns", "w", {"spec": {"size": 1}})
    w.run()
    part_is_ready(w)
    w.run()
    assert w.conditions()["ShownReady"] == ("True", "Shown")
    w.cluster.patch("example.io/v1", "Widget", "ns", "w", {"spec": {"size": 5}})
    w.run()
    assert conditions(w)["BuiltReady"] == ("False", "TooBig", "size 5 is more than 3")
    assert conditions(w)["ShownReady"] == ("True", "Shown", "shown")
    assert w.conditions()["Ready"] == ("False", "NotAllReady")


def test_lint_accepts_the_new_gate_forms(rules_dir: Callable[..., Path]) -> None:
    assert lint(rules_dir, TABLE) == []
    assert lint(rules_dir, RENDERED) == []
    assert lint(rules_dir, ONLY_WHEN) == []


LINT_CASES = [
    ("a row's undeclared reason, at the row", RuleText(TABLE).swap("reason: TooSmall", "reason: TooSmal"),
     "widget.yaml:26:9: reason 'TooSmal' is not declared in conditions.reasons; did you mean 'TooSmall'?"),
    ("an unknown name in a row's when", RuleText(TABLE).swap('when: "size < `1`"', 'when: "sise < `1`"'),
     "widget.yaml:27:16: size-too-small.when: unknown name 'sise'; did you mean 'size'?"),
    ("an unknown name in a row's message", RuleText(TABLE).swap("size 2 is broken", "size {{ sixe }} is broken"),
     "unknown name 'sixe'"),
    ("verdicts beside the gate's own when", RuleText(TABLE).swap("    requeue: 1m\n    verdicts:",
                                                                 '    when: "size > `0`"\n    requeue: 1m\n'
                                                                 "    verdicts:"),
     "widget.yaml:19:5: gates.0: Value error, a gate with verdicts takes when, reason and message from each row, "
     "not its own"),
    ("a row without when", RuleText(TABLE).swap('      - when: "size == `2` && order.spec.broken"\n        reason',
                                                "      - reason"),
     "widget.yaml:31:9: gates.0.verdicts.2.when: missing required field 'when'"),
    ("an empty table", RuleText(RENDERED).swap('    when: "size > `3` || size < `1`"\n', "    verdicts: []\n"),
     "widget.yaml:21:5: gates.0.verdicts: List should have at least 1 item"),
    ("an unknown name in a condition's when", RuleText(ONLY_WHEN).swap("status.shown == `null`", "shwn == `null`"),
     "size-limit.conditions: unknown name 'shwn'"),
    ("a rendered reason's unknown name", RuleText(RENDERED).swap('reason: "{{ cause }}"', 'reason: "{{ cuase }}"'),
     "widget.yaml:22:17: size.reason: unknown name 'cuase'; did you mean 'cause'?"),
]


@pytest.mark.parametrize(("rule", "expected"), [(r, e) for _, r, e in LINT_CASES], ids=[c[0] for c in LINT_CASES])
def test_lint_reports_a_bad_gate_table_at_its_place(rules_dir: Callable[..., Path], rule: str,
                                                    expected: str) -> None:
    found = lint(rules_dir, rule)
    assert any(expected in line for line in found), found


def test_lint_reports_a_mistake_the_rows_share_once(rules_dir: Callable[..., Path]) -> None:
    """The gate's conditions, a condition's `when` and the gate's error belong to every row, but a mistake in
    them is one mistake: one line each."""
    rule = RuleText(TABLE).swap("    requeue: 1m\n    verdicts:", """    requeue: 1m
    conditions:
      - BuiltReady
      - ShwnReady
      - {type: ShownReady, when: "shwn == `null`"}
    error: {reason: Brokn, message: "reading: {{ eror }}"}
    verdicts:""")
    found = lint(rules_dir, rule)
    for mistake in ("condition 'ShwnReady'", "unknown name 'shwn'", "reason 'Brokn'", "unknown name 'eror'"):
        assert len([line for line in found if mistake in line]) == 1, (mistake, found)
