"""Events that only echo a pass's own writes do not wake its order again; any other event still does."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from runtime_kit import OWNER_LABEL, START, FakeWatch, memory, obj, request, widget_kind

from engine.cluster.api import Gone, NotFound, Obj, WriteObserver
from engine.cluster.selectors import parse_labels
from engine.metrics import Metrics
from engine.outcome import Request, Result
from engine.runtime.controller import Controller
from engine.runtime.echoes import CURRENT_PASS, Echoes
from engine.runtime.queue import WorkQueue
from engine.runtime.watches import Sources
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster

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

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, **kwargs: Any) -> Obj:
        """A get, told to the observer as KubeCluster tells it (found, or None when absent)."""
        assert self.observer is not None
        try:
            found = self.inner.get(api_version, kind, namespace, name, **kwargs)
        except NotFound:
            self.observer.read(api_version, kind, namespace, name, None)
            raise
        self.observer.read(api_version, kind, namespace, name, found)
        return found

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


def world() -> tuple[ReportingCluster, Sources, WorkQueue]:
    kind = widget_kind(FakeWatch("Gadget", mapping="labels"))
    queue = WorkQueue(SimulatedClock(START))
    sources = Sources({kind.key: kind}, queue, log=LOG)
    sources.echoes = Echoes(lambda request, kind: queue.add(request))
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
    echoes = Echoes(lambda request, kind: None)
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


def forgetful_world() -> tuple[ReportingCluster, Sources, WorkQueue]:
    """The world on a server that keeps only the last 3 events: a watch further behind is answered 410 Gone."""
    kind = widget_kind(FakeWatch("Gadget", mapping="labels"))
    queue = WorkQueue(SimulatedClock(START))
    sources = Sources({kind.key: kind}, queue, log=LOG)
    sources.echoes = Echoes(lambda request, kind: queue.add(request))
    cluster = ReportingCluster(MemoryCluster("", clock=SimulatedClock(START), permissive=True, event_log_size=3))
    cluster.create(obj("Widget", "a"))
    sources.add_cluster("", cluster)
    sources.pump()
    assert drain(queue) == ["a"]
    return cluster, sources, queue


def expire_watches(cluster: ReportingCluster, since: Obj) -> None:
    """Unowned Gadgets (they wake nobody) push every change after ``since`` out of the server's event log."""
    for n in range(4):
        cluster.inner.create(obj("Gadget", f"other-{n}"))
    with pytest.raises(Gone):
        cluster.inner.watch(since["apiVersion"], "Gadget", "ns", resource_version=since["metadata"]["resourceVersion"])


def test_a_removal_a_re_list_finds_after_a_write_that_changed_nothing_wakes_the_order() -> None:
    """A pass's write that changes nothing is answered with the resourceVersion the object already had, and no
    event follows it. The object is then deleted while the watch has expired (410 Gone): the re-list maps the
    removal with the last state the cache held, that same resourceVersion. It is a removal, not the write's echo:
    it wakes the order (before, it woke nothing, and the converged order waited for an event that never came)."""
    cluster, sources, queue = forgetful_world()
    gadget = cluster.inner.create(obj("Gadget", "g", **CHILD))
    sources.pump()
    assert drain(queue) == ["a"]
    with passing(request("a")):
        same = cluster.write(gadget, lambda: cluster.inner.update(gadget))
    assert same["metadata"]["resourceVersion"] == gadget["metadata"]["resourceVersion"]
    cluster.inner.delete(gadget["apiVersion"], "Gadget", "ns", "g")
    expire_watches(cluster, same)
    sources.pump()
    assert drain(queue) == ["a"]


