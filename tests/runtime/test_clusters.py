"""Target clusters registered by Secrets: engaged, engaged afresh on a change, disengaged on deletion."""

from __future__ import annotations

import base64
import logging
import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from runtime_kit import START, FakePass, memory, obj, widget_kind

from engine.cluster.api import Cluster
from engine.cluster.registry import ClusterNotFound, ClusterSet
from engine.metrics import Metrics
from engine.runtime.clusters import (
    REGISTRATION_LABEL,
    Refusal,
    Registration,
    Registrations,
    parse_namespaces,
    registration_of,
)
from engine.runtime.manager import Manager
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster

NS = "c5c3-clusters"
TOKEN = "s3cr3t-t0ken-that-must-never-be-logged"


def kubeconfig(server: str) -> str:
    return (f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: {server}}}}}]\n"
            f"users: [{{name: u, user: {{token: {TOKEN}}}}}]\n")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(name: str, server: str, namespaces: str | None = None, *, label: str | None = "true") -> dict[str, Any]:
    data = {"kubeconfig": b64(kubeconfig(server))}
    if namespaces is not None:
        data["namespaces"] = b64(namespaces)
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if label is not None:
        meta["labels"] = {REGISTRATION_LABEL: label}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": data}


class Factory:
    """Reaches the in-memory cluster whose name is the kubeconfig's server; records what it built."""

    def __init__(self, clusters: dict[str, MemoryCluster]) -> None:
        self.clusters = clusters
        self.built: list[Registration] = []
        self.stopped: list[str] = []

    def __call__(self, registration: Registration) -> Cluster:
        self.built.append(registration)
        server = registration.kubeconfig.split("server: ")[1].split("}")[0]
        if server not in self.clusters:
            raise ValueError(f"no route to {server}; token {TOKEN}")
        return Client(self.clusters[server], lambda: self.stopped.append(server))  # type: ignore[return-value]


class Client:
    """A client of one in-memory cluster, with the stop() a real client has."""

    def __init__(self, inner: MemoryCluster, on_stop: Any) -> None:
        self._inner = inner
        self.name = inner.name
        self.stop = on_stop

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


class World:
    def __init__(self) -> None:
        self.clock = SimulatedClock(START)
        self.management = memory(clock=self.clock)
        self.targets = {name: memory(name, clock=self.clock) for name in ("edge-1", "edge-2")}
        self.fake = FakePass()
        kind = widget_kind()
        self.manager: Manager[Any] = Manager(
            {kind.key: kind}, ClusterSet(self.management), clock=self.clock,
            metrics=Metrics(CollectorRegistry()), run_pass=self.fake,
        )
        self.factory = Factory(self.targets)
        self.registrations = Registrations(self.management, NS, self.manager, self.factory)
        self.manager.start()


@pytest.fixture
def world() -> World:
    return World()


def test_a_registration_engages_its_cluster_under_the_secret_name(world: World) -> None:
    """A labelled Secret engages the cluster its kubeconfig reaches, named after the Secret; its orders run."""
    world.targets["edge-1"].create(obj("Widget", "w"))
    world.management.create(secret("edge-1", "edge-1"))
    world.registrations.sync()
    assert world.registrations.engaged() == ["edge-1"]
    assert world.manager.clusters.names() == ["", "edge-1"]
    world.manager.settle()
    assert [r.cluster for r, _ in world.fake.runs] == ["edge-1"]


def test_namespaces_restrict_the_registration(world: World) -> None:
    """The optional namespaces key, newline or comma separated, reaches the factory."""
    world.management.create(secret("edge-1", "edge-1", "tenant-a,\n tenant-b\n\ntenant-a"))
    world.registrations.sync()
    assert world.factory.built[-1].namespaces == ("tenant-a", "tenant-b")


