"""Any cluster, any namespace (issue 10 item 1): actions, inputs and teardown name their cluster and
namespace by expression; `clusters` tells which are registered; children there are found by labels."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cluster.registry import ClusterSet
from engine.outcome import Request
from engine.reconcile.run import run_pass
from engine.rules.catalog import load_catalog
from engine.rules.model import CompiledKind
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster

RULE = """\
kind: Widget
order: {apiVersion: example.io/v1, plural: widgets, finalizer: example.io/teardown, fieldManager: rule-engine}
conditions:
  types: [BuiltReady]
  ready: {type: Ready, trueReason: AllReady, trueMessage: all ready, falseReason: NotAllReady, falseMessage: not ready}
  reasons: [AllReady, NotAllReady, Built, ClusterNotRegistered, BuildError]
children:
  namespace: "{{ order.spec.namespace }}"
  prefix: "{{ order.metadata.name }}-"
  labels: {name: example.io/name, namespace: example.io/namespace, cluster: example.io/cluster}
inputs:
  remoteConfig:
    get: {apiVersion: v1, kind: ConfigMap, namespace: "{{ order.spec.namespace }}", name: settings}
    cluster: "{{ target }}"
values:
  target: "order.spec.target"
GATES
steps:
  - name: build
    condition: BuiltReady
    metric: WidgetBuild
    error: {reason: BuildError}
    do:
      - apply: part.yaml.j2
        cluster: "{{ target }}"
    done: {reason: Built, message: "built with {{ remoteConfig.data.mode }}"}
teardown:
  patientWhile: "contains(clusters, target)"
  do:
    - delete: {apiVersion: v1, kind: ConfigMap}
      cluster: "{{ target }}"
"""

GATE = """gates:
  - name: target-registered
    when: "!contains(clusters, target)"
    reason: ClusterNotRegistered
    message: "cluster {{ go_quote(target) }} is not registered"
  - finalizer: true
"""

PART = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ (prefix ~ 'part') | tojson }}
  namespace: {{ childNamespace | tojson }}
  labels: {{ childLabels | tojson }}
data: {mode: {{ remoteConfig.data.mode | tojson }}}
"""


class World:
    def __init__(self, kind: CompiledKind) -> None:
        self.clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
        self.management = MemoryCluster("", clock=self.clock, permissive=True)
        self.edge = MemoryCluster("edge-1", clock=self.clock, permissive=True)
        self.clusters = ClusterSet(self.management)
        self.clusters.engage("edge-1", self.edge)
        self.kind = kind
        self.edge.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "db"},
                          "data": {"mode": "fast"}})

    def order(self, target: str) -> None:
        self.management.create({"apiVersion": "example.io/v1", "kind": "Widget",
                                "metadata": {"name": "w", "namespace": "ns"},
                                "spec": {"target": target, "namespace": "db"}})

    def run(self):  # type: ignore[no-untyped-def]
        return run_pass(self.kind, Request(self.kind.key, "", "ns", "w"), clusters=self.clusters, clock=self.clock)

    def conditions(self) -> dict[str, tuple[str, str, str]]:
        live = self.management.get("example.io/v1", "Widget", "ns", "w")
        return {c["type"]: (c["status"], c["reason"], c["message"]) for c in live["status"]["conditions"]}


@pytest.fixture
def world(rules_dir: Callable[..., Path]) -> Callable[[str], World]:
    def make(gates: str) -> World:
        return World(next(iter(load_catalog(rules_dir(RULE.replace("GATES\n", gates), PART)).values())))
    return make


def test_child_on_a_named_cluster_in_another_namespace_then_torn_down(world: Callable[[str], World]) -> None:
    w = world(GATE)
    w.order("edge-1")
    w.run()
    w.run()
    assert w.conditions()["BuiltReady"] == ("True", "Built", "built with fast")
    part = w.edge.get("v1", "ConfigMap", "db", "w-part")
    assert part["metadata"]["labels"] == {"example.io/name": "w", "example.io/namespace": "ns",
                                          "example.io/cluster": ""}
    assert w.management.list("v1", "ConfigMap").items == []
    # A look-alike without the labels is not the order's child, and stays.
    w.edge.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w-other", "namespace": "db"}})
    w.management.delete("example.io/v1", "Widget", "ns", "w")
    w.run()  # patient: deletes, comes back
    w.run()  # nothing left: the finalizer goes
    assert [o["metadata"]["name"] for o in w.edge.list("v1", "ConfigMap", "db").items] == ["settings", "w-other"]
    assert w.management.list("example.io/v1", "Widget", "ns").items == []


def test_a_rule_refuses_an_unregistered_cluster_with_its_condition(world: Callable[[str], World]) -> None:
    w = world(GATE)
    w.order("edge-9")
    assert w.run().error is None
    assert w.conditions()["BuiltReady"] == ("False", "ClusterNotRegistered", 'cluster "edge-9" is not registered')


def test_an_unregistered_cluster_without_a_gate_fails_the_step_clearly(world: Callable[[str], World]) -> None:
    w = world("")
    w.order("edge-9")
    result = w.run()
    assert result.error is not None
    assert 'cluster "edge-9" is not registered' in str(result.error)


def test_watch_on_children_of_a_named_cluster_is_derived_for_every_cluster(world: Callable[[str], World]) -> None:
    w = world(GATE)
    (watch,) = [x for x in w.kind.watches if x.kind == "ConfigMap"]
    assert (watch.clusters, watch.mapping) == ("all", "labels")
