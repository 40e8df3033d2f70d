"""A pass's own writes do not bring its order back; a foreign edit right after one of them does.

An in-process operator (the real rules, a KubeCluster over HTTP to the emulated management
cluster) serves one KeystoneUser. Deleting its delivered Secret costs one pass, the repair: the
watch event of the Secret the repair writes only echoes that write, so it queues nothing. An edit
of the repaired Secret by someone else, made as soon as the repair shows, is repaired too.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator

import pytest
from integration_kit import API, TENANT, World, condition, get, operator_in_process, order, secret_value, wait_for

from engine.cluster.kube import kube_cluster_from_kubeconfig
from engine.cluster.patches import json_copy
from engine.metrics import PassResult
from engine.operator import Operator

NAME = "echoes"
DELIVERED = f"{NAME}-credentials"
QUIET = 1.5
"""Seconds without a pass after which an order counts as settled (the engine gathers events for 50 ms)."""


@pytest.fixture(scope="module")
def operator(world: World) -> Iterator[Operator]:
    management = kube_cluster_from_kubeconfig("", world.kubeconfig, context="management")
    with operator_in_process(management) as running:
        yield running


def passes(running: Operator) -> int:
    """Passes run so far (this module's world holds one order)."""
    return int(sum(running.registry.get_sample_value("c5c3_operator_reconcile_total", {"result": str(r)}) or 0
                   for r in PassResult))


def wakes(running: Operator) -> dict[tuple[str, str], float]:
    """Passes so far by what queued them (cause, kind), as the operator's ``pass_wakes_total`` counts them."""
    return {(sample.labels["cause"], sample.labels["kind"]): sample.value
            for family in running.registry.collect() if family.name == "c5c3_operator_pass_wakes"
            for sample in family.samples if sample.name.endswith("_total")}


def settled(running: Operator) -> int:
    """The pass count once no pass has run for QUIET seconds."""
    count, since = passes(running), time.monotonic()
    deadline = since + 30
    while time.monotonic() - since < QUIET:
        assert time.monotonic() < deadline, "the order never settled"
        time.sleep(0.1)
        if passes(running) != count:
            count, since = passes(running), time.monotonic()
    return count


def test_a_repair_costs_one_pass_and_a_foreign_edit_after_it_is_repaired(world: World, operator: Operator) -> None:
    world.management.create(order("KeystoneUser", NAME))
    wait_for(lambda: condition(get(world.management, API, "KeystoneUser", TENANT, NAME), "Ready") == "True",
             message=f"KeystoneUser {NAME} Ready")
    password = secret_value(get(world.management, "v1", "Secret", TENANT, DELIVERED), "password")
    assert password
    before, woken = settled(operator), wakes(operator)

    world.management.delete("v1", "Secret", TENANT, DELIVERED)
    repaired = json_copy(wait_for(lambda: get(world.management, "v1", "Secret", TENANT, DELIVERED),
                                  message="the deleted Secret delivered again"))
    assert secret_value(repaired, "password") == password
    repaired["data"]["password"] = base64.b64encode(b"tampered").decode()  # at once, after our write
    world.management.update(repaired)
    wait_for(lambda: secret_value(get(world.management, "v1", "Secret", TENANT, DELIVERED), "password") == password,
             message="the edit right after the repair undone")
    ran = settled(operator) - before
    why = {key: value - woken.get(key, 0) for key, value in wakes(operator).items() if value != woken.get(key, 0)}
    assert ran == 2, f"one pass per foreign change (the delete, the edit), none for echoes; {ran} woken by {why}"