@pytest.mark.parametrize("deleted", [True, False])
def test_a_child_a_pass_created_that_a_re_list_does_not_hold_wakes_the_order(deleted: bool) -> None:
    """A pass creates a child; before the watch delivers it, the watch expires (410 Gone) and someone deletes the
    child. Neither the re-list nor the cache holds it, so no event maps its removal: the ledger, still waiting for
    the create's echo, wakes the order (before, nothing did, and a converged order stayed without its child). A
    re-list that holds the child maps it as an event carrying the create's resourceVersion: its echo, no pass."""
    cluster, sources, queue = forgetful_world()
    gadget = obj("Gadget", "g", **CHILD)
    with passing(request("a")):
        mine = cluster.write(gadget, lambda: cluster.inner.create(gadget))
    if deleted:
        cluster.inner.delete(gadget["apiVersion"], "Gadget", "ns", "g")
    expire_watches(cluster, mine)
    sources.pump()
    assert drain(queue) == (["a"] if deleted else [])
    assert len(sources.echoes or []) == 0


def test_a_child_a_re_list_does_not_hold_while_the_pass_s_create_is_in_flight_wakes_the_order() -> None:
    """As above, but the re-list comes between the server taking the create and its answer reaching the pass: the
    list, answered after the create, does not hold the child, so it went; the answer wakes the order."""
    cluster, sources, queue = forgetful_world()
    gadget = obj("Gadget", "g", **CHILD)

    def deleted_while_the_watch_expired() -> None:
        mine = cluster.inner.get(gadget["apiVersion"], "Gadget", "ns", "g")
        cluster.inner.delete(gadget["apiVersion"], "Gadget", "ns", "g")
        expire_watches(cluster, mine)
        sources.pump()

    with passing(request("a")):
        cluster.write(gadget, lambda: cluster.inner.create(gadget), before_answer=deleted_while_the_watch_expired)
    assert drain(queue) == ["a"]
    assert len(sources.echoes or []) == 0


def test_a_child_a_pass_created_and_someone_deleted_before_its_kind_s_watch_opened_wakes_the_order() -> None:
    """Decision 45: a kind's watch opens with its order kind's first order, and a pass may write that kind before
    the watch's first list (its reads gave up waiting for the list). A child created so and deleted before that
    list is in neither the list nor the cache: the list wakes its writer, as a watch open at start would have."""
    kind = widget_kind(FakeWatch("Gadget", mapping="labels"))
    queue = WorkQueue(SimulatedClock(START))
    sources = Sources({kind.key: kind}, queue, log=LOG)
    sources.echoes = Echoes(lambda request, kind: queue.add(request))
    sources.defer_unused = True
    cluster = ReportingCluster(memory())
    sources.add_cluster("", cluster)
    sources.pump()
    assert sorted(i.kind for i in sources.informers()) == ["Widget"]
    cluster.create(obj("Widget", "a"))
    sources.pump()
    assert drain(queue) == ["a"]
    assert sorted((i.kind, i.listed) for i in sources.informers()) == [("Gadget", False), ("Widget", True)]
    gadget = obj("Gadget", "g", **CHILD)
    with passing(request("a")):
        cluster.write(gadget, lambda: cluster.inner.create(gadget))
    cluster.inner.delete(gadget["apiVersion"], "Gadget", "ns", "g")
    sources.pump()
    assert drain(queue) == ["a"]


def test_a_re_list_wakes_no_writer_of_an_object_outside_its_labels_or_written_after_it() -> None:
    """A label-scoped watch's list does not hold what its selector leaves out, and a list answered before a write
    cannot hold it (the watch from the list's resourceVersion carries its echo): neither wakes the writer."""
    echoes_woke: list[Request] = []
    echoes = Echoes(lambda request, kind: echoes_woke.append(request))
    api = obj("Gadget", "g")["apiVersion"]
    with passing(request("a")):
        for name, labels, rv in (("g", {"tier": "other"}, "5"), ("h", {"tier": "gold"}, "9")):
            ticket = echoes.sending("", api, "Gadget", "ns", name)
            assert ticket is not None
            echoes.answered(ticket, {"metadata": {"name": name, "resourceVersion": rv, "labels": labels}})
    gold = parse_labels("tier=gold").matches
    echoes.listed("", api, "Gadget", "ns", gold, set(), "7")
    assert echoes_woke == [] and len(echoes) == 2
    echoes.listed("", api, "Gadget", "elsewhere", gold, set(), "10")
    assert echoes_woke == [] and len(echoes) == 2
    echoes.listed("", api, "Gadget", "ns", gold, set(), "10")
    assert echoes_woke == [request("a")] and len(echoes) == 1


