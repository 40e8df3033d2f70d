"""The watches an order kind needs open with its first order, not at start (decision 45), counted over HTTP.

An in-process operator (the real rules, a KubeCluster over HTTP to the emulated management cluster) starts on a
cluster with no order: it watches the order kinds only. The first KeystoneUser opens KeystoneUser's other watches
(its children's kinds, its label scope of Secrets, the kinds its rules watch) and no RabbitMQVhost one; the order
converges, and a later event on one of those watches (its delivered Secret deleted) is repaired. The first
RabbitMQVhost then opens the topology kinds' watches and converges too. A later order of either kind opens nothing more.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from integration_kit import API, TENANT, World, condition, get, operator_in_process, order, wait_for

from engine.cluster.kube import KubeCluster, kube_cluster_from_kubeconfig

KEYSTONE_LABEL = "c5c3.io/keystoneuser-name"
VHOST_LABEL = "c5c3.io/rabbitmqvhost-name"


def resource(path: str) -> str:
    """``secrets`` or ``users.openstack.k-orc.cloud``: the resource a collection path names."""
    parts = path.strip("/").split("/")
    group = parts[1] if parts[0] == "apis" else ""
    return f"{parts[-1]}.{group}" if group else parts[-1]


class Watches:
    """Every watch the management client opens: (resource, label selector)."""

    def __init__(self, cluster: KubeCluster) -> None:
        self._opened: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        rest: Any = cluster.api_client.rest_client
        original = rest.request

        def recorded(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            parts = urlsplit(url)
            query = parse_qs(parts.query)
            if query.get("watch") == ["true"]:
                with self._lock:
                    self._opened.append((resource(parts.path), query.get("labelSelector", [""])[0]))
            return original(method, url, *args, **kwargs)

        rest.request = recorded

    def kinds(self) -> set[tuple[str, str]]:
        """(resource, label selector) of every watch opened so far (a renewed watch counts once)."""
        with self._lock:
            return set(self._opened)


@pytest.fixture(scope="module")
def watches(world: World) -> Iterator[Watches]:
    management = kube_cluster_from_kubeconfig("", world.kubeconfig, context="management")
    recorded = Watches(management)
    with operator_in_process(management):
        yield recorded


def ready(world: World, kind: str, name: str) -> bool:
    return condition(get(world.management, API, kind, TENANT, name), "Ready") == "True"


def test_the_watches_of_an_order_kind_open_with_its_first_order(world: World, watches: Watches) -> None:
    # Ready, with no order anywhere: the order kinds alone are watched.
    assert watches.kinds() == {("keystoneusers.c5c3.io", ""), ("rabbitmqvhosts.c5c3.io", "")}

    world.management.create(order("KeystoneUser", "first"))
    wait_for(lambda: ready(world, "KeystoneUser", "first"), message="KeystoneUser first Ready")
    opened = watches.kinds()
    # Its children's kinds, the Secrets of its label scope, the ControlPlanes (the fan-out), the kinds it watches.
    assert {("users.openstack.k-orc.cloud", ""), ("pushsecrets.external-secrets.io", ""), ("secrets", KEYSTONE_LABEL),
            ("controlplanes.c5c3.io", ""), ("keystoneroleassignments.c5c3.io", ""),
            ("keystoneapplicationcredentials.c5c3.io", "")} <= opened
    # Nothing only a RabbitMQVhost needs.
    assert ("secrets", VHOST_LABEL) not in opened
    assert [watched for watched, _ in opened if watched.endswith(".rabbitmq.com")] == []

    # An event on a watch opened on demand wakes the order: its deleted delivered Secret is delivered again.
    world.management.delete("v1", "Secret", TENANT, "first-credentials")
    wait_for(lambda: get(world.management, "v1", "Secret", TENANT, "first-credentials") is not None,
             message="the delivered Secret of KeystoneUser first delivered again")

    world.management.create(order("RabbitMQVhost", "bus"))
    wait_for(lambda: ready(world, "RabbitMQVhost", "bus"), message="RabbitMQVhost bus Ready")
    opened = watches.kinds()
    assert {("vhosts.rabbitmq.com", ""), ("users.rabbitmq.com", ""), ("permissions.rabbitmq.com", ""),
            ("secrets", VHOST_LABEL)} <= opened


    # A later order of a kind already served opens nothing more.
    world.management.create(order("KeystoneUser", "second"))
    wait_for(lambda: ready(world, "KeystoneUser", "second"), message="KeystoneUser second Ready")
    assert watches.kinds() == opened
