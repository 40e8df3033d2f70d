"""Event sources: list then watch each kind, map events through the compiled watches, keep the order index."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from prometheus_client import CollectorRegistry
from runtime_kit import (
    API,
    ORDER,
    OWNER_LABEL,
    START,
    FailingWatch,
    FakeKind,
    FakeWatch,
    memory,
    obj,
    request,
    widget_kind,
)

from engine.cluster.api import Cluster, Obj, ServerError
from engine.expr.errors import ExprError
from engine.metrics import Metrics
from engine.outcome import Request
from engine.runtime.kinds import Index
from engine.runtime.queue import WorkQueue
from engine.runtime.watches import Sources
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster

LOG = logging.getLogger("tests.runtime")


class PoisonWatch(FakeWatch):
    """A watch whose mapping expression fails on every object."""

    def requests(self, obj: Obj, cluster: str, index: Index) -> list[Request]:
        raise ExprError("metadata.labels.owner", "expected a string, got object")


def sources_for(kind: FakeKind, **clusters: Cluster) -> tuple[Sources, WorkQueue]:
    """Sources over the given clusters (keyword ``management`` is the cluster "")."""
    queue = WorkQueue(SimulatedClock(START))
    sources = Sources({kind.key: kind}, queue, log=LOG)
    for name, cluster in clusters.items():
        sources.add_cluster("" if name == "management" else name, cluster)
    return sources, queue


def drain(queue: WorkQueue) -> list[str]:
    """Names of every waiting request, taking them out."""
    names = []
    while (req := queue.pop_ready()) is not None:
        names.append(f"{req.cluster}:{req.namespace}/{req.name}")
        queue.done(req)
    return names


def test_the_first_pump_queues_every_order() -> None:
    """The initial list queues each order present, as an informer's initial list does."""
    cluster = memory()
    for name in ("a", "b"):
        cluster.create(obj("Widget", name))
    sources, queue = sources_for(widget_kind(), management=cluster)
    assert sources.pump() == 2
    assert drain(queue) == [":ns/a", ":ns/b"]
    assert sources.pump() == 0
    assert queue.depth == 0


def test_changes_after_the_list_are_mapped() -> None:
    """Creations, updates and deletions after the list each wake the order."""
    cluster = memory()
    sources, queue = sources_for(widget_kind(), management=cluster)
    sources.pump()
    cluster.create(obj("Widget", "a", spec={"x": 1}))
    assert sources.pump() == 1
    assert drain(queue) == [":ns/a"]
    cluster.patch(API, "Widget", "ns", "a", {"spec": {"x": 2}})
    cluster.delete(API, "Widget", "ns", "a")
    assert sources.pump() == 2
    assert drain(queue) == [":ns/a"]


def test_the_predicate_sees_the_last_seen_object() -> None:
    """An update passes only when the watched part changed between the cached and the new object."""
    child = FakeWatch("Gadget", mapping="labels", changed=lambda o: o.get("spec"))
    cluster = memory()
    cluster.create(obj("Gadget", "g", labels={OWNER_LABEL: "ns.a"}, spec={"size": 1}))
    sources, queue = sources_for(widget_kind(child), management=cluster)
    sources.pump()
    assert drain(queue) == [":ns/a"]
    cluster.patch(API, "Gadget", "ns", "g", {"metadata": {"annotations": {"note": "x"}}})
    sources.pump()
    assert drain(queue) == []
    old, new = child.seen[-1]
    assert old is not None and new is not None
    assert "annotations" not in old["metadata"] and new["metadata"]["annotations"] == {"note": "x"}
    cluster.patch(API, "Gadget", "ns", "g", {"spec": {"size": 2}})
    sources.pump()
    assert drain(queue) == [":ns/a"]


def test_a_deletion_passes_with_no_new_object() -> None:
    """A deletion reaches the predicate as (last seen, None) and maps the deleted object."""
    child = FakeWatch("Gadget", mapping="labels")
    cluster = memory()
    cluster.create(obj("Gadget", "g", labels={OWNER_LABEL: "ns.a"}))
    sources, queue = sources_for(widget_kind(child), management=cluster)
    sources.pump()
    drain(queue)
    cluster.delete(API, "Gadget", "ns", "g")
    sources.pump()
    assert drain(queue) == [":ns/a"]
    old, new = child.seen[-1]
    assert old is not None and old["metadata"]["name"] == "g" and new is None


