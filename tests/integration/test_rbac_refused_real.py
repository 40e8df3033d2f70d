"""A right taken out of the operator's ClusterRole on a real API server: what a user sees.

- A write it lacks (``create`` of RabbitMQ Vhosts): the order's step condition says so with the server's words
  (which verb, which resource, which namespace), a Warning Event on the order repeats it, a warning log line too; an
  order of the other kind goes Ready meanwhile; and once the right is given back the order goes Ready without a
  restart.
- A watch it lacks (``watch`` of K-ORC Users, while it may still list them): a warning log line names the refused
  watch at start.

Each time the server refuses the operator that one right and no other (its audit log)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from integration_kit import API, TENANT, OperatorProcess, World, condition, get, order, wait_for

from engine.cluster.api import Obj
from engine.cluster.patches import json_copy

pytestmark = pytest.mark.only_on("real", reason="only a real API server authorizes; the emulators grant every request")

ROLE = ("rbac.authorization.k8s.io/v1", "ClusterRole", None, "c5c3-operator")
DENIED = 'User \\"system:serviceaccount:c5c3-system:c5c3-operator\\" cannot'
"""How a refusal reads in a JSON log line (the server's message quotes the user)."""
HEAL_PATIENCE = 120.0
"""Seconds the refused order may take to go Ready once granted: its retries back off (doubling from 5 ms), so the
next one comes about as long after the grant as the order had been refused."""


@contextlib.contextmanager
def without(world: World, group: str, resource: str, verb: str) -> Iterator[None]:
    """The operator's ClusterRole without one verb on one resource until the block ends (as an admin edits it)."""
    world.forbidden_expected = True
    role = json_copy(world.management.get(*ROLE))
    rule = next(r for r in role["rules"] if r["apiGroups"] == [group] and r["resources"] == [resource])
    assert verb in rule["verbs"], f"the shipped ClusterRole does not grant {verb} on {resource}.{group}"
    rule["verbs"].remove(verb)
    world.management.update(role)
    try:
        yield
    finally:
        restored = json_copy(world.management.get(*ROLE))
        next(r for r in restored["rules"] if r["resources"] == [resource] and r["apiGroups"] == [group])[
            "verbs"].append(verb)
        world.management.update(restored)


def refused(world: World) -> set[str]:
    """The resources (path without the query) the servers refused the operator."""
    return {line.partition("?")[0] for line in world.forbidden()}


def warnings(operator: OperatorProcess, text: str) -> list[str]:
    """The operator's warning log lines that hold ``text``."""
    return [line for line in operator.logs().splitlines() if '"level": "warning"' in line and text in line]


def events_on(world: World, name: str) -> list[Obj]:
    found = world.management.list("events.k8s.io/v1", "Event", TENANT).items
    return [e for e in found if e["regarding"].get("name") == name and e["type"] == "Warning"]


def test_a_write_it_may_not_make_is_on_the_order_and_heals_once_granted(world: World) -> None:
    with without(world, "rabbitmq.com", "vhosts", "create"):
        operator = OperatorProcess(world, name="without-create")
        operator.wait_ready()
        world.management.create(order("RabbitMQVhost", "denied"))
        world.management.create(order("KeystoneUser", "allowed"))

        def vhost_condition() -> Obj | None:
            conditions = ((get(world.management, API, "RabbitMQVhost", TENANT, "denied") or {}).get("status") or {}
                          ).get("conditions") or ()
            return next((c for c in conditions if c["type"] == "VhostReady" and c["status"] == "False"
                         and c["reason"] == "VhostError"), None)

        vhost = wait_for(vhost_condition, message="VhostReady False with the refusal")
        assert 'cannot create resource "vhosts" in API group "rabbitmq.com" in the namespace "openstack"' in \
            vhost["message"], vhost["message"]
        assert condition(get(world.management, API, "RabbitMQVhost", TENANT, "denied"), "Ready") == "False"
        (event,) = wait_for(lambda: events_on(world, "denied"), message="a Warning Event on the order")
        assert event["reason"] == "VhostError" and 'cannot create resource "vhosts"' in event["note"]
        logged = f'{DENIED} create resource \\"vhosts\\" in API group \\"rabbitmq.com\\"'
        wait_for(lambda: warnings(operator, logged), message="a warning naming the refused create")
        wait_for(lambda: condition(get(world.management, API, "KeystoneUser", TENANT, "allowed"), "Ready") == "True",
                 message="the other kind's order Ready")
        vhosts = "management: PATCH /apis/rabbitmq.com/v1beta1/namespaces/openstack/vhosts/denied-"
        assert refused(world) and all(path.startswith(vhosts) for path in refused(world)), refused(world)
    wait_for(lambda: condition(get(world.management, API, "RabbitMQVhost", TENANT, "denied"), "Ready") == "True",
             timeout=HEAL_PATIENCE, message="the order Ready once the right is back")
    assert operator.stop() == 0


def test_a_watch_it_may_not_open_is_a_warning_at_start(world: World) -> None:
    before = refused(world)
    with without(world, "openstack.k-orc.cloud", "users", "watch"):
        operator = OperatorProcess(world, name="without-watch")
        operator.wait_ready()
        world.management.create(order("KeystoneUser", "unwatched"))  # its first order opens the kind's watches
        line = f'{DENIED} watch resource \\"users\\" in API group \\"openstack.k-orc.cloud\\" at the cluster scope'
        (warning, *_) = wait_for(lambda: warnings(operator, line), message="a warning naming the refused watch")
        assert "<Informer User.openstack.k-orc.cloud/v1alpha1 on the management cluster>" in warning
        assert refused(world) - before == {"management: GET /apis/openstack.k-orc.cloud/v1alpha1/users"}
        assert operator.stop() == 0