@pytest.mark.parametrize(("answered_at", "labels", "wakes"), [
    ("12", {"tier": "gold"}, False),  # the list was answered before the write took effect: its echo is to come
    ("9", {"tier": "other"}, False),  # the write left the object outside the list's labels
    ("9", {"tier": "gold"}, True),    # the list came after the write and did not hold the object: it went
])
def test_a_list_while_a_write_is_in_flight_is_judged_at_the_answer(answered_at: str, labels: dict[str, str],
                                                                   wakes: bool) -> None:
    woke: list[Request] = []
    echoes = Echoes(lambda request, kind: woke.append(request))
    api = obj("Gadget", "g")["apiVersion"]
    with passing(request("a")):
        ticket = echoes.sending("", api, "Gadget", "ns", "g")
        assert ticket is not None
        echoes.listed("", api, "Gadget", "ns", parse_labels("tier=gold").matches, set(), "10")
        echoes.answered(ticket, {"metadata": {"name": "g", "resourceVersion": answered_at, "labels": labels}})
    assert woke == ([request("a")] if wakes else [])
    assert len(echoes) == (0 if wakes else 1)


# -- events that arrive while the order's pass runs -------------------------------------------------


@contextlib.contextmanager
def run_pass(queue: WorkQueue, sources: Sources, order: Request) -> Iterator[None]:
    """The order's pass, as the controller runs it: handed out, its reads recorded, then done."""
    assert sources.echoes is not None and queue.pop_ready() == order
    token = CURRENT_PASS.set(order)
    reading = sources.echoes.begin(order)
    try:
        yield
    finally:
        sources.echoes.end(reading)
        CURRENT_PASS.reset(token)
        queue.done(order)


def edit(cluster: ReportingCluster, name: str, **spec: Any) -> Obj:
    """Someone else changes a child of order a (K-ORC sets a status, say)."""
    gadget = cluster.inner.get(obj("Gadget", name)["apiVersion"], "Gadget", "ns", name)
    return cluster.inner.update({**gadget, "spec": spec})


def read_gadget(cluster: ReportingCluster, name: str) -> Obj | None:
    try:
        return cluster.get(obj("Gadget", name)["apiVersion"], "Gadget", "ns", name)
    except NotFound:
        return None


def child_world() -> tuple[ReportingCluster, Sources, WorkQueue]:
    cluster, sources, queue = world()
    cluster.inner.create(obj("Gadget", "g", **CHILD))
    sources.pump()
    assert drain(queue) == ["a"]
    queue.add(request("a"))
    return cluster, sources, queue


def test_an_event_the_running_pass_read_afterwards_does_not_run_it_again() -> None:
    """K-ORC marks the User Available while the pass runs, and the pass then reads it Available: that
    pass already acted on it, so no pass follows that would find nothing to do."""
    cluster, sources, queue = child_world()
    with run_pass(queue, sources, request("a")):
        edit(cluster, "g", available=True)
        sources.pump()
        assert read_gadget(cluster, "g") is not None
    assert drain(queue) == []


def test_an_event_after_the_running_pass_read_the_object_runs_it_again() -> None:
    cluster, sources, queue = child_world()
    with run_pass(queue, sources, request("a")):
        assert read_gadget(cluster, "g") is not None
        edit(cluster, "g", available=True)
        sources.pump()
        assert read_gadget(cluster, "g") is not None  # read again: the first read still decided
    assert drain(queue) == ["a"]


def test_an_event_on_an_object_the_running_pass_never_read_runs_it_again() -> None:
    """A list the pass made may have missed the object: only an object the pass read can be judged."""
    cluster, sources, queue = child_world()
    with run_pass(queue, sources, request("a")):
        cluster.inner.create(obj("Gadget", "h", **CHILD))
        sources.pump()
    assert drain(queue) == ["a"]