def test_the_index_fans_out_to_the_orders_that_reference_a_hub() -> None:
    """A hub event wakes exactly the management cluster's orders whose index key names it, as it is now."""
    hub = FakeWatch("Hub", mapping="index", clusters="management")
    cluster = memory()
    cluster.create(obj("Widget", "a", spec={"hub": "h1"}))
    cluster.create(obj("Widget", "b", spec={"hub": "h2"}))
    cluster.create(obj("Widget", "c", namespace="other", spec={"hub": "h1"}))
    cluster.create(obj("Hub", "h1"))
    sources, queue = sources_for(widget_kind(hub), management=cluster)
    sources.pump()
    drain(queue)
    cluster.patch(API, "Hub", "ns", "h1", {"spec": {"ready": True}})
    sources.pump()
    assert drain(queue) == [":ns/a", ":other/c"]
    cluster.patch(API, "Widget", "ns", "a", {"spec": {"hub": "h2"}})
    cluster.delete(API, "Widget", "other", "c")
    sources.pump()
    drain(queue)
    cluster.patch(API, "Hub", "ns", "h1", {"spec": {"ready": False}})
    sources.pump()
    assert drain(queue) == []
    assert sources.index.lookup(ORDER, "h2") == [("", "ns", "a"), ("", "ns", "b")]


