"""Teardown: a `fail` action that ends the pass with its own error text, and a `phase` boundary given by a
condition (`until:`), not only by "no delete issued"."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.rules.catalog import load_catalog
from engine.rules.lint import lint_paths
from tests.conftest import WIDGET, RuleText
from tests.reconcile.test_run import World

LABELS = {"example.io/name": "w", "example.io/namespace": "ns", "example.io/cluster": ""}

FINALIZED = WIDGET.swap("steps:\n", "gates:\n  - finalizer: true\n    requeue: 1s\nsteps:\n")

FAIL = FINALIZED.swap("""  do:
    - delete: {apiVersion: v1, kind: ConfigMap}
""", """  do:
    - fail: "part {{ prefix }}part is locked (spec.locked); unlock it and the widget's teardown goes on"
      when: "order.spec.locked"
    - delete: {apiVersion: v1, kind: ConfigMap}
""")

UNTIL = FINALIZED.swap("values:\n", """inputs:
  locks:
    list: {apiVersion: v1, kind: ConfigMap, namespace: "{{ order.metadata.namespace }}", labels: {lock: "w"}}
    live: true
  parts:
    list: {apiVersion: v1, kind: ConfigMap, namespace: "{{ order.metadata.namespace }}"}
    children: true
    live: true
values:
""").swap("""  patientWhile: "`true`"
  do:
    - delete: {apiVersion: v1, kind: ConfigMap}
""", """  patientWhile: "order.spec.patient"
  do:
    - delete: {apiVersion: v1, kind: ConfigMap}
    - phase: the key, once no part is listed and nothing locks the widget
      until: "length(parts) == `0` && length(locks) == `0`"
    - delete: {apiVersion: v1, kind: Secret}
""")


@pytest.fixture
def world(rules_dir: Callable[..., Path]) -> Callable[[str], World]:
    def make(rule: str) -> World:
        return World(next(iter(load_catalog(rules_dir(rule)).values())))
    return make


def delete_with_children(w: World, *, part_finalizer: bool = False) -> None:
    """The order with its part (built) and a key Secret, then deleted."""
    w.run()
    w.run()
    w.run()
    if part_finalizer:
        w.cluster.patch("v1", "ConfigMap", "ns", "w-part", {"metadata": {"finalizers": ["example.io/hold"]}})
    w.cluster.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "w-key", "namespace": "ns",
                                                                          "labels": LABELS}})
    w.cluster.delete("example.io/v1", "Widget", "ns", "w")


def names(w: World, kind: str) -> list[str]:
    return [o["metadata"]["name"] for o in w.cluster.list("v1", kind, "ns").items]


def test_fail_ends_the_teardown_with_its_own_text(world: Callable[[str], World]) -> None:
    """While its `when` holds, nothing after it runs, the finalizer stays and the pass fails with its text."""
    w = world(FAIL)
    w.order(size=1, locked=True)
    delete_with_children(w)
    result = w.run()
    assert str(result.error) == "part w-part is locked (spec.locked); unlock it and the widget's teardown goes on"
    assert names(w, "ConfigMap") == ["w-part"]
    assert w.live()["metadata"]["finalizers"] == ["example.io/teardown"]
    assert w.writes() == []
    w.cluster.patch("example.io/v1", "Widget", "ns", "w", {"spec": {"locked": False}})
    assert w.run().error is None
    assert names(w, "ConfigMap") == []


def test_a_phase_until_runs_what_follows_as_soon_as_its_query_holds(world: Callable[[str], World]) -> None:
    """The part goes at once (no finalizer): the key goes in the same pass, where a plain phase waits a pass."""
    w = world(UNTIL)
    w.order(size=1, patient=True)
    delete_with_children(w)
    result = w.run()
    assert result.error is None and result.requeue_after == dt.timedelta(seconds=10)
    assert names(w, "ConfigMap") == [] and names(w, "Secret") == []
    w.run()
    with pytest.raises(Exception, match="not found"):
        w.live()


def test_a_phase_until_waits_while_its_query_does_not_hold(world: Callable[[str], World]) -> None:
    """While the part is held (listed, being deleted) or a lock is listed, the key stays and the finalizer too,
    even on a pass that deleted nothing; once the query holds, the rest runs."""
    w = world(UNTIL)
    w.order(size=1, patient=True)
    delete_with_children(w, part_finalizer=True)
    assert w.run().requeue_after == dt.timedelta(seconds=10)
    assert names(w, "Secret") == ["w-key"]
    w.cluster.patch("v1", "ConfigMap", "ns", "w-part", {"metadata": {"finalizers": None}})
    w.cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "lock", "namespace": "ns", "labels": {"lock": "w"}}})
    result = w.run()
    assert result.requeue_after == dt.timedelta(seconds=10)
    assert w.writes() == [] and names(w, "Secret") == ["w-key"]
    assert w.live()["metadata"]["finalizers"] == ["example.io/teardown"]
    w.cluster.delete("v1", "ConfigMap", "ns", "lock")
    w.run()
    assert names(w, "Secret") == []


def test_fail_open_does_not_wait_at_a_phase_until(world: Callable[[str], World]) -> None:
    w = world(UNTIL)
    w.order(size=1, patient=False)
    delete_with_children(w, part_finalizer=True)
    assert w.run().error is None
    assert names(w, "Secret") == []
    with pytest.raises(Exception, match="not found"):
        w.live()


def lint(rules_dir: Callable[..., Path], rule: str) -> list[str]:
    return [str(e) for e in lint_paths([rules_dir(rule)])]


def test_lint_accepts_fail_and_until(rules_dir: Callable[..., Path]) -> None:
    assert lint(rules_dir, FAIL) == []
    assert lint(rules_dir, UNTIL) == []


LINT_CASES = [
    ("a fail without when", RuleText(FAIL).drop('      when: "order.spec.locked"\n'),
     "widget.yaml:36:7: teardown fail action: without `when` it fails every pass, so the finalizer is never "
     "released"),
    ("an unknown name in a fail's text", RuleText(FAIL).swap("{{ prefix }}part", "{{ prefx }}part"),
     "teardown fail action: unknown name 'prefx'; did you mean 'prefix'?"),
    ("an unknown name in a fail's when", RuleText(FAIL).swap("order.spec.locked", "ordr.spec.locked"),
     "teardown fail action: unknown name 'ordr'"),
    ("an unknown name in until", RuleText(UNTIL).swap("length(parts) == `0` &&", "length(prts) == `0` &&"),
     "teardown phase action: unknown name 'prts'"),
    ("a bad until", RuleText(UNTIL).swap("length(parts) == `0` &&", "length(parts) == `0` && =="),
     "widget.yaml:46:39: until: invalid JMESPath expression"),
]


@pytest.mark.parametrize(("rule", "expected"), [(r, e) for _, r, e in LINT_CASES], ids=[c[0] for c in LINT_CASES])
def test_lint_reports_a_bad_fail_or_until_at_its_place(rules_dir: Callable[..., Path], rule: str,
                                                       expected: str) -> None:
    found = lint(rules_dir, rule)
    assert any(expected in line for line in found), found
