"""The world's seeding on a real API server (``simulators.real_world.seed``): an object's status is stored too,
though the server drops the status of a create where it keeps status apart (a status subresource)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from integration_kit import WORLD, ServerPool

from engine.cluster.api import Obj
from engine.cluster.kube import KubeCluster
from offline.realkube import KubeServer
from simulators import real_world

CP = ("c5c3.io/v1alpha1", "ControlPlane", "openstack", "cp")


@pytest.fixture(scope="module")
def server(server_pool: ServerPool) -> Iterator[KubeServer]:
    taken = server_pool.take()
    yield taken
    server_pool.give_back(taken)


@pytest.fixture(scope="module")
def live(server: KubeServer) -> Iterator[KubeCluster]:
    """A client of the server, as the world's user."""
    client = real_world.client("", server.kubeconfig("real", user=WORLD), cache=False)
    yield client
    client.stop()


def control_plane() -> Obj:
    return {"apiVersion": CP[0], "kind": CP[1], "metadata": {"name": CP[3], "namespace": CP[2]},
            "spec": {"namespaceAssignments": [{"namespace": "tenant-a"}]},
            "status": {"conditions": [{"type": "AdminCredentialReady", "status": "True", "reason": "Seeded",
                                       "message": "seeded", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


def test_seed_stores_the_status_a_create_drops(live: KubeCluster) -> None:
    real_world.seed(live, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CP[2]}})
    seeded = real_world.seed(live, control_plane())
    assert seeded["status"]["conditions"][0]["status"] == "True"
    assert live.get(*CP)["status"] == control_plane()["status"]
    assert live.get(*CP)["spec"] == control_plane()["spec"]
