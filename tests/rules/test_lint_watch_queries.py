"""Lint checks what a declared watch's queries read (name, namespace, orders, index, changed): the watched
object, never the pass's names; unknown functions; and, when the watched kind has a CRD, every path
against its schema. Each error at its token, with file:line:col."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.rules.lint import lint_paths
from tests.conftest import WIDGET
from tests.rules.test_lint_schema_paths import CRD


def lint(rules_dir: Callable[..., Path], watch: str, *, crds: bool = True) -> list[str]:
    """The Widget kind with one declared watch on Gears (which have a CRD), written as ``watch``."""
    rule = WIDGET + "watches:\n  - " + watch + "\n"
    extra = {"crds/example.yaml": CRD} if crds else {}
    return [str(e).rpartition("/")[2] for e in lint_paths([rules_dir(rule, extra=extra)])]


# The watch is line 35 of the rule file; `  - {apiVersion: example.io/v1, kind: Gear, ` is 45 characters.
HEAD = "{apiVersion: example.io/v1, kind: Gear, "

CASES = [
    ("a pass name in name", HEAD + 'name: "order.spec.region"}',
     "widget.yaml:35:52: watch name: unknown name 'order': a watch's query reads the Gear of the event "
     "(metadata, spec, status, ...), not the pass's names"),
    ("a value in orders", HEAD + 'orders: "spec.teeth || size"}',
     "widget.yaml:35:68: watch orders: unknown name 'size'"),
    ("an unknown function in index", HEAD + 'index: "sha265(metadata.name)"}',
     "widget.yaml:35:53: index: unknown function sha265(); did you mean sha256()?"),
    ("an unknown field in name", HEAD + 'name: "spec.teth"}',
     "widget.yaml:35:57: watch name: Gear.spec has no field 'teth'; did you mean 'teeth'?"),
    ("an unknown top-level field in orders", HEAD + 'orders: "sepc.teeth"}',
     "widget.yaml:35:54: watch orders: Gear has no field 'sepc'; did you mean 'spec'?"),
    ("an unknown metadata field in namespace", HEAD + 'name: "metadata.name", namespace: "metadata.namspace"}',
     "widget.yaml:35:89: watch namespace: Gear.metadata has no field 'namspace'; did you mean 'namespace'?"),
    ("an unknown field in changed", HEAD + 'name: "metadata.name", changed: ["spec.teth"]}',
     "widget.yaml:35:84: watch changed: Gear.spec has no field 'teth'; did you mean 'teeth'?"),
]


@pytest.mark.parametrize(("watch", "expected"), [(w, e) for _, w, e in CASES], ids=[c[0] for c in CASES])
def test_watch_query_mistake_is_named_at_its_token(rules_dir: Callable[..., Path], watch: str,
                                                   expected: str) -> None:
    found = lint(rules_dir, watch)
    assert any(line.startswith(expected) for line in found), found


def test_every_watch_mistake_comes_out_in_one_run(rules_dir: Callable[..., Path]) -> None:
    found = lint(rules_dir, HEAD + 'orders: "spec.teth || order.x", changed: ["sepc.teeth"]}')
    assert len([line for line in found if "watch " in line]) == 3, found


def test_known_paths_and_fields_of_a_kind_without_a_crd_lint_clean(rules_dir: Callable[..., Path]) -> None:
    assert lint(rules_dir, HEAD + 'orders: "spec.teeth", changed: ["metadata.generation", "metadata.labels.x"]}') == []
    assert lint(rules_dir, '{apiVersion: v1, kind: ConfigMap, name: "data.owner || metadata.labels.x"}') == []


def test_a_kind_without_a_crd_is_not_checked_below_its_names(rules_dir: Callable[..., Path]) -> None:
    assert lint(rules_dir, HEAD + 'name: "spec.teth"}', crds=False) == []


def test_a_function_that_answers_only_in_a_pass_is_refused_in_a_watch(rules_dir: Callable[..., Path]) -> None:
    """cluster_reachable() (the moment's answer) and password() (a new value each call) in a watch's query or in
    indexKey would map one event differently each time: refused at the call."""
    found = lint(rules_dir, HEAD + "orders: \"if_else(cluster_reachable('db-1'), spec.teeth, `null`)\"}")
    assert any(line.startswith("widget.yaml:35:62: watch orders: cluster_reachable() cannot be used here")
               for line in found), found
    rule = WIDGET.replace("teardown:\n", "indexKey: \"password()\"\nteardown:\n")
    found = [str(e) for e in lint_paths([rules_dir(rule)])]
    assert any("indexKey: password() cannot be used here" in line for line in found), found
