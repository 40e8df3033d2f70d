"""Gates and steps with their own conditions (issue 10 item 5): a gate writes a reason and message
per condition, a step with `when:` is skipped with the condition the rule gives, and a step's error
may return the error without writing the step's condition."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.rules.catalog import load_catalog
from tests.conftest import WIDGET
from tests.reconcile.test_run import World, part_is_ready

TWO_STEPS = WIDGET.replace("types: [BuiltReady]", "types: [BuiltReady, ShownReady]").replace(
    "reasons: [AllReady, NotAllReady, Built, Waiting, Broken]",
    "reasons: [AllReady, NotAllReady, Built, Waiting, Broken, Shown, NotShown, Hidden, TooBig, Queued]",
).replace("teardown:\n", """  - name: show
    condition: ShownReady
    metric: WidgetShow
    requires: [build]
    when: "order.spec.show"
    otherwise: {status: true, reason: Hidden, message: "the widget is not shown"}
    skipped: {reason: NotShown, message: "nothing built yet"}
    do:
      - status: {shown: "`true`"}
    done: {reason: Shown, message: shown}
teardown:
""")


@pytest.fixture
def world(rules_dir: Callable[..., Path]) -> Callable[[str], World]:
    def make(rule: str) -> World:
        return World(next(iter(load_catalog(rules_dir(rule)).values())))
    return make


def ready_part(w: World) -> None:
    w.run()
    part_is_ready(w)


def test_gate_writes_its_own_reason_and_message_per_condition(world: Callable[[str], World]) -> None:
    rule = TWO_STEPS.replace("steps:\n", """gates:
  - name: too-big
    when: "size > `3`"
    conditions:
      - BuiltReady
      - {type: ShownReady, reason: Queued, message: "shown once size {{ size }} is built"}
    reason: TooBig
    message: "size {{ size }} is more than 3"
steps:
""")
    w = world(rule)
    w.order(size=5)
    w.run()
    conditions = {c["type"]: (c["reason"], c["message"]) for c in w.live()["status"]["conditions"]}
    assert conditions["BuiltReady"] == ("TooBig", "size 5 is more than 3")
    assert conditions["ShownReady"] == ("Queued", "shown once size 5 is built")


def test_step_when_false_writes_otherwise_and_counts_as_done(world: Callable[[str], World]) -> None:
    w = world(TWO_STEPS)
    w.order(size=1, show=False)
    ready_part(w)
    w.run()
    assert w.conditions() == {"BuiltReady": ("True", "Built"), "ShownReady": ("True", "Hidden"),
                              "Ready": ("True", "AllReady")}
    assert "shown" not in w.live()["status"]
    w.cluster.patch("example.io/v1", "Widget", "ns", "w", {"spec": {"show": True}})
    w.run()
    assert w.conditions()["ShownReady"] == ("True", "Shown")
    assert w.live()["status"]["shown"] is True


def test_step_when_false_without_otherwise_writes_skipped(world: Callable[[str], World]) -> None:
    w = world(TWO_STEPS.replace('    otherwise: {status: true, reason: Hidden, message: "the widget is not shown"}\n',
                                ""))
    w.order(size=1)
    ready_part(w)
    w.run()
    assert w.conditions()["ShownReady"] == ("False", "NotShown")
    assert w.conditions()["Ready"] == ("False", "NotAllReady")


def test_step_error_may_leave_the_condition_as_it_was(world: Callable[[str], World]) -> None:
    apply = "      - apply: part.yaml.j2\n"
    rule = WIDGET.replace(apply, apply + "        error: {reason: Broken, writeCondition: false}\n")
    w = world(rule)
    w.order(size=1)
    ready_part(w)
    w.run()
    assert w.conditions()["BuiltReady"] == ("True", "Built")
    w.cluster.patch("example.io/v1", "Widget", "ns", "w", {"spec": {"size": 2}})
    w.faulty.inject(verb="apply", kind="ConfigMap", error="ServerError")
    result = w.run()
    assert result.error is not None
    assert w.conditions()["BuiltReady"] == ("True", "Built")
