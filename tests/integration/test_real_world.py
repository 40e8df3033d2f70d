"""The world's parts on a real API server (``simulators.real_world``): ``seed`` stores an object's status where
the server keeps status apart, and the simulated controllers' cached client reads its own writes at once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from integration_kit import WORLD, ServerPool

from engine.cluster.api import Obj
from engine.cluster.kube import KubeCluster
from engine.testing.realkube import KubeServer
from simulators import real_world

CP = ("c5c3.io/v1alpha1", "ControlPlane", "openstack", "cp")


@pytest.fixture(scope="module")
def server(server_pool: ServerPool) -> Iterator[KubeServer]:
    taken = server_pool.take()
    yield taken
    server_pool.give_back(taken)


@pytest.fixture(scope="module")
def clients(server: KubeServer) -> Iterator[tuple[KubeCluster, KubeCluster]]:
    """A live client and a cached one of the server, as the world's user."""
    config = server.kubeconfig("real", user=WORLD)
    live, cached = real_world.client("", config, cache=False), real_world.client("", config, cache=True)
    yield live, cached
    live.stop()
    cached.stop()


@pytest.fixture(scope="module")
def seeded(clients: tuple[KubeCluster, KubeCluster]) -> Obj:
    """ControlPlane openstack/cp seeded with its status; what ``seed`` answered."""
    live, _ = clients
    real_world.seed(live, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CP[2]}})
    return real_world.seed(live, control_plane("True"))


def control_plane(ready: str) -> Obj:
    return {"apiVersion": CP[0], "kind": CP[1], "metadata": {"name": CP[3], "namespace": CP[2]},
            "spec": {"namespaceAssignments": [{"namespace": "tenant-a"}]},
            "status": {"conditions": [{"type": "AdminCredentialReady", "status": ready, "reason": "Seeded",
                                       "message": "seeded", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


def test_seed_stores_the_status_a_create_drops(clients: tuple[KubeCluster, KubeCluster], seeded: Obj) -> None:
    live, _ = clients
    assert seeded["status"]["conditions"][0]["status"] == "True"
    assert live.get(*CP)["status"] == control_plane("True")["status"]
    assert live.get(*CP)["spec"] == control_plane("True")["spec"]


def test_the_cached_client_reads_each_of_its_writes_at_once(clients: tuple[KubeCluster, KubeCluster],
                                                            seeded: Obj) -> None:
    _, cached = clients
    lab = real_world.ReadsItsWrites(cached, cluster_name="")
    assert lab.list(CP[0], CP[1]).items  # the cache of ControlPlanes, filled
    for round_ in range(20):
        message = f"round {round_}"
        status = {"conditions": [{**control_plane("True")["status"]["conditions"][0], "message": message}]}
        written = lab.patch(*CP, {"status": status}, status=True)
        read = lab.get(*CP)
        assert read["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"], round_
        assert read["status"]["conditions"][0]["message"] == message
