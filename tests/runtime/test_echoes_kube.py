"""A KubeCluster tells the echo ledger of its deletes too: the event that only shows a pass's own delete (the
deletionTimestamp a finalizer holds the object with) does not wake the order; the object's removal does.

The runtime's informers watch a real KubeCluster over HTTP (the emulator), pumped deterministically.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_kit import API, OWNER_LABEL, START, FakeWatch, obj, request, widget_kind
from test_echoes import drain, passing, run_pass

from engine.clock import SystemClock
from engine.cluster.api import Gone, NotFound, Obj
from engine.cluster.kube import KubeCluster, api_client_from_kubeconfig
from engine.cluster.patches import json_copy
from engine.runtime.echoes import Echoes
from engine.runtime.queue import WorkQueue
from engine.runtime.watches import Sources
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator

LOG = logging.getLogger("tests.runtime")
GROUP, VERSION = API.split("/")


def crd(kind: str, plural: str) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                 "versions": [{"name": VERSION, "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[MemoryCluster, KubeCluster, Sources, WorkQueue]]:
    yield from built(tmp_path)


@pytest.fixture
def quiet_world(tmp_path: Path) -> Iterator[tuple[MemoryCluster, KubeCluster, Sources, WorkQueue]]:
    """Order kind Widget, whose rules say the removal of its child Gadget "g" changes nothing for them."""
    yield from built(tmp_path, quiet=("g",))


@pytest.fixture
def forgetful_quiet_world(tmp_path: Path) -> Iterator[tuple[MemoryCluster, KubeCluster, Sources, WorkQueue]]:
    """The quiet world on a server that keeps only the last 3 events: a watch further behind is answered 410 Gone."""
    yield from built(tmp_path, quiet=("g",), event_log_size=3)


def built(tmp_path: Path, quiet: tuple[str, ...] = (), event_log_size: int = 10000) -> Iterator[
        tuple[MemoryCluster, KubeCluster, Sources, WorkQueue]]:
    memory = MemoryCluster("", clock=SystemClock(), event_log_size=event_log_size)
    memory.create(crd("Widget", "widgets"))
    memory.create(crd("Gadget", "gadgets"))
    memory.create(obj("Widget", "a"))
    server = Emulator(memory)
    server.start()
    kube = KubeCluster("", api_client_from_kubeconfig(server.kubeconfig("test")),
                       discovery_cache_dir=tmp_path / "discovery")
    queue = WorkQueue(SimulatedClock(START))
    kind = dataclasses.replace(widget_kind(FakeWatch("Gadget", mapping="labels")), quiet_names=quiet)
    sources = Sources({kind.key: kind}, queue, log=LOG)
    sources.echoes = Echoes(lambda request, kind: queue.add(request))
    sources.add_cluster("", kube)
    try:
        yield memory, kube, sources, queue
    finally:
        kube.stop()
        server.stop()


def pumped(sources: Sources, queue: WorkQueue) -> list[str]:
    sources.pump()
    return drain(queue)


def held_gadget(memory: MemoryCluster) -> None:
    """A child of order "a" that a finalizer holds once deleted (written by someone else: it wakes "a")."""
    gadget = obj("Gadget", "g", labels={OWNER_LABEL: "ns.a"}, spec={"size": 1})
    gadget["metadata"]["finalizers"] = ["example.io/hold"]
    memory.create(gadget)


def release(memory: MemoryCluster) -> None:
    gadget = json_copy(memory.get(API, "Gadget", "ns", "g"))
    gadget["metadata"]["finalizers"] = []
    memory.update(gadget)


def test_the_echo_of_a_pass_s_own_delete_does_not_wake_it_but_the_removal_does(world: Any) -> None:
    memory, kube, sources, queue = world
    pumped(sources, queue)
    held_gadget(memory)
    assert pumped(sources, queue) == ["a"]

    with passing(request("a")):
        answer = kube.delete(API, "Gadget", "ns", "g")
    assert answer is not None and answer["metadata"]["deletionTimestamp"]
    assert pumped(sources, queue) == [], "the deletionTimestamp only echoes the pass's own delete"

    release(memory)  # the finalizer's owner lets it go: a change the pass did not make
    assert pumped(sources, queue) == ["a"]


def test_a_delete_that_removes_at_once_still_wakes_the_order(world: Any) -> None:
    memory, kube, sources, queue = world
    memory.create(obj("Gadget", "g", labels={OWNER_LABEL: "ns.a"}))
    pumped(sources, queue)
    with passing(request("a")):
        assert kube.delete(API, "Gadget", "ns", "g") is None
    assert pumped(sources, queue) == ["a"]


def test_a_delete_by_someone_else_wakes_the_order(world: Any) -> None:
    memory, kube, sources, queue = world
    held_gadget(memory)
    pumped(sources, queue)
    kube.delete(API, "Gadget", "ns", "g")  # no pass runs on this thread
    assert pumped(sources, queue) == ["a"]


@pytest.mark.parametrize("read", ["get", "list"])
def test_an_event_a_running_pass_then_read_through_the_cluster_does_not_run_it_again(world: Any, read: str) -> None:
    """KubeCluster tells the ledger what its gets and lists found, so an event that arrived while the pass
    ran, and that the pass read afterwards, does not run the order once more."""
    memory, kube, sources, queue = world
    memory.create(obj("Gadget", "g", labels={OWNER_LABEL: "ns.a"}, spec={"size": 1}))
    pumped(sources, queue)
    queue.add(request("a"))
    with run_pass(queue, sources, request("a")):
        memory.update({**memory.get(API, "Gadget", "ns", "g"), "spec": {"size": 2}})
        sources.pump()
        found = [kube.get(API, "Gadget", "ns", "g")] if read == "get" else kube.list(API, "Gadget", "ns").items
        assert [item["spec"] for item in found] == [{"size": 2}]
    assert drain(queue) == []


def test_a_removal_a_running_pass_then_found_absent_does_not_run_it_again(world: Any) -> None:
    memory, kube, sources, queue = world
    memory.create(obj("Gadget", "g", labels={OWNER_LABEL: "ns.a"}))
    pumped(sources, queue)
    queue.add(request("a"))
    with run_pass(queue, sources, request("a")):
        memory.delete(API, "Gadget", "ns", "g")
        sources.pump()
        with pytest.raises(NotFound):
            kube.get(API, "Gadget", "ns", "g")
    assert drain(queue) == []


def test_a_child_the_running_pass_found_absent_created_and_someone_then_deleted_runs_it_again(world: Any) -> None:
    """The delivered Secret's path: read absent, created by the pass, deleted by a user before the pass ends."""
    memory, kube, sources, queue = world
    pumped(sources, queue)
    queue.add(request("a"))
    with run_pass(queue, sources, request("a")):
        with pytest.raises(NotFound):
            kube.get(API, "Gadget", "ns", "g")
        kube.create(obj("Gadget", "g", labels={OWNER_LABEL: "ns.a"}))
        sources.pump()
        memory.delete(API, "Gadget", "ns", "g")
        sources.pump()
    assert drain(queue) == ["a"]