def test_a_removal_the_running_pass_found_absent_does_not_run_it_again() -> None:
    """The probe's finalizer is let go while the next pass runs, which then finds it gone."""
    cluster, sources, queue = child_world()
    with run_pass(queue, sources, request("a")):
        cluster.inner.delete(obj("Gadget", "g")["apiVersion"], "Gadget", "ns", "g")
        sources.pump()
        assert read_gadget(cluster, "g") is None
    assert drain(queue) == []


def test_a_removal_after_the_running_pass_found_it_absent_and_created_it_runs_it_again() -> None:
    """The pass reads the delivered Secret absent and creates it; someone deletes it before the pass ends.
    The pass's read saw it absent, but its own create came after: the removal is news, and no later event
    would bring the order back (the CI failure of test_watches_on_demand_http on 6fe8a19)."""
    cluster, sources, queue = child_world()
    with run_pass(queue, sources, request("a")):
        assert read_gadget(cluster, "h") is None
        gadget = obj("Gadget", "h", **CHILD)
        cluster.write(gadget, lambda: cluster.inner.create(gadget))
        sources.pump()  # the create's echo: not news
        cluster.inner.delete(gadget["apiVersion"], "Gadget", "ns", "h")
        sources.pump()
    assert drain(queue) == ["a"]


def test_a_removal_of_an_object_the_running_pass_found_present_runs_it_again() -> None:
    cluster, sources, queue = child_world()
    with run_pass(queue, sources, request("a")):
        assert read_gadget(cluster, "g") is not None
        cluster.inner.delete(obj("Gadget", "g")["apiVersion"], "Gadget", "ns", "g")
        sources.pump()
    assert drain(queue) == ["a"]


def test_an_event_between_passes_still_wakes_the_order() -> None:
    cluster, sources, queue = child_world()
    with run_pass(queue, sources, request("a")):
        assert read_gadget(cluster, "g") is not None
    edit(cluster, "g", available=True)
    sources.pump()
    assert drain(queue) == ["a"]


@pytest.mark.parametrize("told", [True, False])
def test_the_controller_tells_the_ledger_of_each_pass(told: bool) -> None:
    """``engine run`` gives the controller the ledger: a pass that reads what changed while it ran is the last."""
    cluster, sources, queue = child_world()

    def a_pass(order: Request) -> Result:
        edit(cluster, "g", available=True)
        sources.pump()
        assert read_gadget(cluster, "g") is not None
        return Result()

    controller = Controller(queue, a_pass, metrics=Metrics(CollectorRegistry()), log=LOG)
    controller.echoes = sources.echoes if told else None
    assert controller.process_next() == request("a")
    assert drain(queue) == ([] if told else ["a"])


def test_a_quiet_removal_is_known_when_the_delete_s_echo_came_before_its_answer() -> None:
    """The watch may deliver the deletionTimestamp before the delete's answer arrives; the removal after it is
    still the order's own (its rules call the child's removal quiet), so it wakes nothing."""
    woken: list[Request] = []
    echoes = Echoes(lambda request, kind: woken.append(request))
    order, gadget = request("a"), obj("Gadget", "g")
    api = gadget["apiVersion"]

    def at(rv: str, **meta: Any) -> Obj:
        return {**gadget, "metadata": {**gadget["metadata"], "resourceVersion": rv, **meta}}

    with passing(order):
        reading = echoes.begin(order)
        echoes.read("", api, "Widget", "ns", "a", obj("Widget", "a"))  # a converge pass: its order is not deleted
        ticket = echoes.sending("", api, "Gadget", "ns", "g")
        assert ticket is not None
        deleting = at("5", deletionTimestamp="2026-12-01T00:00:00Z", finalizers=["example.io/hold"])
        assert echoes.echo_of("", api, "Gadget", deleting) == order  # held for the delete in flight
        echoes.answered(ticket, deleting, deleted=True)
        echoes.end(reading)
    assert echoes.echo_of("", api, "Gadget", at("6"), quiet=lambda request: request == order) == order
    assert woken == []
