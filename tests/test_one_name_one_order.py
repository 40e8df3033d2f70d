"""Two orders, one Keystone user name, against the simulated K-ORC and its Keystone (names unique per domain).

The real rules run in the real runtime on the in-memory cluster with a simulated clock; K-ORC and ESO
are the simulators of ``engine demo``. Both orders are created at the same instant and ask for the same
user (the second spells it in capitals: Keystone compares names case-insensitively).
"""

from __future__ import annotations

import copy
import io
from typing import Any

from engine.cluster.api import NotFound
from engine.cluster.patches import json_copy
from simulators import demo as story
from simulators import korc
from simulators.base import find_condition, react

OTHER = "tenant-z"


def _order(namespace: str, user_name: str) -> dict[str, Any]:
    order = copy.deepcopy(story.ORDER)
    order["metadata"]["namespace"] = namespace
    order["spec"]["userName"] = user_name
    return order


def _condition(demo: story.Demo, namespace: str, type_: str) -> dict[str, Any]:
    try:
        order = demo.cluster.get(story.API, story.KIND, namespace, story.NAME)
    except NotFound:
        return {}
    return find_condition(order, type_) or {}


def _world() -> story.Demo:
    demo = story.Demo(io.StringIO())
    demo.cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OTHER}})
    cp = json_copy(demo.cluster.get(story.API, "ControlPlane", story.CP_NAMESPACE, story.CP_NAME))
    cp["spec"]["namespaceAssignments"].append({"namespace": OTHER})
    demo.cluster.update(cp)
    demo.manager.start()
    demo.cluster.create(_order(story.NAMESPACE, "shared"))
    demo.cluster.create(_order(OTHER, "SHARED"))
    return demo


def test_one_order_holds_the_name_the_other_is_refused_then_proceeds_once_it_is_gone() -> None:
    demo = _world()
    demo.run(story.PATIENCE, until=lambda: _condition(demo, story.NAMESPACE, "Ready").get("status") == "True")
    demo.run(story.PATIENCE)

    refused = _condition(demo, OTHER, "UserReady")
    assert refused.get("reason") == "ServiceAccountCollision"
    assert f"is held by KeystoneUser {story.NAMESPACE}/{story.NAME} on the management cluster" in refused["message"]
    assert demo.korc.names() == {"shared": korc.user_id("shared")}
    assert _condition(demo, OTHER, "Ready").get("status") == "False"

    # The holder goes: its user goes with it, and the other order gets a user of its own.
    demo.cluster.delete(story.API, story.KIND, story.NAMESPACE, story.NAME)
    demo.run(story.PATIENCE, until=lambda: _condition(demo, OTHER, "Ready").get("status") == "True")
    assert demo.korc.names() == {"shared": korc.user_id("SHARED")}


def _managed_user(demo: story.Demo, name: str, user_name: str) -> None:
    """A managed User of that Keystone name in domain d, and its password Secret."""
    meta = {"name": name, "namespace": "openstack"}
    demo.cluster.create({"apiVersion": "v1", "kind": "Secret", "metadata": {**meta, "name": f"{name}-pw"},
                         "data": {"password": "cGFzc3dvcmQ="}})
    resource = {"name": user_name, "domainRef": "d", "passwordRef": f"{name}-pw"}
    credentials = {"secretName": "k-orc-clouds-yaml", "cloudName": "admin"}  # K-ORC's CRD requires them
    demo.cluster.create({"apiVersion": korc.API_VERSION, "kind": korc.KIND, "metadata": meta,
                         "spec": {"managementPolicy": "managed", "cloudCredentialsRef": credentials,
                                  "resource": resource}})


def test_the_simulated_keystone_refuses_a_second_user_of_one_name_in_a_domain() -> None:
    """Two managed Users of one name in one domain: the second is refused (409) and deleting it keeps the first."""
    demo = story.Demo(io.StringIO())
    sim = demo.korc
    for name, user_name in (("first", "svc"), ("second", "SVC")):
        _managed_user(demo, name, user_name)
        for _ in range(3):
            for reaction in sim.reactions():
                reaction.apply()
    second = demo.cluster.get(korc.API_VERSION, korc.KIND, "openstack", "second")
    progressing = find_condition(second, "Progressing") or {}
    assert progressing.get("reason") == "InvalidConfiguration"
    assert "Duplicate entry found with name SVC at domain ID d" in progressing.get("message", "")
    assert "id" not in (second.get("status") or {})
    assert sim.names() == {"svc": korc.user_id("svc")}

    demo.cluster.delete(korc.API_VERSION, korc.KIND, "openstack", "second")
    for reaction in sim.reactions():
        reaction.apply()
    assert sim.names() == {"svc": korc.user_id("svc")}


def test_two_users_of_one_name_seen_in_one_round_get_one_keystone_user() -> None:
    """Keystone checks the name as it creates a user: of two managed Users of one name that K-ORC sees at once
    (a busy controller's one round), one gets the user and the other is refused (409), without an id.

    Both used to be "created", the first then refused while keeping its id: an order whose User has an id holds
    its name, so it never learnt of the holder and stayed refused with "already exists" (the HTTP name race)."""
    demo = story.Demo(io.StringIO())
    sim = demo.korc
    for name, user_name in (("first", "svc"), ("second", "SVC")):
        _managed_user(demo, name, user_name)
    for _ in range(3):
        react([sim])
    users = {name: demo.cluster.get(korc.API_VERSION, korc.KIND, "openstack", name) for name in ("first", "second")}
    with_id = [name for name, user in users.items() if (user.get("status") or {}).get("id")]
    assert with_id == ["first"]
    assert sim.names() == {"svc": korc.user_id("svc")}
    progressing = find_condition(users["second"], "Progressing") or {}
    assert progressing.get("reason") == "InvalidConfiguration"
    assert "Duplicate entry found with name SVC at domain ID d" in progressing.get("message", "")
