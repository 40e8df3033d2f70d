"""The operator held to the RBAC it ships, on real API servers: the ServiceAccount of deploy/operator/rbac.yaml on
the management cluster and of deploy/target-cluster/rbac.yaml on a target cluster (``integration_kit``: every
real world runs the operator so). Two ``engine run --sharded`` replicas (membership Leases, leader election)
take orders of both kinds on both clusters through their whole life: Ready and delivered, a password rotation
asked in the spec (the superseded generation removed), deletion down to nothing, and a graceful stop that gives
the Leases up; a refused order on the target cluster gets its Warning Event there. No request of theirs is
forbidden."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from integration_kit import (
    API,
    TENANT,
    OperatorProcess,
    Target,
    World,
    condition,
    example,
    get,
    order,
    secret_value,
    wait_for,
)

from engine.cluster.api import Cluster, Obj
from engine.cluster.patches import json_copy

pytestmark = pytest.mark.only_on("real", reason="only a real API server authorizes; the emulators grant every request")

KINDS = ("KeystoneUser", "RabbitMQVhost")
SHARDED = ("--sharded", "--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "4s",
           "--leader-elect-retry-period", "500ms")
PATIENCE = 90.0
LEASES = ("coordination.k8s.io/v1", "Lease", "c5c3-system")


@pytest.fixture(scope="module")
def edge1(world: World) -> Target:
    target = world.target("edge-1")
    world.register(target)
    return target


@pytest.fixture(scope="module")
def replicas(world: World, edge1: Target) -> Iterator[list[OperatorProcess]]:
    started = [OperatorProcess(world, *SHARDED, name=f"rbac-{n}") for n in range(2)]
    try:
        for process in started:
            process.wait_ready()
        yield started
    finally:  # also when one failed to start
        for process in started:
            if process.process.poll() is None:
                process.stop()


def status(cluster: Cluster, kind: str, name: str) -> Obj:
    return (get(cluster, API, kind, TENANT, name) or {}).get("status") or {}


def ready_at(cluster: Cluster, kind: str, name: str, generation: int) -> bool:
    """Ready, holding that password generation."""
    found = get(cluster, API, kind, TENANT, name)
    return condition(found, "Ready") == "True" and status(cluster, kind, name).get("passwordGeneration") == generation


def password(cluster: Cluster, name: str) -> str | None:
    return secret_value(get(cluster, "v1", "Secret", TENANT, f"{name}-credentials"), "password")


def children(world: World, kind: str, name: str, cluster: str) -> list[str]:
    """Everything in the ControlPlane's namespace labelled as that order's child."""
    prefix = f"c5c3.io/{kind.lower()}"
    labels = {f"{prefix}-name": name, f"{prefix}-namespace": TENANT, f"{prefix}-cluster": cluster}
    found = []
    for api_version, child in (("v1", "Secret"), ("openstack.k-orc.cloud/v1alpha1", "User"),
                               ("external-secrets.io/v1alpha1", "PushSecret"), ("rabbitmq.com/v1beta1", "Vhost"),
                               ("rabbitmq.com/v1beta1", "User"), ("rabbitmq.com/v1beta1", "Permission")):
        found += [f"{child} {o['metadata']['name']}" for o in world.management.list(
            api_version, child, "openstack", labels=labels).items]
    return found


def test_both_kinds_live_their_whole_life_on_both_clusters_as_the_service_account(
        world: World, edge1: Target, replicas: list[OperatorProcess]) -> None:
    clusters = {"": world.management, "edge-1": edge1.cluster}
    orders = []
    for cluster_name, cluster in clusters.items():
        for kind in KINDS:
            made = example(kind, cluster_name)
            if kind == "RabbitMQVhost":  # the superseded user goes as soon as the new one is delivered
                made["spec"]["rotation"] = {"gracePeriod": "0s"}
            cluster.create(made)
            orders.append((cluster_name, cluster, kind, made["metadata"]["name"]))

    # An order on the target cluster naming a ControlPlane that does not exist: refused (as not assigned, which
    # is how a target cluster sees a missing ControlPlane), its Warning Event written there.
    refused = order("KeystoneUser", "refused")
    refused["spec"]["controlPlaneRef"] = {"name": "missing", "namespace": "openstack"}
    edge1.cluster.create(refused)
    wait_for(lambda: [e for e in edge1.cluster.list("events.k8s.io/v1", "Event", TENANT).items
                      if e["regarding"]["name"] == "refused" and e["reason"] == "NamespaceNotAssigned"],
             timeout=PATIENCE, message="a Warning Event on the refused order on edge-1")
    edge1.cluster.delete(API, "KeystoneUser", TENANT, "refused")

    first = {}
    for cluster_name, cluster, kind, name in orders:
        wait_for(lambda c=cluster, k=kind, n=name: ready_at(c, k, n, 1), timeout=PATIENCE,
                 message=f"{kind} {name} on {cluster_name!r} Ready")
        first[(cluster_name, name)] = password(cluster, name)
        assert first[(cluster_name, name)], f"{kind} {name} on {cluster_name!r}: no password delivered"

    for cluster_name, _, kind, name in orders:
        assert [child for child in children(world, kind, name, cluster_name) if child.endswith("-v1")], \
            f"{kind} {name} on {cluster_name!r}: no child of generation 1"

    # A rotation asked in the spec: a new password delivered, the superseded generation removed.
    for _, cluster, kind, name in orders:
        raised = json_copy(cluster.get(API, kind, TENANT, name))
        raised["spec"]["passwordGeneration"] = 2
        cluster.update(raised)
    for cluster_name, cluster, kind, name in orders:
        wait_for(lambda c=cluster, k=kind, n=name: ready_at(c, k, n, 2), timeout=PATIENCE,
                 message=f"{kind} {name} on {cluster_name!r} rotated to generation 2")
        wait_for(lambda c=cluster, n=name, k=(cluster_name, name): password(c, n) not in (None, first[k]),
                 timeout=PATIENCE, message=f"{kind} {name} on {cluster_name!r}: the new password delivered")
    for cluster_name, _, kind, name in orders:
        wait_for(lambda k=kind, n=name, c=cluster_name: not [
            child for child in children(world, k, n, c) if child.endswith("-v1")], timeout=PATIENCE,
            message=f"{kind} {name} on {cluster_name!r}: generation 1 removed")

    # Deleted: down to nothing, on both clusters.
    for _, cluster, kind, name in orders:
        cluster.delete(API, kind, TENANT, name)
    for cluster_name, cluster, kind, name in orders:
        wait_for(lambda c=cluster, k=kind, n=name: get(c, API, k, TENANT, n) is None, timeout=PATIENCE,
                 message=f"{kind} {name} on {cluster_name!r} gone")
        assert children(world, kind, name, cluster_name) == []
        assert get(cluster, "v1", "Secret", TENANT, f"{name}-credentials") is None

    # A graceful stop gives the membership Leases up.
    members = {lease["metadata"]["name"] for lease in world.management.list(*LEASES).items}
    for process in replicas:
        assert process.stop() == 0, process.logs()[-3000:]
    left = {lease["metadata"]["name"] for lease in world.management.list(*LEASES).items}
    assert len(members - left) == 2, f"membership Leases left behind: {sorted(left)}"
    for server in (world.server, edge1.server):  # the servers' audit logs hold the operator's requests
        assert len(server.requests.records()) > 100
    assert world.forbidden() == []
