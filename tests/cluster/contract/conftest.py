"""The contract suite runs against every Cluster implementation through the interface only.

``memory`` is the in-process cluster. ``kube`` is a KubeCluster (the official client) talking
HTTP to an emulator that serves a MemoryCluster, every read live; ``kube-cached`` is the same
with its informer cache on, as the operator runs it. Tests never reach into an
implementation: CRDs are installed through ``cluster.create``, and nothing is seeded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from contract_kit import GADGET_CRD, WIDGET_CRD, Clock

from engine.cluster.api import Cluster
from engine.cluster.kube import KubeCluster, kube_cluster_from_kubeconfig
from engine.cluster.memory import MemoryCluster
from engine.testing.emulator import Emulator

MakeCluster = Callable[[str], Cluster]


CACHED_DIFFERENCES = {
    "test_owner_held_by_finalizer_keeps_dependents": pytest.mark.skip(
        reason="garbage collection is the server's own write: a cache that already holds the dependent sees it"
        " go when the watch delivers the deletion, not at once (on a real cluster it is asynchronous anyway)"),
}
"""Where the cached KubeCluster differs from the contract on purpose; ``kube`` runs these tests live."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("make_cluster") == "kube-cached":
            mark = CACHED_DIFFERENCES.get(getattr(item, "originalname", item.name))
            if mark is not None:
                item.add_marker(mark)


@pytest.fixture
def clock() -> Clock:
    """The clock every cluster of a test reads; it moves only when a test advances it."""
    return Clock()


@pytest.fixture(params=["memory", "kube", "kube-cached"])
def make_cluster(request: pytest.FixtureRequest, clock: Clock, tmp_path: Path) -> Iterator[MakeCluster]:
    """Builds an empty cluster of the implementation under test, named as asked."""
    started: list[tuple[KubeCluster, Emulator]] = []

    def make(name: str) -> Cluster:
        if request.param == "memory":
            return MemoryCluster(name, clock=clock)
        emulator = Emulator(MemoryCluster(name, clock=clock), clock=clock)
        emulator.start()
        context = name or "management"
        cluster = kube_cluster_from_kubeconfig(name, emulator.kubeconfig(context), cache=request.param == "kube-cached",
                                               discovery_cache_dir=tmp_path / context)
        started.append((cluster, emulator))
        return cluster

    yield make
    for cluster, emulator in started:
        cluster.stop()
        emulator.stop()


@pytest.fixture
def bare(make_cluster: MakeCluster) -> Cluster:
    """The management cluster with no CRD installed."""
    return make_cluster("")


@pytest.fixture
def cluster(bare: Cluster) -> Cluster:
    """The management cluster with the Widget and Gadget CRDs installed."""
    bare.create(WIDGET_CRD)
    bare.create(GADGET_CRD)
    return bare


@pytest.fixture
def clusters(make_cluster: MakeCluster) -> tuple[Cluster, Cluster]:
    """The management cluster and a target cluster "edge-1", each with the CRDs installed."""
    pair = (make_cluster(""), make_cluster("edge-1"))
    for one in pair:
        one.create(WIDGET_CRD)
        one.create(GADGET_CRD)
    return pair
