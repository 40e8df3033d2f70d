"""Orders their CRD would refuse, over HTTP, under a KeystoneUser CRD that checks neither the spec nor the name (an
earlier or hand-edited one): the operator refuses them with InvalidSpec, and one of 64 characters that an earlier
version gave the finalizer is torn down and released. Its children are listed through the client's caches with
the name only required to be present in the selector; a real API server refuses the selector that names it.

The module's world has the loosened CRD for its whole life (it is the module's own)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import pytest
from integration_kit import API, TENANT, OperatorProcess, World, get, order, wait_for

from engine.cluster.api import Invalid, NotFound

CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "keystoneusers.c5c3.io")
LONG = "billing-service-account-for-the-nightly-reconciliation-jobs-of-x"
HELD = LONG + "y"
"""65 characters, carrying the finalizer as an earlier operator version gave it."""


def loosen(world: World) -> None:
    """The KeystoneUser CRD without a check of its spec or name; waits until the server admits a long name."""
    crd = copy.deepcopy(world.management.get(*CRD))
    for version in crd["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        schema["properties"]["spec"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        schema.pop("x-kubernetes-validations", None)
    world.management.update(crd)

    def admitted() -> bool:
        probe = order("KeystoneUser", LONG[:-1] + "p")
        try:
            world.management.create(probe)
        except Invalid:
            return False
        world.management.delete(API, "KeystoneUser", TENANT, probe["metadata"]["name"])
        return True
    wait_for(admitted, message="the loosened CRD to admit a name of 64 characters")


@pytest.fixture(scope="module")
def operator(world: World) -> Iterator[OperatorProcess]:
    loosen(world)
    world.management.create(order("KeystoneUser", LONG))
    held = order("KeystoneUser", HELD)
    held["metadata"]["finalizers"] = ["c5c3.io/keystoneuser-teardown"]
    world.management.create(held)
    world.management.create(order("KeystoneUser", "abc", passwordGeneration="abc"))
    process = OperatorProcess(world, name="past-crd-operator")
    process.wait_ready()
    yield process
    assert process.stop() == 0, process.logs()[-3000:]


def user_ready(world: World, name: str) -> tuple[str | None, str | None, str | None]:
    found = get(world.management, API, "KeystoneUser", TENANT, name) or {}
    for cond in (found.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "UserReady":
            return cond.get("status"), cond.get("reason"), cond.get("message")
    return None, None, None


def test_orders_the_crd_would_refuse_are_invalid_spec(world: World, operator: OperatorProcess) -> None:
    """The long names and the string generation: InvalidSpec, what is wrong in the message, no finalizer added."""
    for name, text in ((LONG, "metadata.name must be at most 63 bytes (it has 64)"),
                       (HELD, "metadata.name must be at most 63 bytes (it has 65)"),
                       ("abc", "spec.passwordGeneration must be an integer of at least 1 (it is a string)")):
        wait_for(lambda n=name: user_ready(world, n)[:2] == ("False", "InvalidSpec"),
                 message=f"{name} InvalidSpec\n{operator.logs()[-3000:]}")
        assert text in str(user_ready(world, name)[2])
    found = get(world.management, API, "KeystoneUser", TENANT, LONG)
    assert found is not None and not found["metadata"].get("finalizers")


def test_a_long_named_order_with_a_finalizer_is_torn_down_and_released(world: World,
                                                                        operator: OperatorProcess) -> None:
    """Deleted while its ControlPlane stands (a patient teardown), it goes; no list named it in a selector."""
    world.management.delete(API, "KeystoneUser", TENANT, HELD)

    def gone() -> bool:
        try:
            world.management.get(API, "KeystoneUser", TENANT, HELD)
        except NotFound:
            return True
        return False
    wait_for(gone, message=f"the long-named order released\n{operator.logs()[-3000:]}")
    lines = [json.loads(line) for line in operator.logs().splitlines() if line.startswith("{")]
    assert not [line for line in lines if "unable to parse requirement" in line.get("message", "")
                or "invalid label selector" in line.get("message", "")]
