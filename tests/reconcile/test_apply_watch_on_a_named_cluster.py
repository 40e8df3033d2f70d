"""A child a step applies on a cluster the rules name is watched there, even when no teardown action
names its kind: deleting it, or editing it, on that cluster wakes the order, which applies it again."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from engine.cluster.registry import ClusterSet
from engine.metrics import Metrics
from engine.rules.catalog import load_catalog
from engine.rules.errors import RuleErrors
from engine.runtime.manager import Manager
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster
from tests.reconcile.test_any_cluster import GATE, PART, RULE

# The teardown deletes nothing on the target cluster: only the step's apply says a ConfigMap lives there.
NO_TEARDOWN_DELETE = RULE.replace("GATES\n", GATE).replace(
    """  do:
    - delete: {apiVersion: v1, kind: ConfigMap}
      cluster: "{{ target }}"
""", """  do:
    - log: "the parts stay"
""")


def manager(rules_dir: Callable[..., Path]) -> tuple[Manager[Any], MemoryCluster, MemoryCluster]:
    clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    management = MemoryCluster("", clock=clock, permissive=True)
    edge = MemoryCluster("edge-1", clock=clock, permissive=True)
    edge.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "db"},
                 "data": {"mode": "fast"}})
    clusters = ClusterSet(management)
    clusters.engage("edge-1", edge)
    catalog = load_catalog(rules_dir(NO_TEARDOWN_DELETE, PART))
    run: Manager[Any] = Manager(catalog, clusters, clock=clock, metrics=Metrics(CollectorRegistry()))
    run.start()
    management.create({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
                       "spec": {"target": "edge-1", "namespace": "db"}})
    run.settle()
    return run, management, edge


def test_deleting_the_child_on_the_named_cluster_wakes_the_order(rules_dir: Callable[..., Path]) -> None:
    run, _, edge = manager(rules_dir)
    assert edge.get("v1", "ConfigMap", "db", "w-part")["data"] == {"mode": "fast"}
    edge.delete("v1", "ConfigMap", "db", "w-part")
    run.settle()  # no timer is due: only the watch on edge-1 can bring the order back
    assert edge.get("v1", "ConfigMap", "db", "w-part")["data"] == {"mode": "fast"}


def test_drift_of_the_child_on_the_named_cluster_is_set_right(rules_dir: Callable[..., Path]) -> None:
    run, _, edge = manager(rules_dir)
    part = edge.get("v1", "ConfigMap", "db", "w-part")
    edge.update({**part, "data": {"mode": "slow"}})
    run.settle()
    assert edge.get("v1", "ConfigMap", "db", "w-part")["data"] == {"mode": "fast"}


def test_the_watch_is_derived_on_every_cluster(rules_dir: Callable[..., Path]) -> None:
    kind = next(iter(load_catalog(rules_dir(NO_TEARDOWN_DELETE, PART)).values()))
    (watch,) = [w for w in kind.watches if w.kind == "ConfigMap"]
    assert (watch.api_version, watch.clusters, watch.mapping) == ("v1", "all", "labels")


def test_a_templated_kind_on_a_named_cluster_is_a_lint_error(rules_dir: Callable[..., Path]) -> None:
    rules = rules_dir(NO_TEARDOWN_DELETE, PART.replace("kind: ConfigMap", "kind: {{ 'ConfigMap' | tojson }}"))
    try:
        load_catalog(rules)
    except RuleErrors as err:
        found = [str(e) for e in err.errors]
    else:
        found = []
    assert any("apply action: a child on a cluster the rules name is watched there, so its template needs a "
               "constant apiVersion and kind" in line and "widget.yaml:" in line for line in found), found


def test_a_scenario_deleting_the_part_on_the_named_cluster_wakes_the_gadget(tmp_path: Path) -> None:
    """As `engine test` runs it: the Gadget's Part lives on edge-1 and no teardown action names Parts; the
    scenario deletes it there and only settles (no clock moves, so no requeue can stand in for the watch)."""
    from tests.testing.conftest import GADGET_CRD, GADGET_RULES, PART_TEMPLATE, SECRET_TEMPLATE, Workspace, report

    rules = (GADGET_RULES.replace('  size: "order.spec.size || `1`"\n',
                                  '  size: "order.spec.size || `1`"\n  target: "\'edge-1\'"\n')
             .replace("      - apply: part.yaml.j2\n",
                      "      - apply: part.yaml.j2\n        cluster: \"{{ target }}\"\n")
             .replace("    - delete: {apiVersion: example.io/v1, kind: Part}\n", ""))
    assert 'cluster: "{{ target }}"' in rules and "kind: Part}" not in rules
    ws = Workspace(tmp_path)
    ws.write("rules/gadget.yaml", rules)
    ws.write("templates/gadget/part.yaml.j2", PART_TEMPLATE)
    ws.write("templates/gadget/secret.yaml.j2", SECRET_TEMPLATE)
    ws.write("crds/gadgets.yaml", GADGET_CRD)
    outcome = ws.run("""\
        scenario: a Part deleted on edge-1 is applied again there, woken by the derived watch
        clusters: [edge-1]
        objects:
          - object: {apiVersion: v1, kind: Namespace, metadata: {name: shop}}
          - object: {apiVersion: v1, kind: Namespace, metadata: {name: shop}}
            cluster: edge-1
        steps:
          - create: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: g, namespace: shop}, spec: {}}
          - settle: {}
          - expect:
              - present: {apiVersion: example.io/v1, kind: Part, metadata: {name: g-part, namespace: shop}}
                cluster: edge-1
              - count: {apiVersion: example.io/v1, kind: Part, equals: 0}
          - delete: {apiVersion: example.io/v1, kind: Part, namespace: shop, name: g-part}
            cluster: edge-1
          - settle: {}
          - expect:
              - present: {apiVersion: example.io/v1, kind: Part, metadata: {name: g-part, namespace: shop}}
                cluster: edge-1
        """)
    assert outcome.status == "PASS", report(outcome)
