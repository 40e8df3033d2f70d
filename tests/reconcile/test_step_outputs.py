"""A step's outputs: named results every later step reads, defined once, with a default for a step that
did not go through."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.rules.catalog import load_catalog
from engine.rules.lint import lint_paths
from tests.conftest import WIDGET
from tests.reconcile.test_run import World, part_is_ready

OUTPUTS = WIDGET.swap("types: [BuiltReady]", "types: [BuiltReady, ShownReady]").swap(
    "reasons: [AllReady, NotAllReady, Built, Waiting, Broken]",
    "reasons: [AllReady, NotAllReady, Built, Waiting, Broken, Shown]",
).swap("      - apply: part.yaml.j2\n        as: part\n", """      - apply: part.yaml.j2
        as: part
      - set:
          partSize: "part.data.size"
""").swap('    done: {reason: Built, message: "built {{ size }} parts"}\n', """    outputs:
      builtSize: {value: "partSize", default: "'none'"}
      builtPart: "part.metadata.name"
    done: {reason: Built, message: "built {{ builtSize }} parts"}
  - name: show
    condition: ShownReady
    metric: WidgetShow
    do:
      - status: {shownSize: "builtSize", shownPart: "builtPart"}
    done: {reason: Shown, message: "shown {{ builtSize }}"}
""")


@pytest.fixture
def world(rules_dir: Callable[..., Path]) -> Callable[[str], World]:
    def make(rule: str) -> World:
        return World(next(iter(load_catalog(rules_dir(rule)).values())))
    return make


def test_a_later_step_reads_the_output_and_its_default_while_the_step_waits(world: Callable[[str], World]) -> None:
    """The show step does not require build: while build waits it reads the default (and null without one);
once build went through, the value computed over build's own set names."""
    w = world(OUTPUTS)
    w.order(size=2)
    w.run()
    w.run()
    assert w.conditions()["BuiltReady"] == ("False", "Waiting")
    status = w.live()["status"]
    assert status["shownSize"] == "none"
    assert "shownPart" not in status  # no default: null, and a null status field is not written
    part_is_ready(w)
    w.run()
    status = w.live()["status"]
    assert (status["shownSize"], status["shownPart"]) == ("2", "w-part")
    messages = {c["type"]: c["message"] for c in status["conditions"]}
    assert messages["BuiltReady"] == "built 2 parts"  # the step's own done reads its output


def lint(rules_dir: Callable[..., Path], rule: str) -> list[str]:
    return [str(e) for e in lint_paths([rules_dir(rule)])]


def test_the_kind_with_outputs_lints_clean(rules_dir: Callable[..., Path]) -> None:
    assert lint(rules_dir, OUTPUTS) == []


def test_an_output_read_before_its_step_is_an_error_at_the_name(rules_dir: Callable[..., Path]) -> None:
    """A step before the one that defines it, and a value, cannot read an output."""
    rule = OUTPUTS.swap("steps:\n", """steps:
  - name: early
    condition: ShownReady
    metric: WidgetEarly
    do:
      - status: {early: "builtSize"}
    done: {reason: Shown, message: shown}
""")
    rule = rule.swap('  size: "order.spec.size || `1`"\n', '  size: "order.spec.size || `1`"\n'
                     '  twice: "builtPart"\n')
    found = lint(rules_dir, rule)
    assert any("widget.yaml:" in e and "unknown name 'builtSize': an output of step build, which only the steps "
               "after it (and its own done) read" in e for e in found), found
    assert any("value twice: unknown name 'builtPart': an output of step build" in e for e in found), found


def test_an_output_hiding_a_value_or_bound_again_later_is_an_error(rules_dir: Callable[..., Path]) -> None:
    rule = OUTPUTS.swap('      builtPart: "part.metadata.name"\n',
                        '      builtPart: "part.metadata.name"\n      size: "partSize"\n').swap(
        '      - status: {shownSize: "builtSize", shownPart: "builtPart"}\n',
        '      - set: {builtSize: "`1`"}\n      - status: {shownSize: "builtSize", shownPart: "builtPart"}\n')
    found = lint(rules_dir, rule)
    assert any("outputs.size: the output of step build 'size' hides the value 'size'" in e for e in found), found
    assert any("step show binds 'builtSize', the output of step build" in e for e in found), found


def test_a_default_reads_only_what_the_step_saw_before_it_ran(rules_dir: Callable[..., Path]) -> None:
    """The default stands in for a step that did not go through: its own set names are unknown there."""
    found = lint(rules_dir, OUTPUTS.swap("default: \"'none'\"", 'default: "partSize"'))
    assert any("step build.outputs.builtSize.default: unknown name 'partSize'" in e for e in found), found


def test_a_step_whose_when_does_not_hold_publishes_its_defaults(world: Callable[[str], World]) -> None:
    """Even `otherwise: {status: true}` (the step counts as done) ran no action: the later step reads the default."""
    rule = OUTPUTS.swap("    metric: WidgetBuild\n", """    metric: WidgetBuild
    when: "order.spec.build"
    otherwise: {status: true, reason: Built, message: "nothing to build"}
""")
    w = world(rule)
    w.order(size=2, build=False)
    w.run()
    assert w.conditions()["BuiltReady"] == ("True", "Built")
    assert w.live()["status"]["shownSize"] == "none"
    assert w.cluster.list("v1", "ConfigMap", "ns").items == []
