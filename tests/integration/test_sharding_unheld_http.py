"""What a shard member's caches do not hold: another member's children (decision 0075).

A member watches the children it stamped and the objects no member stamped, never another member's. So a child it
is about to write and does not find may exist stamped by another member; its first write is an apply conditional on
the name being free: it creates the child as one replica's apply does (the field manager's Apply entry, no Update
entry), and where the name is taken the server answers Conflict and the object is read and tested, as one replica
tests the object its cache shows. A RabbitMQVhost order beside them has its Topology Operator children written
the same way. Run against the emulator and a real kube-apiserver alike."""

from __future__ import annotations

import hashlib
import time

from integration_kit import API, TENANT, World, condition, example, get, order, wait_for
from test_sharding_cost_http import MEMBER_AGENT, classify
from test_sharding_http import PATIENCE, SHARD, three_replicas

FIELD_MANAGER = "cobaltcore-operator"
"""The KeystoneUser rules' field manager (rules/keystoneuser.yaml)."""


def prefix(name: str) -> str:
    """The name prefix of an order's children (rules/keystoneuser.yaml)."""
    return f"{name}-{hashlib.sha256(f'/{TENANT}/{name}'.encode()).hexdigest()[:8]}-user-"


def delivery_message(world: World, name: str) -> str:
    """The order's DeliveryReady message ("" before it has one)."""
    found = get(world.management, API, "KeystoneUser", TENANT, name) or {}
    return next((str(c.get("message")) for c in (found.get("status") or {}).get("conditions") or ()
                 if c.get("type") == "DeliveryReady"), "")


def test_a_child_name_another_member_stamped_is_refused_untouched_and_ours_are_created_by_apply(
        world: World) -> None:
    taken = prefix("unheld-taken") + "source"
    theirs = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": taken, "namespace": "openstack",
                           "labels": {SHARD: "elsewhere", "c5c3.io/keystoneuser-name": "another-order",
                                      "c5c3.io/keystoneuser-namespace": TENANT, "c5c3.io/keystoneuser-cluster": ""}},
              "stringData": {"clouds.yaml": "kept"}}
    world.management.create(theirs)
    stored = get(world.management, "v1", "Secret", "openstack", taken)
    assert stored is not None
    vhost = example("RabbitMQVhost")
    with three_replicas(world, "unheld"):
        since = time.time()
        for name in ("unheld-taken", "unheld-free"):
            world.management.create(order("KeystoneUser", name))
        world.management.create(vhost)  # its Topology Operator children are first written the same way
        for kind, name in (("KeystoneUser", "unheld-free"), ("RabbitMQVhost", vhost["metadata"]["name"])):
            wait_for(lambda kind=kind, name=name: condition(get(world.management, API, kind, TENANT, name),
                                                            "Ready") == "True",
                     timeout=PATIENCE, message=f"{kind} {name} Ready")
        refusal = f"refusing to adopt pre-existing Secret openstack/{taken}"
        wait_for(lambda: refusal in delivery_message(world, "unheld-taken"), timeout=PATIENCE,
                 message="the taken order refused")
        records = [r for r in world.server.requests.records()
                   if r.wall_started >= since and MEMBER_AGENT.search(r.user_agent)]
    kept = get(world.management, "v1", "Secret", "openstack", taken)
    assert kept is not None and kept["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert kept["metadata"]["labels"][SHARD] == "elsewhere"
    # Its first write: the conditional apply, answered Conflict, then the one read of it (each pass of the order).
    touched = [(classify(r)[0], r.code) for r in records if classify(r)[2] == taken]
    assert touched and set(touched) == {("PATCH", 409), ("GET", 200)}, touched
    assert touched.count(("PATCH", 409)) == touched.count(("GET", 200)), touched
    # The free order's children were created by the member's apply: its Apply entry alone, as one replica's.
    free = prefix("unheld-free")
    for api_version, kind, name in (("v1", "Secret", f"{free}source"),
                                    ("external-secrets.io/v1alpha1", "PushSecret", f"{free}backup")):
        child = get(world.management, api_version, kind, "openstack", name)
        assert child is not None, name
        ours = {entry.get("operation") for entry in child["metadata"].get("managedFields") or ()
                if entry.get("manager") == FIELD_MANAGER}
        assert ours == {"Apply"}, (name, child["metadata"].get("managedFields"))
        assert child["metadata"]["labels"][SHARD] != "elsewhere"