def test_only_the_registered_namespaces_are_watched(world: World) -> None:
    """With namespaces, the cluster's orders elsewhere are neither listed nor woken by events."""
    edge = world.targets["edge-1"]
    edge.create(obj("Widget", "in", namespace="tenant-a"))
    edge.create(obj("Widget", "out", namespace="tenant-z"))
    world.management.create(secret("edge-1", "edge-1", "tenant-a"))
    world.registrations.sync()
    world.manager.settle()
    edge.create(obj("Widget", "later-out", namespace="tenant-z"))
    edge.create(obj("Widget", "later-in", namespace="tenant-a"))
    world.manager.settle()
    assert [(r.namespace, r.name) for r, _ in world.fake.runs] == [("tenant-a", "in"), ("tenant-a", "later-in")]
    assert {i.namespace for i in world.manager.sources.informers("edge-1")} == {"tenant-a"}


def test_unlabelled_secrets_are_ignored(world: World) -> None:
    """A Secret without the label (or with another value) registers nothing."""
    world.management.create(secret("edge-1", "edge-1", label=None))
    world.management.create(secret("edge-2", "edge-2", label="false"))
    world.registrations.sync()
    assert world.registrations.engaged() == []


def test_a_changed_kubeconfig_engages_afresh_and_closes_the_old_client(world: World) -> None:
    """A new kubeconfig builds a new client, re-lists the cluster's orders and stops the old client."""
    world.targets["edge-2"].create(obj("Widget", "w2"))
    world.management.create(secret("edge-1", "edge-1"))
    world.registrations.sync()
    world.manager.settle()
    changed = secret("edge-1", "edge-2")
    world.registrations.handle("MODIFIED", changed)
    assert len(world.factory.built) == 2
    assert world.factory.stopped == ["edge-1"]
    world.manager.settle()
    assert [(r.cluster, r.name) for r, _ in world.fake.runs] == [("edge-1", "w2")]


def test_changed_namespaces_engage_afresh(world: World) -> None:
    """A change of namespaces alone engages the cluster afresh too."""
    world.registrations.handle("ADDED", secret("edge-1", "edge-1"))
    world.registrations.handle("MODIFIED", secret("edge-1", "edge-1", "tenant-a"))
    assert [r.namespaces for r in world.factory.built] == [None, ("tenant-a",)]


def test_an_unrelated_edit_changes_nothing(world: World) -> None:
    """Edits that leave the kubeconfig and namespaces alone (an annotation) do not re-engage."""
    world.registrations.handle("ADDED", secret("edge-1", "edge-1"))
    edited = secret("edge-1", "edge-1")
    edited["metadata"]["annotations"] = {"note": "x"}
    world.registrations.handle("MODIFIED", edited)
    assert len(world.factory.built) == 1
    assert world.factory.stopped == []


def test_deletion_disengages(world: World) -> None:
    """A deleted Secret disengages the cluster: it no longer resolves, and its client is closed."""
    world.management.create(secret("edge-1", "edge-1"))
    world.registrations.sync()
    world.management.delete("v1", "Secret", NS, "edge-1")
    world.registrations.sync()
    assert world.registrations.engaged() == []
    with pytest.raises(ClusterNotFound):
        world.manager.clusters.resolve("edge-1")
    assert world.manager.sources.informers("edge-1") == []
    assert world.factory.stopped == ["edge-1"]


def test_losing_the_label_or_the_kubeconfig_disengages(world: World) -> None:
    """A registration that stops being one (label removed, kubeconfig key gone) disengages like a deletion."""
    world.registrations.handle("ADDED", secret("edge-1", "edge-1"))
    world.registrations.handle("ADDED", secret("edge-2", "edge-2"))
    world.registrations.handle("MODIFIED", secret("edge-1", "edge-1", label=None))
    no_data = secret("edge-2", "edge-2")
    no_data["data"] = {}
    world.registrations.handle("MODIFIED", no_data)
    assert world.registrations.engaged() == []


