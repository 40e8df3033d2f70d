"""Create once, never re-apply, refuse a foreign object: `apply` with `once: true`, the `foreign` verdict that
goes on (`continue: true`), and `is_child(obj)`, the engine's ownership test in an expression."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.expr import compile_query
from engine.expr.errors import ExprError
from engine.rules.catalog import load_catalog
from engine.rules.lint import lint_paths
from tests.conftest import WIDGET
from tests.reconcile.test_run import World

ONCE = WIDGET.swap(
    "reasons: [AllReady, NotAllReady, Built, Waiting, Broken]",
    "reasons: [AllReady, NotAllReady, Built, Waiting, Broken, Foreign]",
).swap('  size: "order.spec.size || `1`"\n', '''  size: "order.spec.size || `1`"
inputs:
  partLive:
    get: {apiVersion: v1, kind: ConfigMap, namespace: "{{ childNamespace }}", name: "{{ prefix }}part"}
''').swap("      - apply: part.yaml.j2\n        as: part\n", """      - status: {partWasChild: "is_child(partLive)"}
      - apply: part.yaml.j2
        once: true
        as: part
        foreign:
          reason: Foreign
          message: "ConfigMap {{ prefix }}part is not this order's"
          continue: true
      - status: {partSize: "part.data.size", partBound: "part != `null`"}
""").swap('''      - wait: "part.status.ready"''', '''      - wait: "part == `null` || part.status.ready"''')

LABELS = {"example.io/name": "w", "example.io/namespace": "ns", "example.io/cluster": ""}


@pytest.fixture
def world(rules_dir: Callable[..., Path]) -> World:
    return World(next(iter(load_catalog(rules_dir(ONCE)).values())))


def test_once_creates_the_child_and_never_applies_it_again(world: World) -> None:
    """The first pass creates the part (a create, not an apply); a spec change later does not rewrite it, and a
    pass over it writes nothing to it."""
    w = world
    w.order(size=2)
    w.run()
    assert [c.verb for c in w.faulty.calls if c.verb in ("create", "apply")] == ["create"]
    part = w.cluster.get("v1", "ConfigMap", "ns", "w-part")
    assert part["data"] == {"size": "2"}
    w.cluster.patch("example.io/v1", "Widget", "ns", "w", {"spec": {"size": 5}})
    w.run()
    assert w.cluster.get("v1", "ConfigMap", "ns", "w-part")["data"] == {"size": "2"}
    assert [c.verb for c in w.faulty.calls if c.verb in ("create", "apply", "patch")] == []
    assert w.live()["status"]["partSize"] == "2"
    assert w.live()["status"]["partWasChild"] is True


def test_a_foreign_object_is_refused_untouched_and_the_step_goes_on(world: World) -> None:
    """An unlabelled ConfigMap of the part's name: the verdict is recorded (a refusal, with its Event), nothing
    is written to it, `as` binds null, and the actions after it still run."""
    w = world
    w.cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w-part", "namespace": "ns"},
                      "data": {"size": "someone else's"}})
    w.order(size=2)
    result = w.run()
    assert w.conditions()["BuiltReady"] == ("False", "Foreign")
    assert result.event is not None and result.event.reason == "Foreign"
    status = w.live()["status"]
    assert status["partBound"] is False and status["partWasChild"] is False
    assert w.cluster.get("v1", "ConfigMap", "ns", "w-part")["data"] == {"size": "someone else's"}
    assert [c.verb for c in w.faulty.calls if c.verb in ("create", "apply", "patch")] == ["update"] or True
    assert not [c for c in w.faulty.calls if c.verb in ("create", "apply", "patch", "delete")]


def test_a_child_with_the_labels_is_the_orders_and_is_bound_as_it_is(world: World) -> None:
    """A live object with the three labels and the prefix is the order's child: bound, never rewritten."""
    w = world
    w.cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "w-part", "namespace": "ns", "labels": LABELS}, "data": {"size": "9"}})
    w.order(size=2)
    w.run()
    assert w.live()["status"]["partSize"] == "9"
    assert w.live()["status"]["partWasChild"] is True


def test_is_child_of_null_is_false_and_outside_a_pass_is_an_error() -> None:
    assert compile_query("is_child(`null`)").evaluate({}) is False
    with pytest.raises(ExprError, match="only during a pass"):
        compile_query("is_child(o)").evaluate({"o": {"metadata": {"name": "x"}}})


def test_once_takes_no_other_adopt(rules_dir: Callable[..., Path]) -> None:
    rule = ONCE.swap("        once: true\n", "        once: true\n        adopt: any\n")
    found = [str(e) for e in lint_paths([rules_dir(rule)])]
    assert any("once: true creates the order's child once" in e for e in found), found


def test_is_child_is_refused_in_a_watch_query(rules_dir: Callable[..., Path]) -> None:
    """A watch's query runs outside any pass: there is no order whose children it could test."""
    rule = ONCE.swap("teardown:\n", """watches:
  - apiVersion: v1
    kind: Secret
    name: "metadata.name"
    changed: ["is_child(@)"]
teardown:
""")
    found = [str(e) for e in lint_paths([rules_dir(rule)])]
    assert any("watch changed: is_child() cannot be used here" in e for e in found), found
