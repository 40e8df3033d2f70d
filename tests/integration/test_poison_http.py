"""A poison order over HTTP: a KeystoneUser stored without admission whose controlPlaneRef is a string.

Its index expression fails on every event about it. The threaded runtime logs that at error,
counts it, and moves on: the good orders stored and created beside it go Ready. The bad one cannot
be given the InvalidSpec condition its rules declare: the API server refuses every write of it,
status writes included, because controlPlaneRef's immutability rule cannot evaluate on a string and
an evaluation error is never ratcheted (a real server answers the same, tests/differential); the
runtime logs each refusal at warning and retries with backoff.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from integration_kit import API, TENANT, OperatorProcess, World, condition, get, order, wait_for

from engine.cluster.api import Obj


def bad_order(name: str, **labels: str) -> Obj:
    obj = order("KeystoneUser", name)
    obj["spec"]["controlPlaneRef"] = "cp"
    if labels:
        obj["metadata"]["labels"] = labels
    return obj


@pytest.fixture(scope="module")
def operator(world: World) -> Iterator[OperatorProcess]:
    world.management.seed(bad_order("poison"))
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


def test_good_orders_beside_a_poison_order_go_ready(world: World, operator: OperatorProcess) -> None:
    """Orders of the poisoned kind, stored before and created after it (and after it changed), go Ready."""
    world.management.create(order("KeystoneUser", "late"))
    world.management.create(order("RabbitMQVhost", "beside"))
    poison = get(world.management, API, "KeystoneUser", TENANT, "poison")
    assert poison is not None
    world.management.seed({**bad_order("poison", touched="yes"), "status": poison.get("status") or {}})
    world.management.create(order("KeystoneUser", "later"))
    for kind, name in (("KeystoneUser", "early"), ("KeystoneUser", "late"), ("RabbitMQVhost", "beside"),
                       ("KeystoneUser", "later")):
        wait_for(lambda k=kind, n=name: condition(get(world.management, API, k, TENANT, n), "Ready") == "True",
                 message=f"{kind} {name} Ready beside the poison order\n{operator.logs()[-3000:]}")


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
