"""Monitoring (deploy/components/monitoring/): the Grafana dashboard and the PrometheusRule alerts use only
metrics the running operator exports, with their labels; the component renders with kustomize; the orders
collector counts orders by condition, time to Ready and time not Ready."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from engine.clock import SystemClock
from engine.metrics import DEFAULT_PREFIX, OrderKindView, OrdersCollector
from engine.operator import Operator
from offline.cluster.memory import MemoryCluster
from tests.ops.test_operator import options, running, wait_for

ROOT = Path(__file__).resolve().parent.parent
COMPONENT = ROOT / "deploy/components/monitoring"
METRIC = re.compile(rf"\b({DEFAULT_PREFIX}_[a-z_]+)\b")
SELECTOR = re.compile(rf"\b({DEFAULT_PREFIX}_[a-z_]+)\{{([^}}]*)\}}")
BY = re.compile(r"\bby \(([^)]*)\)")
SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum", "_created"),
            "gaugehistogram": ("_bucket", "_gcount", "_gsum")}


def expressions() -> list[tuple[str, str]]:
    """(where, PromQL) of every dashboard target and alert."""
    dashboard = json.loads((COMPONENT / "dashboard.json").read_text())
    found = [(f"dashboard panel {p['title']!r}", t["expr"]) for p in dashboard["panels"] for t in p.get("targets", ())]
    rule = yaml.safe_load((COMPONENT / "prometheusrule.yaml").read_text())
    found += [(f"alert {r['alert']}", r["expr"]) for g in rule["spec"]["groups"] for r in g["rules"]]
    return found


def exported(registry: CollectorRegistry) -> dict[str, set[str]]:
    """Every sample name the registry exposes on /metrics, with the label names its samples carry or its
    family declares (a labelled family has no sample until a first observation)."""
    declared: dict[str, tuple[str, ...]] = {}
    for collector in set(registry._collector_to_names):  # the families and their label names, sampled or not
        for name in registry._collector_to_names[collector]:
            declared[name] = tuple(getattr(collector, "_labelnames", ()))
    names: dict[str, set[str]] = {}
    for family in registry.collect():
        for suffix in SUFFIXES.get(family.type, ("",)):
            names.setdefault(family.name + suffix, set()).update(declared.get(family.name + suffix, ()),
                                                                  ("le",) if suffix == "_bucket" else ())
        for sample in family.samples:
            names.setdefault(sample.name, set()).update(sample.labels)
    return names


def test_every_metric_and_label_the_dashboard_and_alerts_use_is_exported(
        rules_dir: Callable[..., Path]) -> None:
    """Against the running operator's registry, after it has served an order: a renamed metric or label
    fails here instead of leaving a panel empty or an alert silent."""
    cluster = MemoryCluster("", clock=SystemClock(), permissive=True)
    cluster.create({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
                    "spec": {"size": 1}})
    operator = Operator(options(rules_dir()), cluster)
    with running(operator):
        waiting = {"kind": "Widget", "condition": "BuiltReady", "status": "False", "reason": "Waiting"}
        assert wait_for(lambda: operator.registry.get_sample_value(f"{DEFAULT_PREFIX}_orders", waiting) == 1,
                        seconds=30)  # the order, as the runtime's watch cache last saw it after its pass
        names = exported(operator.registry)
    assert names[f"{DEFAULT_PREFIX}_orders"] >= {"kind", "condition", "status", "reason"}
    missing = []
    assert len(expressions()) >= 15
    for where, expr in expressions():
        used = set(METRIC.findall(expr))
        missing += [f"{where}: {name}" for name in sorted(used) if name not in names]
        for name, matchers in SELECTOR.findall(expr):
            labels = {m.split("=")[0].strip(" !~") for m in matchers.split(",") if m.strip()}
            missing += [f"{where}: label {label} of {name}" for label in sorted(labels - names.get(name, set()))]
        for group in BY.findall(expr):
            for label in (part.strip() for part in group.split(",")):
                if not any(label in names.get(name, set()) for name in used):
                    missing.append(f"{where}: by ({label})")
    assert not missing, "\n".join(missing)


@pytest.mark.skipif(shutil.which("kubectl") is None,
                    reason="kubectl is not installed: this test drives the real binary")
def test_the_component_renders_with_kustomize(tmp_path: Path) -> None:
    """An overlay of deploy/ with the component: the install plus a ServiceMonitor, the PrometheusRule and the
    dashboard ConfigMap labelled for Grafana's sidecar."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(ROOT / "deploy", overlay)],
        "components": [os.path.relpath(COMPONENT, overlay)]}))
    done = subprocess.run(["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(done.stdout) if d}
    assert ("Deployment", "c5c3-operator") in docs
    monitor = docs[("ServiceMonitor", "c5c3-operator")]
    service = docs[("Service", "c5c3-operator-metrics")]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in service["spec"]["ports"]}
    alerts = {r["alert"] for g in docs[("PrometheusRule", "c5c3-operator")]["spec"]["groups"] for r in g["rules"]}
    assert {"C5c3OrdersNotReady", "C5c3StepErrors", "C5c3NoLeader"} <= alerts
    dashboard = docs[("ConfigMap", "c5c3-operator-dashboard")]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["c5c3-order-engine.json"])["uid"] == "c5c3-order-engine"


