"""The simulated topology operator answers on a User as the real one does: Ready, with the status it requires."""

from __future__ import annotations

import base64
import datetime as dt

from engine.cluster.memory import MemoryCluster
from engine.testing.clock import SimulatedClock
from simulators.base import react
from simulators.topology import API_VERSION, TopologySimulator


def world() -> tuple[MemoryCluster, TopologySimulator]:
    clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    cluster = MemoryCluster("", clock=clock, permissive=True)
    return cluster, TopologySimulator(cluster, clock)


def test_a_created_user_reports_its_username_and_credentials() -> None:
    """status.username (from the credentials Secret) and status.credentials, which the operator's CRD requires."""
    cluster, topology = world()
    cluster.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pw", "namespace": "ns"},
                    "data": {"username": base64.b64encode(b"vh-v1").decode(), "password": "cGFzcw=="}})
    cluster.create({"apiVersion": API_VERSION, "kind": "User", "metadata": {"name": "u", "namespace": "ns"},
                    "spec": {"rabbitmqClusterReference": {"name": "bus"}, "importCredentialsSecret": {"name": "pw"}}})
    react([topology])
    status = cluster.get(API_VERSION, "User", "ns", "u")["status"]
    assert status["username"] == "vh-v1"
    assert status["credentials"] == {"name": "pw"}
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [("Ready", "True")]
    assert react([topology]) == []


def test_a_vhost_gets_no_user_fields() -> None:
    """Only Users carry username and credentials."""
    cluster, topology = world()
    cluster.create({"apiVersion": API_VERSION, "kind": "Vhost", "metadata": {"name": "v", "namespace": "ns"},
                    "spec": {"name": "v", "rabbitmqClusterReference": {"name": "bus"}}})
    react([topology])
    assert set(cluster.get(API_VERSION, "Vhost", "ns", "v")["status"]) == {"observedGeneration", "conditions"}