def test_a_poison_order_is_skipped_for_the_index_logged_counted_and_still_queued(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An order whose index expression fails: the event is logged at error and counted, the order is queued
    by its key and kept in the cache, the watch moves on, and the good orders beside it keep their index."""
    hub = FakeWatch("Hub", mapping="index", clusters="management")
    cluster = memory()
    cluster.create(obj("Widget", "good", spec={"hub": "h1"}))
    cluster.seed(obj("Widget", "bad", spec={"hub": ["h1"]}))
    cluster.create(obj("Hub", "h1"))
    metrics = Metrics(CollectorRegistry())
    queue = WorkQueue(SimulatedClock(START))
    kind = widget_kind(hub)
    sources = Sources({kind.key: kind}, queue, log=LOG, metrics=metrics)
    sources.add_cluster("", cluster)
    with caplog.at_level(logging.ERROR, logger=LOG.name):
        sources.pump()
    assert drain(queue) == [":ns/bad", ":ns/good"]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "Widget ns/bad on the management cluster" in errors[0]
    assert "rules/widget.yaml:7:11" in errors[0] and "spec.hub" in errors[0]
    assert metrics.registry.get_sample_value("c5c3_operator_watch_event_errors_total", {"kind": "Widget"}) == 1
    informer = next(i for i in sources.informers() if i.kind == "Widget")
    assert informer.cached()[("ns", "bad")]["spec"] == {"hub": ["h1"]}
    cluster.seed(obj("Widget", "bad", spec={"hub": ["h2"]}, labels={"touched": "yes"}))
    cluster.create(obj("Widget", "later", spec={"hub": "h1"}))
    assert sources.pump() == 2
    assert drain(queue) == [":ns/bad", ":ns/later"]
    assert sources.pump() == 0  # the watch moved past the bad event: nothing replays
    cluster.patch(API, "Hub", "ns", "h1", {"spec": {"ready": True}})
    sources.pump()
    assert drain(queue) == [":ns/good", ":ns/later"]
    assert metrics.registry.get_sample_value("c5c3_operator_watch_event_errors_total", {"kind": "Widget"}) == 2


def test_a_watch_mapping_that_fails_on_an_object_skips_only_that_watch() -> None:
    """A mapping expression that fails on a child's data is skipped even in deterministic mode (no bug)."""
    metrics = Metrics(CollectorRegistry())
    cluster = memory()
    kind = widget_kind(PoisonWatch("Gadget", mapping="labels"), FakeWatch("Gadget", mapping="labels"))
    queue = WorkQueue(SimulatedClock(START))
    sources = Sources({kind.key: kind}, queue, log=LOG, metrics=metrics)
    sources.add_cluster("", cluster)
    sources.pump()
    cluster.create(obj("Gadget", "g", labels={OWNER_LABEL: "ns.a"}))
    assert sources.pump() == 1
    assert drain(queue) == [":ns/a"]
    assert metrics.registry.get_sample_value("c5c3_operator_watch_event_errors_total", {"kind": "Gadget"}) == 1
    assert sources.pump() == 0


def test_target_clusters_get_only_watches_for_all_clusters() -> None:
    """A management-only watch is not built on a target cluster; target events carry the cluster's name."""
    hub = FakeWatch("Hub", mapping="index", clusters="management")
    management, edge = memory(), memory("edge")
    edge.create(obj("Widget", "a"))
    edge.create(obj("Hub", "h1"))
    sources, queue = sources_for(widget_kind(hub), management=management, edge=edge)
    assert [i.kind for i in sources.informers("edge")] == ["Widget"]
    assert sorted(i.kind for i in sources.informers("")) == ["Hub", "Widget"]
    sources.pump()
    assert drain(queue) == ["edge:ns/a"]


def test_removing_a_cluster_stops_its_events() -> None:
    """After remove_cluster, the cluster's changes wake nothing."""
    management, edge = memory(), memory("edge")
    sources, queue = sources_for(widget_kind(), management=management, edge=edge)
    sources.pump()
    sources.remove_cluster("edge")
    edge.create(obj("Widget", "a"))
    sources.pump()
    assert drain(queue) == []
    assert sources.informers("edge") == []


def test_a_kind_served_later_is_watched_without_restart() -> None:
    """An unserved kind is skipped at each pump and listed at the first pump after it is served."""
    cluster = memory()
    cluster.create(obj("Gadget", "g", labels={OWNER_LABEL: "ns.a"}))
    cluster.unserve(API, "Gadget")
    sources, queue = sources_for(widget_kind(FakeWatch("Gadget", mapping="labels")), management=cluster)
    assert sources.pump() == 0
    assert sources.pump() == 0
    cluster.serve(API, "Gadget")
    assert sources.pump() == 1
    assert drain(queue) == [":ns/a"]
    cluster.patch(API, "Gadget", "ns", "g", {"spec": {"size": 3}})
    assert sources.pump() == 1


def test_a_kind_unserved_while_watched_is_relisted_when_served_again() -> None:
    """A kind whose watch answers NotFound is re-checked, and re-listed (deletions included) once served."""
    cluster = memory()
    cluster.create(obj("Widget", "a"))
    sources, queue = sources_for(widget_kind(), management=cluster)
    sources.pump()
    drain(queue)
    cluster.unserve(API, "Widget")
    assert sources.pump() == 0
    cluster.serve(API, "Widget")
    cluster.create(obj("Widget", "b"))
    cluster.delete(API, "Widget", "ns", "a")
    sources.pump()
    assert sorted(drain(queue)) == [":ns/a", ":ns/b"]  # "a" had a pass: it waits in the returning line


def test_gone_relists_and_maps_what_vanished() -> None:
    """A watch too far behind (410 Gone) re-lists; objects missing from the new list map as deletions."""
    clock = SimulatedClock(START)
    cluster = MemoryCluster("", clock=clock, permissive=True, event_log_size=2)
    cluster.create(obj("Widget", "a"))
    cluster.create(obj("Widget", "b"))
    sources, queue = sources_for(widget_kind(), management=cluster)
    sources.pump()
    drain(queue)
    cluster.delete(API, "Widget", "ns", "a")
    for name in ("c", "d", "e"):
        cluster.create(obj("Widget", name))
    assert sources.pump() == 4
    assert drain(queue) == [":ns/a", ":ns/c", ":ns/d", ":ns/e"]  # "a" had a pass: the returning line goes first
    assert sorted(k[1] for k in sources.informers("")[0].cached()) == ["b", "c", "d", "e"]


def test_a_failing_watch_is_tried_again_at_the_next_pump() -> None:
    """An API error from watch loses no event: the next pump resumes from the last resourceVersion."""
    inner = memory()
    cluster = FailingWatch(inner, ServerError("try later"), times=0)
    sources, queue = sources_for(widget_kind(), management=cluster)  # type: ignore[arg-type]
    sources.pump()
    cluster.times = 1
    inner.create(obj("Widget", "a"))
    assert sources.pump() == 0
    assert sources.pump() == 1
    assert drain(queue) == [":ns/a"]


def test_threaded_sources_feed_the_queue_and_stop() -> None:
    """In threaded mode each informer's thread maps events as they happen; stop ends the threads."""
    cluster = memory()
    cluster.create(obj("Widget", "a"))
    sources, queue = sources_for(widget_kind(), management=cluster)
    sources.start(watch_timeout=0.2, recheck=0.05)
    assert queue.get(timeout=5) == request("a")
    queue.done(request("a"))
    cluster.create(obj("Widget", "b"))
    assert queue.get(timeout=5) == request("b")
    began = time.monotonic()
    sources.stop()
    assert time.monotonic() - began < 2
    assert not any(i.thread is not None and i.thread.is_alive() for i in sources.informers())
    assert not any(t.name.startswith("informer") for t in threading.enumerate())


def test_a_label_scoped_kind_is_watched_per_label_and_holds_only_labelled_objects() -> None:
    """The rules scope Gadgets by label: one label-selected informer per key; unlabelled Gadgets are never
    held or mapped; a Gadget that loses its label leaves the cache and still wakes its order."""
    other = "example.io/other"
    kind = FakeKind(watches=(FakeWatch("Widget"), FakeWatch("Gadget", mapping="labels")),
                    label_scopes=((API, "Gadget", OWNER_LABEL), (API, "Gadget", other)))
    cluster = memory()
    cluster.create(obj("Gadget", "mine", labels={OWNER_LABEL: "ns.a"}))
    cluster.create(obj("Gadget", "theirs", labels={other: "x"}))
    for i in range(5):
        cluster.create(obj("Gadget", f"unrelated-{i}"))
    queue = WorkQueue(SimulatedClock(START))
    sources = Sources({kind.key: kind}, queue, log=LOG)
    sources.add_cluster("", cluster)
    sources.pump()
    gadgets = sorted((i.label or "", sorted(i.cached())) for i in sources.informers() if i.kind == "Gadget")
    assert gadgets == [(OWNER_LABEL, [("ns", "mine")]), (other, [("ns", "theirs")])]
    assert drain(queue) == [":ns/a"]
    cluster.patch(API, "Gadget", "ns", "unrelated-0", {"spec": {"x": 1}})
    assert sources.pump() == 0
    cluster.patch(API, "Gadget", "ns", "mine", {"metadata": {"labels": {OWNER_LABEL: None}}})
    assert sources.pump() == 1
    assert drain(queue) == [":ns/a"]
    assert not any(("ns", "mine") in i.cached() for i in sources.informers() if i.kind == "Gadget")


def test_the_index_fans_out_to_orders_on_every_cluster() -> None:
    """Orders on target clusters are indexed too (several keys each); a hub event wakes them on their own
    cluster, and a disengaged cluster's orders leave the index."""
    hub = FakeWatch("Hub", mapping="index", clusters="management")
    management, edge = memory(), memory("edge")
    management.create(obj("Widget", "a", spec={"hub": "h1"}))
    edge.create(obj("Widget", "b", spec={"hubs": ["h2", "h1"]}))
    edge.create(obj("Widget", "c", spec={"hub": "h2"}))
    management.create(obj("Hub", "h1"))
    sources, queue = sources_for(widget_kind(hub), management=management, edge=edge)
    sources.pump()
    drain(queue)
    management.patch(API, "Hub", "ns", "h1", {"spec": {"ready": True}})
    sources.pump()
    assert drain(queue) == [":ns/a", "edge:ns/b"]
    assert sources.index.lookup(ORDER, "h2") == [("edge", "ns", "b"), ("edge", "ns", "c")]
    sources.remove_cluster("edge")
    assert sources.index.lookup(ORDER, "h1") == [("", "ns", "a")]


def test_an_update_wakes_the_orders_of_the_old_object_and_of_the_new() -> None:
    """A child relabelled from one order to another wakes both: the one it left and the one it joined."""
    child = FakeWatch("Gadget", mapping="labels")
    cluster = memory()
    cluster.create(obj("Gadget", "g", labels={OWNER_LABEL: "ns.a"}))
    sources, queue = sources_for(widget_kind(child), management=cluster)
    sources.pump()
    drain(queue)
    cluster.patch(API, "Gadget", "ns", "g", {"metadata": {"labels": {OWNER_LABEL: "ns.b"}}})
    sources.pump()
    assert sorted(drain(queue)) == [":ns/a", ":ns/b"]


def test_with_defer_unused_an_order_kind_s_watches_open_with_its_first_order() -> None:
    """``engine run`` defers the informers only order kinds without an order need: at start the order kinds alone are
    watched; a Widget's first order opens the Widget's child kinds and its label scope of Parts (not the Sprocket's) on
    every cluster, before the order is queued; what those informers list and see afterwards wakes the order. A
    Sprocket's first order (on a target cluster) opens its own."""
    sprocket_key = f"{API}/Sprocket"
    sprocket_label = "example.io/sprocket"
    widget = FakeKind(watches=(FakeWatch("Widget"), FakeWatch("Gadget", mapping="labels"),
                               FakeWatch("Part", mapping="labels")),
                      label_scopes=((API, "Part", OWNER_LABEL),))
    sprocket = FakeKind(kind="Sprocket", watches=(FakeWatch("Sprocket", order_kind=sprocket_key),
                                                  FakeWatch("Cog", mapping="labels", order_kind=sprocket_key)),
                        label_scopes=((API, "Part", sprocket_label),))
    management, edge = memory(), memory("edge")
    management.create(obj("Gadget", "made-before", labels={OWNER_LABEL: "ns.a"}))
    queue = WorkQueue(SimulatedClock(START))
    sources = Sources({widget.key: widget, sprocket.key: sprocket}, queue, log=LOG)
    sources.defer_unused = True
    sources.add_cluster("", management)
    sources.add_cluster("edge", edge)

    def watched() -> list[tuple[str, str, str]]:
        return sorted((i.cluster_name, i.kind, i.label or "") for i in sources.informers())

    sources.pump()
    assert watched() == [("", "Sprocket", ""), ("", "Widget", ""), ("edge", "Sprocket", ""), ("edge", "Widget", "")]
    assert drain(queue) == []

    management.create(obj("Widget", "a"))
    sources.pump()
    assert drain(queue) == [":ns/a"]
    assert watched() == [("", "Gadget", ""), ("", "Part", OWNER_LABEL), ("", "Sprocket", ""), ("", "Widget", ""),
                         ("edge", "Gadget", ""), ("edge", "Part", OWNER_LABEL), ("edge", "Sprocket", ""),
                         ("edge", "Widget", "")]
    assert all(i.on_demand == (i.kind in ("Gadget", "Part")) for i in sources.informers())
    # Their first list shows what was there before the order, as an informer opened at start would have.
    sources.pump()
    assert drain(queue) == [":ns/a"]
    management.create(obj("Part", "p", labels={OWNER_LABEL: "ns.a"}))
    sources.pump()
    assert drain(queue) == [":ns/a"]

    edge.create(obj("Sprocket", "s"))
    sources.pump()
    assert drain(queue) == ["edge:ns/s"]
    assert ("", "Cog", "") in watched() and ("", "Part", sprocket_label) in watched()
    assert ("edge", "Cog", "") in watched()


def test_without_defer_unused_every_informer_opens_at_once() -> None:
    """Deterministic runs (``engine test``) open every informer at start, as before."""
    kind = FakeKind(watches=(FakeWatch("Widget"), FakeWatch("Gadget", mapping="labels")))
    sources, _ = sources_for(kind, management=memory())
    assert sorted(i.kind for i in sources.informers()) == ["Gadget", "Widget"]