def test_an_unusable_kubeconfig_is_logged_without_its_secrets(world: World, caplog: pytest.LogCaptureFixture) -> None:
    """A kubeconfig the factory refuses engages nothing; the log names the cluster, never the token."""
    caplog.set_level(logging.INFO)
    world.management.create(secret("edge-9", "edge-9"))
    world.registrations.sync()
    assert world.registrations.engaged() == []
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "edge-9" in text
    assert "no route to edge-9" in text
    assert TOKEN not in text


def test_stop_closes_every_registered_client(world: World) -> None:
    """On shutdown every engaged cluster is disengaged and its client stopped."""
    world.registrations.handle("ADDED", secret("edge-1", "edge-1"))
    world.registrations.handle("ADDED", secret("edge-2", "edge-2"))
    world.registrations.stop()
    assert sorted(world.factory.stopped) == ["edge-1", "edge-2"]
    assert world.manager.clusters.names() == [""]


def test_run_follows_the_secrets_as_they_change(world: World) -> None:
    """The threaded loop engages on create, re-engages on change and disengages on delete."""
    stop = threading.Event()
    runner = threading.Thread(target=world.registrations.run, args=(stop,), kwargs={"watch_timeout": 0.1})
    runner.start()

    def until(names: list[str], built: int) -> bool:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if world.registrations.engaged() == names and len(world.factory.built) == built:
                return True
            time.sleep(0.01)
        return False

    try:
        assert world.registrations.synced.wait(5)
        world.management.create(secret("edge-1", "edge-1"))
        assert until(["edge-1"], 1)
        world.management.update(secret("edge-1", "edge-2"))
        assert until(["edge-1"], 2)
        world.management.delete("v1", "Secret", NS, "edge-1")
        assert until([], 2)
    finally:
        stop.set()
        runner.join(5)
    assert not runner.is_alive()


def test_registration_of_explains_what_is_missing() -> None:
    """A labelled Secret that holds no usable kubeconfig is a Refusal saying why (a metric reason and words),
    without quoting its data; an unlabelled one is no registration at all."""
    bad = secret("edge-1", "edge-1")
    bad["data"]["kubeconfig"] = "not base64!"
    refusal = registration_of(bad)
    assert isinstance(refusal, Refusal)
    assert (refusal.reason, refusal.message) == ("binary", "its data key 'kubeconfig' is not UTF-8 text")
    missing = registration_of({**bad, "data": {}})
    assert isinstance(missing, Refusal) and missing.reason == "no-kubeconfig"
    assert "no key 'kubeconfig'" in missing.message
    assert "not labelled" in str(registration_of(secret("edge-1", "edge-1", label=None)))
    assert TOKEN not in repr(registration_of(secret("edge-1", "edge-1")))


def test_parse_namespaces() -> None:
    """Commas and newlines separate; blanks and duplicates go; nothing means every namespace."""
    assert parse_namespaces("a,b\nc, a") == ("a", "b", "c")
    assert parse_namespaces(" \n, ") is None


def test_a_labelled_secret_without_a_kubeconfig_is_registered_but_unreachable(world: World) -> None:
    """A labelled Secret whose kubeconfig is missing is refused like a malformed kubeconfig: the cluster is
    registered (a teardown naming it stays patient) but not reachable; once the kubeconfig is there it engages."""
    world.registrations.handle("ADDED", secret("edge-1", "edge-1"))
    no_data = secret("edge-1", "edge-1")
    no_data["data"] = {}
    world.registrations.handle("MODIFIED", no_data)
    assert world.registrations.engaged() == []
    assert world.manager.clusters.registered("edge-1")
    assert not world.manager.clusters.reachable("edge-1")
    world.registrations.handle("MODIFIED", secret("edge-1", "edge-1"))
    assert world.registrations.engaged() == ["edge-1"]
    assert world.manager.clusters.reachable("edge-1")
    world.registrations.handle("DELETED", secret("edge-1", "edge-1"))
    assert not world.manager.clusters.registered("edge-1")
