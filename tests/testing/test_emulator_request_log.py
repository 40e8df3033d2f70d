"""The emulator's request log: every request served, with its times, method, path, User-Agent and code; never a
body; bounded. And what the operator's clients put in it: their User-Agent, naming the shard member."""

from __future__ import annotations

import base64
import http.client
import json
import time
from collections.abc import Iterator

import pytest

from engine import __version__
from engine.clock import SystemClock
from engine.cluster.api import NotFound
from engine.cluster.kube import kube_cluster_from_kubeconfig
from engine.operator import name_member
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator

SECRET_VALUE = "hunter2-never-logged"
TOKEN = "bearer-token-never-logged"


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    cluster = MemoryCluster("", clock=SystemClock())
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    with Emulator(cluster, token=TOKEN) as served:
        yield served


def send(emulator: Emulator, method: str, path: str, body: object = None, agent: str = "probe/1.0") -> int:
    host, port = emulator.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body).encode(),
                     headers={"Content-Type": "application/json", "User-Agent": agent,
                              "Authorization": f"Bearer {TOKEN}"})
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


def test_each_request_is_logged_with_its_times_method_path_agent_and_code_and_never_its_body(
        emulator: Emulator) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
              "data": {"password": base64.b64encode(SECRET_VALUE.encode()).decode()}}
    before_wall, before = time.time(), time.monotonic()
    assert send(emulator, "POST", "/api/v1/namespaces/ns/secrets?fieldManager=tester", secret) == 201
    assert send(emulator, "GET", "/api/v1/namespaces/ns/secrets/gone", agent="other/2") == 404
    after = time.monotonic()

    created, missing = emulator.requests.records()
    assert (created.method, created.path, created.user_agent, created.code) == (
        "POST", "/api/v1/namespaces/ns/secrets?fieldManager=tester", "probe/1.0", 201)
    assert (missing.method, missing.path, missing.user_agent, missing.code) == (
        "GET", "/api/v1/namespaces/ns/secrets/gone", "other/2", 404)
    assert before <= created.started <= created.ended <= missing.started <= missing.ended <= after
    assert before_wall - 1 <= created.wall_started <= created.wall_ended <= time.time() + 1
    assert emulator.requests.dropped == 0
    logged = repr(emulator.requests.records())
    assert SECRET_VALUE not in logged and base64.b64encode(SECRET_VALUE.encode()).decode() not in logged
    assert TOKEN not in logged


def test_the_log_keeps_the_newest_records_up_to_its_cap_and_counts_those_it_dropped() -> None:
    cluster = MemoryCluster("", clock=SystemClock())
    with Emulator(cluster, request_log_size=3) as emulator:
        for n in range(5):
            send(emulator, "GET", f"/api/v1/namespaces/n{n}")
        assert [r.path for r in emulator.requests.records()] == [f"/api/v1/namespaces/n{n}" for n in (2, 3, 4)]
        assert emulator.requests.dropped == 2
    with Emulator(MemoryCluster("", clock=SystemClock()), request_log_size=0) as silent:
        send(silent, "GET", "/version")
        assert silent.requests.records() == [] and silent.requests.dropped == 0


def test_the_operator_s_clients_say_who_they_are_and_a_shard_member_s_name_itself(emulator: Emulator) -> None:
    cluster = kube_cluster_from_kubeconfig("", emulator.kubeconfig(), cache=False)
    try:
        with pytest.raises(NotFound):
            cluster.get("v1", "Secret", "ns", "before")
        name_member(cluster, "shard-0-1a2b3c")
        with pytest.raises(NotFound):
            cluster.get("v1", "Secret", "ns", "after")
    finally:
        cluster.stop()
    agents = {r.path: r.user_agent for r in emulator.requests.records()}
    assert agents["/api/v1/namespaces/ns/secrets/before"] == f"c5c3-order-engine/{__version__}"
    assert agents["/api/v1/namespaces/ns/secrets/after"] == f"c5c3-order-engine/{__version__} (member shard-0-1a2b3c)"
    assert all(agent.startswith("c5c3-order-engine/") for agent in agents.values()), agents  # discovery too