def own_delete_of_a_held_child(memory: MemoryCluster, kube: KubeCluster, sources: Sources, queue: WorkQueue,
                               child: str, *, teardown: bool) -> None:
    """A pass of order "a" (a teardown pass when ``teardown``) deletes its child, which a finalizer holds; the
    event that only shows that delete's deletionTimestamp wakes nothing."""
    gadget = obj("Gadget", child, labels={OWNER_LABEL: "ns.a"})
    gadget["metadata"]["finalizers"] = ["example.io/hold"]
    memory.create(gadget)
    if teardown:
        widget = memory.get(API, "Widget", "ns", "a")
        memory.update({**widget, "metadata": {**widget["metadata"], "finalizers": ["example.io/teardown"]}})
        memory.delete(API, "Widget", "ns", "a")
    pumped(sources, queue)
    queue.add(request("a"))
    with run_pass(queue, sources, request("a")):
        kube.get(API, "Widget", "ns", "a")  # every pass reads its order first
        assert kube.delete(API, "Gadget", "ns", child) is not None
    assert pumped(sources, queue) == [], "the deletionTimestamp only echoes the pass's own delete"


@pytest.mark.parametrize(("child", "teardown", "wakes"), [
    ("g", False, []),     # quiet, deleted by a converge pass: the removal changes nothing the rules read
    ("h", False, ["a"]),  # a child the rules do not call quiet
    ("g", True, ["a"]),   # a teardown waits for its deletes to be gone
])
def test_a_quiet_child_s_removal_after_the_order_s_own_delete_wakes_nothing(
        quiet_world: Any, child: str, teardown: bool, wakes: list[str]) -> None:
    memory, kube, sources, queue = quiet_world
    own_delete_of_a_held_child(memory, kube, sources, queue, child, teardown=teardown)
    held = memory.get(API, "Gadget", "ns", child)
    memory.update({**held, "metadata": {**held["metadata"], "finalizers": []}})
    assert pumped(sources, queue) == wakes


@pytest.mark.parametrize(("child", "teardown", "wakes"), [
    ("g", False, []),
    ("h", False, ["a"]),
    ("g", True, ["a"]),
])
def test_a_removal_a_re_list_finds_after_the_order_s_own_delete_wakes_as_the_watch_s_would(
        forgetful_quiet_world: Any, child: str, teardown: bool, wakes: list[str]) -> None:
    """The watch expires (410 Gone) while the finalizer's owner lets the child go: the re-list maps its removal with
    the last state the cache held, the deletionTimestamp of the pass's own delete, so with that delete's
    resourceVersion. It is still the child's removal, not the delete's echo: it wakes the order as the watch's
    removal does, unless the rules call it quiet (before, it woke nothing, and an order waiting for the child to be
    gone waited for its next timer or event: a converged order has none)."""
    memory, kube, sources, queue = forgetful_quiet_world
    own_delete_of_a_held_child(memory, kube, sources, queue, child, teardown=teardown)
    held = memory.get(API, "Gadget", "ns", child)
    memory.update({**held, "metadata": {**held["metadata"], "finalizers": []}})
    for n in range(4):  # unowned Gadgets: they wake nobody, and push the removal out of the server's event log
        memory.create(obj("Gadget", f"other-{n}"))
    with pytest.raises(Gone):  # the watch cannot resume after the echo: the informer lists again
        memory.watch(API, "Gadget", "ns", resource_version=held["metadata"]["resourceVersion"], timeout=0)
    assert pumped(sources, queue) == wakes
    assert all(("ns", child) not in i.cached() for i in sources.informers("") if i.kind == "Gadget")


def test_a_quiet_child_s_removal_after_someone_else_s_delete_wakes_the_order(quiet_world: Any) -> None:
    memory, kube, sources, queue = quiet_world
    held_gadget(memory)
    pumped(sources, queue)
    kube.delete(API, "Gadget", "ns", "g")  # no pass runs on this thread
    assert pumped(sources, queue) == ["a"]
    release(memory)
    assert pumped(sources, queue) == ["a"]
