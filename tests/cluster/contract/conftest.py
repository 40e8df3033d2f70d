"""The contract suite runs against every Cluster implementation through the interface only.

``memory`` is the in-process cluster. ``kube`` is a KubeCluster (the official client) talking
HTTP to an emulator that serves a MemoryCluster, every read live; ``kube-cached`` is the same
with its informer cache on, as the operator runs it. ``real`` and ``real-cached`` are the same
KubeCluster on a real kube-apiserver (``real_servers``): the reference the others are held to.
Tests never reach into an implementation: on the emulators CRDs are installed through
``cluster.create`` and nothing is seeded; the real servers are shared and put back to their first
state before each test.

What the emulators (memory cluster, HTTP emulator) keep different from the real server on purpose
(``differences.KEPT_DIFFERENCES`` holds the reasons; each is asserted through ``differs`` or ``settled``):

| difference                      | kept by                   | what differs                                         |
|---------------------------------|---------------------------|------------------------------------------------------|
| namespace-lifecycle             | memory, kube, kube-cached | a write needs no Namespace; a deleted one goes at    |
|                                 |                           | once and its objects stay                            |
| asynchronous-garbage-collection | memory, kube              | dependents go in the owner's delete, not moments     |
|                                 |                           | later (kube-cached sees it later, as on a real one)  |
| asynchronous-crd                | memory, kube, kube-cached | a CRD's kind is served, changed and dropped in the   |
|                                 |                           | CRD's write, not moments later                       |

Built-in kinds are decoded, defaulted and encoded as their Go types (offline/cluster/builtin; tests/differential
compares them with a real server request by request). Beyond what the Cluster interface reaches (so not asserted
here): no paging (``limit`` is ignored, a list
answers every item), no webhook conversion (every served version reads the stored object, as the API
server's ``None`` strategy), and the watch log is compacted by count (10000 events), not by time.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from contract_kit import GADGET_CRD, WIDGET_CRD, Clock, RealClock, Settled, eventually
from differences import KEPT_DIFFERENCES
from real_servers import RealServers

from engine.cluster.api import Cluster
from engine.cluster.kube import KubeCluster, kube_cluster_from_kubeconfig
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator
from offline.realkube import KubeBinaries

MakeCluster = Callable[..., Cluster]
IMPLEMENTATIONS = ["memory", "kube", "kube-cached", "real", "real-cached"]
REAL = {"real", "real-cached"}
CACHED = {"kube-cached", "real-cached"}
SETTLE_PATIENCE = 30.0
"""Seconds a real server's controllers (garbage collector, CRD establishment, discovery) get to act."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("make_cluster") in REAL:
            item.add_marker(pytest.mark.real_server)


@pytest.fixture(scope="package")
def real_servers(kube_binaries: KubeBinaries) -> Iterator[RealServers]:
    """The suite's real servers, started on first use and stopped when the suite ends."""
    servers = RealServers(kube_binaries)
    yield servers
    servers.stop()


@pytest.fixture
def implementation(request: pytest.FixtureRequest) -> str:
    """The implementation the test runs on: one of IMPLEMENTATIONS."""
    callspec = getattr(request.node, "callspec", None)
    return str(callspec.params["make_cluster"]) if callspec is not None else "memory"


@pytest.fixture
def differs(implementation: str) -> Callable[[str], bool]:
    """``differs(name)``: whether the implementation under test keeps the listed difference ``name``."""

    def kept(name: str) -> bool:
        return implementation in KEPT_DIFFERENCES[name].kept_by

    return kept


@pytest.fixture
def settled(differs: Callable[[str], bool]) -> Settled:
    """``settled(difference, check, what)``: where the implementation keeps the difference (the server's own work
    done in the write), ``check()`` holds at once; elsewhere it holds within SETTLE_PATIENCE seconds."""

    def wait(name: str, check: Callable[[], bool], what: str) -> None:
        if differs(name):
            assert check(), f"not at once: {what}"
        else:
            eventually(check, what, SETTLE_PATIENCE)

    return wait


@pytest.fixture
def clock(implementation: str) -> Clock:
    """The clock every cluster of a test reads; on the emulators it moves only when a test advances it, a real
    server reads the wall clock (and an advance waits a little)."""
    return RealClock() if implementation in REAL else Clock()


@pytest.fixture(params=IMPLEMENTATIONS)
def make_cluster(request: pytest.FixtureRequest, clock: Clock, tmp_path: Path) -> Iterator[MakeCluster]:
    """Builds a cluster of the implementation under test, named as asked, with the suite's CRDs if asked."""
    started: list[tuple[KubeCluster, Emulator | None]] = []

    def make(name: str, *, crds: bool = True) -> Cluster:
        context = name or "management"
        made: Cluster
        if request.param in REAL:
            servers: RealServers = request.getfixturevalue("real_servers")
            shared = servers.get(context if crds else "bare")
            client = shared.client(name, cache=request.param in CACHED, discovery=tmp_path / context)
            started.append((client, None))
            return client
        if request.param == "memory":
            made = MemoryCluster(name, clock=clock)
        else:
            emulator = Emulator(MemoryCluster(name, clock=clock), clock=clock)
            emulator.start()
            made = kube_cluster_from_kubeconfig(name, emulator.kubeconfig(context), cache=request.param in CACHED,
                                                discovery_cache_dir=tmp_path / context)
            started.append((made, emulator))
        if crds:
            made.create(WIDGET_CRD)
            made.create(GADGET_CRD)
        return made

    yield make
    for cluster, emulator in started:
        cluster.stop()
        if emulator is not None:
            emulator.stop()


@pytest.fixture
def bare(make_cluster: MakeCluster) -> Cluster:
    """The management cluster with no CRD installed."""
    return make_cluster("", crds=False)


@pytest.fixture
def cluster(make_cluster: MakeCluster) -> Cluster:
    """The management cluster with the Widget and Gadget CRDs installed."""
    return make_cluster("")


@pytest.fixture
def clusters(make_cluster: MakeCluster) -> tuple[Cluster, Cluster]:
    """The management cluster and a target cluster "edge-1", each with the CRDs installed."""
    return make_cluster(""), make_cluster("edge-1")
