"""Events that only echo a pass's own writes do not wake its order again; any other event still does."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from runtime_kit import OWNER_LABEL, START, FakeWatch, memory, obj, request, widget_kind

from engine.cluster.api import Obj, WriteObserver
from engine.cluster.memory import MemoryCluster
from engine.outcome import Request
from engine.runtime.echoes import CURRENT_PASS, Echoes
from engine.runtime.queue import WorkQueue
from engine.runtime.watches import Sources
from engine.testing.clock import SimulatedClock

LOG = logging.getLogger("tests.runtime")
CHILD = {"labels": {OWNER_LABEL: "ns.a"}}


class ReportingCluster:
    """A MemoryCluster that tells a write observer of its named writes, as KubeCluster does."""

    def __init__(self, inner: MemoryCluster) -> None:
        self.inner = inner
        self.name = inner.name
        self.observer: WriteObserver | None = None

    def observe_writes(self, observer: WriteObserver | None) -> None:
        self.observer = observer

    def write(self, obj: Obj, send: Callable[[], Obj], *, before_answer: Callable[[], Any] = lambda: None) -> Obj:
        """Send a write; ``before_answer`` runs after the server took it and before its answer is told."""
        assert self.observer is not None
        meta = obj["metadata"]
        ticket = self.observer.sending(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"])
        answer = send()
        before_answer()
        self.observer.answered(ticket, answer)
        return answer

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


def world() -> tuple[ReportingCluster, Sources, WorkQueue]:
    kind = widget_kind(FakeWatch("Gadget", mapping="labels"))
    queue = WorkQueue(SimulatedClock(START))
    sources = Sources({kind.key: kind}, queue, log=LOG)
    sources.echoes = Echoes(queue.add)
    cluster = ReportingCluster(memory())
    cluster.create(obj("Widget", "a"))
    sources.add_cluster("", cluster)
    sources.pump()
    drain(queue)
    return cluster, sources, queue


def drain(queue: WorkQueue) -> list[str]:
    names = []
    while (req := queue.pop_ready()) is not None:
        names.append(req.name)
        queue.done(req)
    return names


@contextlib.contextmanager
def passing(order: Request) -> Iterator[None]:
    """The pass of an order runs on this thread (as the controller marks it)."""
    token = CURRENT_PASS.set(order)
    try:
        yield
    finally:
        CURRENT_PASS.reset(token)


def written(cluster: ReportingCluster, gadget: Obj, **kwargs: Any) -> Obj:
    with passing(request("a")):
        return cluster.write(gadget, lambda: cluster.inner.create(gadget), **kwargs)


def test_a_pass_creating_a_child_is_not_woken_by_its_echo() -> None:
    cluster, sources, queue = world()
    written(cluster, obj("Gadget", "g", **CHILD))
    sources.pump()
    assert drain(queue) == []


def test_an_echo_arriving_before_the_answer_is_held_and_dropped() -> None:
    cluster, sources, queue = world()
    written(cluster, obj("Gadget", "g", **CHILD), before_answer=sources.pump)
    sources.pump()
    assert drain(queue) == []


def test_a_foreign_edit_right_after_our_write_wakes_the_order() -> None:
    cluster, sources, queue = world()
    mine = written(cluster, obj("Gadget", "g", **CHILD))
    cluster.inner.update({**mine, "spec": {"edited": "by someone else"}})
    sources.pump()
    assert drain(queue) == ["a"]


def test_a_foreign_edit_while_our_write_is_in_flight_wakes_the_order() -> None:
    cluster, sources, queue = world()

    def someone_else_edits() -> None:
        sources.pump()  # our echo, held
        gadget = cluster.inner.get(obj("Gadget", "g")["apiVersion"], "Gadget", "ns", "g")
        cluster.inner.update({**gadget, "spec": {"edited": "by someone else"}})
        sources.pump()  # the foreign edit, held too

    written(cluster, obj("Gadget", "g", **CHILD), before_answer=someone_else_edits)
    assert drain(queue) == ["a"]


def test_a_failed_write_lets_the_held_events_wake_the_order() -> None:
    cluster, sources, queue = world()
    gadget = obj("Gadget", "g", **CHILD)
    assert cluster.observer is not None
    with passing(request("a")):
        ticket = cluster.observer.sending(gadget["apiVersion"], "Gadget", "ns", "g")
    cluster.inner.create(gadget)  # the server took it, the answer was lost
    sources.pump()
    assert drain(queue) == []
    cluster.observer.answered(ticket, None)
    assert drain(queue) == ["a"]


def test_writes_outside_a_pass_and_to_the_order_itself_still_wake() -> None:
    """A write no pass made (the event recorder, a test) is foreign; the order's own object (its finalizer)
    keeps waking it, as the seeds' watch on the order does."""
    cluster, sources, queue = world()
    gadget = obj("Gadget", "g", **CHILD)
    cluster.write(gadget, lambda: cluster.inner.create(gadget))
    sources.pump()
    assert drain(queue) == ["a"]
    order = cluster.inner.get(obj("Widget", "a")["apiVersion"], "Widget", "ns", "a")
    with passing(request("a")):
        cluster.write(order, lambda: cluster.inner.update({**order, "metadata": {**order["metadata"],
                                                                                 "labels": {"x": "y"}}}))
    sources.pump()
    assert drain(queue) == ["a"]


def test_the_echo_of_one_order_still_wakes_another_order_it_maps_to() -> None:
    cluster, sources, queue = world()
    cluster.create(obj("Widget", "b"))
    sources.pump()
    drain(queue)
    with passing(request("b")):  # order b writes a child of a
        gadget = obj("Gadget", "g", **CHILD)
        cluster.write(gadget, lambda: cluster.inner.create(gadget))
    sources.pump()
    assert drain(queue) == ["a"]


def test_the_ledger_forgets_an_echo_once_a_later_event_passed() -> None:
    echoes = Echoes(lambda request: None)
    with passing(request("a")):
        ticket = echoes.sending("", "example.io/v1", "Gadget", "ns", "g")
    assert ticket is not None
    echoes.answered(ticket, {"metadata": {"resourceVersion": "5"}})
    gadget = obj("Gadget", "g")
    assert echoes.echo_of("", "example.io/v1", "Gadget", {**gadget, "metadata": {**gadget["metadata"],
                                                                                 "resourceVersion": "4"}}) is None
    assert len(echoes) == 1  # an older event: ours is still to come
    assert echoes.echo_of("", "example.io/v1", "Gadget", {**gadget, "metadata": {**gadget["metadata"],
                                                                                 "resourceVersion": "6"}}) is None
    assert len(echoes) == 0  # a later one: ours will never come
