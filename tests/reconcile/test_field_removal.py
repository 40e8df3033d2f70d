"""An apply drops a field the rules no longer render (item 4 of issue 10): the comparison is made
with what the kind's field manager owns (managedFields), on the in-memory cluster and on a
KubeCluster over HTTP with its cache on; other writers' fields stay; a converged pass writes nothing."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.cluster.api import Cluster, Obj
from engine.cluster.kube import KubeCluster, api_client_from_kubeconfig
from engine.cluster.registry import ClusterSet
from engine.outcome import Request
from engine.reconcile.run import run_pass
from engine.rules.catalog import load_catalog
from offline.clock import SimulatedClock
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator
from tests.cluster.kube_kit import widget_crd
from tests.conftest import PART as PART_OF_WIDGET
from tests.conftest import WIDGET

RULE = WIDGET.replace("""      - wait: "part.status.ready"
        reason: Waiting
        message: "waiting for part {{ part.metadata.name }}"
        requeue: 10s
""", "")
assert RULE != WIDGET

PART = PART_OF_WIDGET + """\
{% if order.spec.color %}
  color: {{ order.spec.color | tojson }}
{% endif %}
"""


@pytest.fixture(params=["memory", "kube-cached"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[MemoryCluster, Cluster]]:
    """(the stored world, the cluster the operator talks to)."""
    clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    memory = MemoryCluster("", clock=clock)
    memory.create(widget_crd("example.io"))
    memory.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    if request.param == "memory":
        yield memory, memory
        return
    emulator = Emulator(memory)
    emulator.start()
    kube = KubeCluster("", api_client_from_kubeconfig(emulator.kubeconfig("test")),
                       discovery_cache_dir=tmp_path / "discovery")
    try:
        yield memory, kube
    finally:
        kube.stop()
        emulator.stop()


def test_a_key_no_longer_rendered_is_removed_and_others_stay(
        backend: tuple[MemoryCluster, Cluster], rules_dir: Callable[..., Path]) -> None:
    memory, operator_view = backend
    kind = next(iter(load_catalog(rules_dir(RULE, PART)).values()))
    faulty = FaultyCluster(operator_view, cluster_name="")
    clusters = ClusterSet(faulty)
    clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))

    def run() -> list[str]:
        faulty.calls.clear()
        result = run_pass(kind, Request(kind.key, "", "ns", "w"), clusters=clusters, clock=clock)
        assert result.error is None
        return [c.verb for c in faulty.calls if c.verb not in ("get", "list", "watch") and c.kind == "ConfigMap"]

    def part() -> Obj:
        return memory.get("v1", "ConfigMap", "ns", "w-part")

    memory.create({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
                   "spec": {"size": 2, "color": "blue"}})
    run()
    assert part()["data"] == {"size": "2", "color": "blue"}
    # Another writer adds a key of its own (written through the operator's client, so its cache has seen it).
    operator_view.patch("v1", "ConfigMap", "ns", "w-part", {"data": {"note": "by hand"}}, field_manager="person")
    assert run() == []  # converged: nothing rendered is missing, nothing owned is dropped

    operator_view.patch("example.io/v1", "Widget", "ns", "w", {"spec": {"color": None}})
    assert run() == ["apply"]
    assert part()["data"] == {"size": "2", "note": "by hand"}
    assert run() == []