def _order(name: str, created: str, *conditions: tuple[str, str, str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created},
            "status": {"conditions": [{"type": t, "status": s, "reason": r, "lastTransitionTime": at}
                                      for t, s, r, at in conditions]}}


def test_the_orders_collector_counts_by_condition_and_times_ready_and_not_ready() -> None:
    now = dt.datetime(2026, 1, 1, 2, 0, tzinfo=dt.UTC)
    orders = [
        _order("ready", "2026-01-01T00:00:00Z", ("BuiltReady", "True", "Built", "2026-01-01T00:00:20Z"),
               ("Ready", "True", "AllReady", "2026-01-01T00:00:20Z")),
        _order("stuck", "2026-01-01T00:00:00Z", ("BuiltReady", "False", "Waiting", "2026-01-01T00:00:00Z"),
               ("Ready", "False", "NotAllReady", "2026-01-01T00:00:00Z")),
        _order("odd", "2026-01-01T01:50:00Z", ("BuiltReady", "Maybe", "Invented", "2026-01-01T01:50:00Z")),
    ]
    view = OrderKindView("Widget", ("BuiltReady", "Ready"), "Ready",
                         frozenset({"AllReady", "NotAllReady", "Built", "Waiting"}), orders)
    registry = CollectorRegistry()
    registry.register(OrdersCollector(DEFAULT_PREFIX, lambda: [view], lambda: now))

    def sample(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(f"{DEFAULT_PREFIX}_{name}", {"kind": "Widget", **labels})

    assert sample("orders", condition="BuiltReady", status="True", reason="Built") == 1
    assert sample("orders", condition="BuiltReady", status="False", reason="Waiting") == 1
    assert sample("orders", condition="BuiltReady", status="Unknown", reason="Other") == 1  # not what rules declare
    assert sample("orders", condition="Ready", status="Unknown", reason="") == 1  # no Ready condition yet
    assert sample("order_time_to_ready_seconds_bucket", le="15.0") == 0
    assert sample("order_time_to_ready_seconds_bucket", le="30.0") == 1
    assert sample("order_time_to_ready_seconds_gsum") == 20
    # Not Ready: "stuck" for 2 hours (since its Ready went False), "odd" for 10 minutes (since creation).
    assert sample("order_not_ready_seconds_gcount") == 2
    assert sample("order_not_ready_seconds_bucket", le="600.0") == 1
    assert sample("order_not_ready_seconds_bucket", le="1800.0") == 1
