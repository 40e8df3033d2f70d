"""The simulated topology operator answers on a User as the real one does: Ready, with the status it requires."""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path

import yaml

from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster
from simulators.base import react
from simulators.topology import API_VERSION, TopologySimulator

STAND_INS = Path(__file__).resolve().parents[2] / "deploy" / "crds" / "external" / "rabbitmq.com.yaml"


def world() -> tuple[MemoryCluster, TopologySimulator]:
    """A cluster with the topology kinds' stand-in CRDs: every status the simulator writes is admitted."""
    clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    cluster = MemoryCluster("", clock=clock, permissive=True)
    for crd in yaml.safe_load_all(STAND_INS.read_text(encoding="utf-8")):
        cluster.create(crd)
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


def test_a_user_whose_credentials_are_missing_fails_with_the_status_the_crd_requires() -> None:
    """Ready False/FailedCreateOrUpdate, and status.username present (empty) as the operator writes it."""
    cluster, topology = world()
    cluster.create({"apiVersion": API_VERSION, "kind": "User", "metadata": {"name": "u", "namespace": "ns"},
                    "spec": {"rabbitmqClusterReference": {"name": "bus"}, "importCredentialsSecret": {"name": "pw"}}})
    react([topology])
    status = cluster.get(API_VERSION, "User", "ns", "u")["status"]
    assert status["username"] == ""
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Ready", "False", "FailedCreateOrUpdate")]
