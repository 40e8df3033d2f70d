"""Secret scope: the operator holds only Secrets carrying an order's ownership labels.

An in-process operator (the real rules, a KubeCluster over HTTP to the emulated management
cluster) serves orders of both kinds while the cluster holds many unrelated Secrets, some
written before it starts and some after. Its caches (the KubeCluster's informer stores and the
runtime's watch caches) must hold none of them; the unlabelled Secrets the rules need (the
RabbitMQ default-user Secret) are read from the server by name, so the orders still go Ready.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from integration_kit import API, TENANT, World, condition, get, operator_in_process, order, wait_for

from engine.cluster.api import Obj
from engine.cluster.kube import KubeCluster, kube_cluster_from_kubeconfig
from engine.cluster.kube.store import key_of
from engine.cluster.selectors import EVERYTHING, FieldSelector
from engine.operator import Operator

UNRELATED = 40
"""Unrelated Secrets written before the operator starts, and again after it is ready."""

OWNERSHIP = ("c5c3.io/keystoneuser-name", "c5c3.io/rabbitmqvhost-name")


def unrelated(name: str, namespace: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "data": {"blob": base64.b64encode(b"x" * 1024).decode()}}


@pytest.fixture(scope="module")
def operator(world: World) -> Iterator[tuple[Operator, KubeCluster]]:
    for i in range(UNRELATED):
        world.management.create(unrelated(f"before-{i}", ("openstack", TENANT)[i % 2]))
    management = kube_cluster_from_kubeconfig("", world.kubeconfig, context="management")
    with operator_in_process(management) as running:
        yield running, management


def held_secrets(running: Operator, management: KubeCluster) -> set[tuple[str, str]]:
    """Every Secret any cache of the operator holds: the KubeCluster's stores and the runtime's watch caches."""
    held: set[tuple[str, str]] = set()
    for informer in management.informers():
        if informer.name.startswith("Secret."):
            held |= {key_of(obj) for obj in informer.store.select(None, EVERYTHING, FieldSelector())[0]}
    for source in running.manager.sources.informers():
        if source.kind == "Secret":
            held |= set(source.cached())
    return held


def test_orders_go_ready_and_no_unrelated_secret_is_held(world: World,
                                                         operator: tuple[Operator, KubeCluster]) -> None:
    running, management = operator
    for kind, name in (("KeystoneUser", "scoped-user"), ("RabbitMQVhost", "scoped-vhost")):
        world.management.create(order(kind, name))
    for i in range(UNRELATED):
        world.management.create(unrelated(f"after-{i}", ("openstack", TENANT)[i % 2]))
    for kind, name in (("KeystoneUser", "scoped-user"), ("RabbitMQVhost", "scoped-vhost")):
        wait_for(lambda k=kind, n=name: condition(get(world.management, API, k, TENANT, n), "Ready") == "True",
                 message=f"{kind} {name} Ready")
    delivered = {(TENANT, "scoped-user-credentials"), (TENANT, "scoped-vhost-credentials")}
    # The caches follow the watch: a delivered Secret's event may land just after its order's Ready.
    held = wait_for(lambda: (h := held_secrets(running, management)) >= delivered and h,
                    message="the delivered Secrets in the operator's caches")
    assert not {name for _, name in held if name.startswith(("before-", "after-"))}
    for namespace, name in held:
        secret = get(world.management, "v1", "Secret", namespace, name)
        labels = ((secret or {}).get("metadata") or {}).get("labels") or {}
        assert secret is None or any(key in labels for key in OWNERSHIP), f"{namespace}/{name} is unlabelled"
