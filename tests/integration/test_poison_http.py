"""A poison order over HTTP: a KeystoneUser stored without admission whose controlPlaneRef is a string.

Its index expression fails on every event about it. The threaded runtime logs that at error,
counts it, and moves on: the good orders stored and created beside it go Ready. The bad one cannot
be given the InvalidSpec condition its rules declare: the API server refuses every write of it,
status writes included, because controlPlaneRef's immutability rule cannot evaluate on a string and
an evaluation error is never ratcheted (a real server answers the same, tests/differential); the
runtime logs each refusal at warning and retries with backoff.

On the emulator the order is stored without admission. A real API server admits every write, so there such an
order is one stored under an earlier, looser CRD schema (``admitting_it``: the CRD loosened, then restored). The
operator starts once the schema refuses the order again, and the test of its refused status comes before the
one that changes the order (under the loosened schema again, when a real server would admit its status).
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator

import pytest
from integration_kit import API, TENANT, OperatorProcess, World, condition, get, order, wait_for

from engine.cluster.api import Invalid, Obj

CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "keystoneusers.c5c3.io")
PROBE = "schema-probe"


def bad_order(name: str, **labels: str) -> Obj:
    obj = order("KeystoneUser", name)
    obj["spec"]["controlPlaneRef"] = "cp"
    if labels:
        obj["metadata"]["labels"] = labels
    return obj


@contextlib.contextmanager
def admitting_it(world: World) -> Iterator[None]:
    """Within the block a poison order can be written: on the emulator it is stored without admission (``store``);
    on a real server the KeystoneUser CRD's controlPlaneRef takes anything until the block ends."""
    if world.backend == "emulator":
        yield
        return
    original = world.management.get(*CRD)
    loose = copy.deepcopy(original)
    for version in loose["spec"]["versions"]:
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec["properties"]["controlPlaneRef"] = {"x-kubernetes-preserve-unknown-fields": True}
    world.management.update(loose)
    try:  # the server applies a CRD's new schema within moments: a probe tells when
        wait_for(lambda: not refused(world), message="the loosened CRD to admit a string controlPlaneRef")
        yield
    finally:
        restored = copy.deepcopy(original)
        restored["metadata"]["resourceVersion"] = world.management.get(*CRD)["metadata"]["resourceVersion"]
        world.management.update(restored)
    wait_for(lambda: refused(world), message="the restored CRD to refuse a string controlPlaneRef")


def refused(world: World) -> bool:
    """Whether the KeystoneUser CRD in force refuses a string controlPlaneRef (a probe order, deleted at once)."""
    try:
        world.management.create(bad_order(PROBE))
    except Invalid:
        return True
    world.management.delete(API, "KeystoneUser", TENANT, PROBE)
    return False


def store(world: World, obj: Obj) -> None:
    """Store a poison order (create it, or change the labels of the one stored), within ``admitting_it``."""
    if world.backend == "emulator":
        world.seed(obj)
        return
    stored = get(world.management, API, "KeystoneUser", TENANT, obj["metadata"]["name"])
    if stored is None:
        world.management.create({key: value for key, value in obj.items() if key != "status"})
    else:
        world.management.patch(API, "KeystoneUser", TENANT, obj["metadata"]["name"],
                               {"metadata": {"labels": obj["metadata"].get("labels")}})


@pytest.fixture(scope="module")
def operator(world: World) -> Iterator[OperatorProcess]:
    with admitting_it(world):
        store(world, bad_order("poison"))
    world.management.create(order("KeystoneUser", "early"))
    process = OperatorProcess(world, name="poison-operator")
    process.wait_ready()
    yield process
    assert process.stop() == 0, process.logs()[-3000:]


def reason(world: World, kind: str, name: str, type_: str) -> str | None:
    for cond in ((get(world.management, API, kind, TENANT, name) or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return f"{cond.get('status')}/{cond.get('reason')}"
    return None


def test_the_poison_order_status_write_is_refused_and_retried(world: World, operator: OperatorProcess) -> None:
    """The InvalidSpec condition is written and refused as the API server refuses it; the poison order keeps no
    condition and the runtime retries."""
    def refusals() -> list[str]:
        lines = [json.loads(line) for line in operator.logs().splitlines() if line.startswith("{")]
        return [line["message"] for line in lines if line.get("level") == "warning"
                and f"{TENANT}/poison: updating status" in line.get("message", "")]
    found = wait_for(lambda: refusals()[1:] and refusals(),
                     message=f"the refused status writes\n{operator.logs()[-3000:]}")
    assert "spec.controlPlaneRef: Invalid value: \"object\": invalid data, expected a map" in found[0]
    assert "controlPlaneRef.name is immutable" in found[0]
    assert reason(world, "KeystoneUser", "poison", "UserReady") is None


def test_good_orders_beside_a_poison_order_go_ready(world: World, operator: OperatorProcess) -> None:
    """Orders of the poisoned kind, stored before and created after it (and after it changed), go Ready."""
    world.management.create(order("KeystoneUser", "late"))
    world.management.create(order("RabbitMQVhost", "beside"))
    poison = get(world.management, API, "KeystoneUser", TENANT, "poison")
    assert poison is not None
    with admitting_it(world):
        store(world, {**bad_order("poison", touched="yes"), "status": poison.get("status") or {}})
    world.management.create(order("KeystoneUser", "later"))
    for kind, name in (("KeystoneUser", "early"), ("KeystoneUser", "late"), ("RabbitMQVhost", "beside"),
                       ("KeystoneUser", "later")):
        wait_for(lambda k=kind, n=name: condition(get(world.management, API, k, TENANT, n), "Ready") == "True",
                 message=f"{kind} {name} Ready beside the poison order\n{operator.logs()[-3000:]}")


def test_the_skipped_events_are_logged_at_error_and_counted(operator: OperatorProcess) -> None:
    wait_for(lambda: (operator.metric('c5c3_operator_watch_event_errors_total{kind="KeystoneUser"}') or 0) >= 1,
             message="the watch event errors metric")
    lines = [json.loads(line) for line in operator.logs().splitlines() if line.startswith("{")]
    skipped = [line for line in lines if "skipping an event" in line.get("message", "")]
    assert skipped, operator.logs()[-3000:]
    assert all(line["level"] == "error" for line in skipped), skipped
    assert f"{TENANT}/poison" in skipped[0]["message"]
    assert "rules/common/order.yaml:" in skipped[0]["message"]
    assert "the management cluster" in skipped[0]["message"]
