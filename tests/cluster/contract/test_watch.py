"""Watch: ADDED, MODIFIED and DELETED in order from a resourceVersion, filtered like a list."""

from __future__ import annotations

import threading
from typing import Any

from contract_kit import GADGET, WIDGET, Settled, exists, gadget, owner_ref, rv, secret, widget

from engine.cluster.api import Cluster, WatchEvent


def seen(events: list[WatchEvent]) -> list[tuple[str, str]]:
    """(type, name) of each event."""
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


def now(cluster: Cluster, **kwargs: Any) -> list[WatchEvent]:
    """Everything a watch of Widgets delivers without waiting."""
    return list(cluster.watch(WIDGET, "Widget", timeout=0, **kwargs))


class TestFromResourceVersion:
    def test_events_in_order(self, cluster: Cluster) -> None:
        """After a resourceVersion come exactly the later changes, in order, each with its object."""
        start = cluster.list(WIDGET, "Widget").resource_version
        cluster.create(widget("a"))
        cluster.patch(WIDGET, "Widget", "default", "a", {"spec": {"size": 2}})
        cluster.delete(WIDGET, "Widget", "default", "a")
        events = now(cluster, resource_version=start)
        assert seen(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
        assert events[1]["object"]["spec"] == {"size": 2}
        versions = [rv(e["object"]) for e in events]
        assert versions == sorted(versions) and len(set(versions)) == 3

    def test_only_later_events(self, cluster: Cluster) -> None:
        """Events at or before the given resourceVersion are not repeated."""
        created = cluster.create(widget("a"))
        cluster.patch(WIDGET, "Widget", "default", "a", {"spec": {"size": 2}})
        events = now(cluster, resource_version=created["metadata"]["resourceVersion"])
        assert seen(events) == [("MODIFIED", "a")]

    def test_other_kinds_do_not_leak(self, cluster: Cluster) -> None:
        """A watch sees its own kind only."""
        start = cluster.list(WIDGET, "Widget").resource_version
        cluster.create(secret("s"))
        cluster.create(gadget("g"))
        cluster.create(widget("a"))
        assert seen(now(cluster, resource_version=start)) == [("ADDED", "a")]

    def test_no_op_write_is_no_event(self, cluster: Cluster) -> None:
        """A write that changes nothing produces no event."""
        created = cluster.create(widget("a", labels={"x": "y"}))
        cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"labels": {"x": "y"}}})
        cluster.apply(widget("a", labels={"x": "y"}), field_manager="m")
        cluster.apply(widget("a", labels={"x": "y"}), field_manager="m")
        events = now(cluster, resource_version=created["metadata"]["resourceVersion"])
        assert [e["type"] for e in events] == ["MODIFIED"]  # the first apply takes ownership

    def test_finalizer_lifecycle(self, cluster: Cluster) -> None:
        """Delete with a finalizer is a MODIFIED; removing the finalizer is the DELETED."""
        created = cluster.create(widget("a", finalizers=["example.com/x"]))
        cluster.delete(WIDGET, "Widget", "default", "a")
        cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"finalizers": None}})
        events = now(cluster, resource_version=created["metadata"]["resourceVersion"])
        assert seen(events) == [("MODIFIED", "a"), ("DELETED", "a")]
        assert events[0]["object"]["metadata"]["deletionTimestamp"]

    def test_collected_dependents_are_deleted_events(self, cluster: Cluster, settled: Settled) -> None:
        """Garbage-collected dependents show up as DELETED."""
        owner = cluster.create(gadget("g"))
        cluster.create(widget("a", ownerReferences=[owner_ref(owner)]))
        start = cluster.list(WIDGET, "Widget").resource_version
        cluster.delete(GADGET, "Gadget", None, "g")
        settled("asynchronous-garbage-collection", lambda: not exists(cluster, WIDGET, "Widget", "default", "a"),
                "the owned Widget collected")
        assert seen(now(cluster, resource_version=start)) == [("DELETED", "a")]


class TestInitialState:
    def test_no_resource_version_lists_first(self, cluster: Cluster) -> None:
        """Without a resourceVersion, a watch starts with ADDED for every current object."""
        cluster.create(widget("b"))
        cluster.create(widget("a"))
        cluster.create(widget("c", "other"))
        assert seen(now(cluster)) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]

    def test_zero_is_the_same(self, cluster: Cluster) -> None:
        """resourceVersion "0" also starts from a state of the objects, then follows: "any" state, so a real
        server's watch cache may start a moment behind the last write and send it next (ADDED, then MODIFIED)."""
        cluster.create(widget("a"))
        cluster.patch(WIDGET, "Widget", "default", "a", {"spec": {"size": 2}})
        events = now(cluster, resource_version="0")
        assert seen(events)[0] == ("ADDED", "a")
        assert set(seen(events)[1:]) <= {("MODIFIED", "a")}
        assert events[-1]["object"]["spec"] == {"size": 2}


class TestFilters:
    def test_namespace(self, cluster: Cluster) -> None:
        """A namespaced watch sees only that namespace."""
        start = cluster.list(WIDGET, "Widget").resource_version
        cluster.create(widget("a", "one"))
        cluster.create(widget("b", "two"))
        events = list(cluster.watch(WIDGET, "Widget", "two", resource_version=start, timeout=0))
        assert seen(events) == [("ADDED", "b")]

    def test_label_selector(self, cluster: Cluster) -> None:
        """A label selector filters events; an object leaving the selection is DELETED for the watcher."""
        start = cluster.list(WIDGET, "Widget").resource_version
        cluster.create(widget("a", labels={"app": "web"}))
        cluster.create(widget("b", labels={"app": "db"}))
        cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"labels": {"app": "db"}}})
        cluster.patch(WIDGET, "Widget", "default", "b", {"metadata": {"labels": {"app": "web"}}})
        events = now(cluster, resource_version=start, labels="app=web")
        assert seen(events) == [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "b")]
        assert events[1]["object"]["metadata"]["labels"] == {"app": "web"}  # as it was when it last matched
        assert rv(events[1]["object"]) > rv(events[0]["object"])

    def test_label_selector_on_initial_state(self, cluster: Cluster) -> None:
        """The initial ADDED events honour the selector too."""
        cluster.create(widget("a", labels={"app": "web"}))
        cluster.create(widget("b"))
        assert seen(now(cluster, labels={"app": "web"})) == [("ADDED", "a")]


class TestStreaming:
    def test_bookmark_at_the_end(self, cluster: Cluster) -> None:
        """With bookmarks, a stream that ends carries a BOOKMARK with the resourceVersion reached."""
        cluster.create(widget("a"))
        last = cluster.create(secret("s"))
        events = now(cluster, bookmarks=True)
        assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
        mark = events[-1]["object"]
        assert (mark["apiVersion"], mark["kind"]) == (WIDGET, "Widget")
        assert int(mark["metadata"]["resourceVersion"]) >= rv(last)

    def test_resume_from_bookmark(self, cluster: Cluster) -> None:
        """Resuming from a bookmark's resourceVersion yields only what happened after it."""
        cluster.create(widget("a"))
        mark = now(cluster, bookmarks=True)[-1]["object"]["metadata"]["resourceVersion"]
        cluster.create(widget("b"))
        assert seen(now(cluster, resource_version=mark)) == [("ADDED", "b")]

    def test_waits_for_new_events(self, cluster: Cluster) -> None:
        """A watch with a timeout delivers an event written while it waits."""
        start = cluster.list(WIDGET, "Widget").resource_version
        stream = cluster.watch(WIDGET, "Widget", resource_version=start, timeout=10)
        writer = threading.Timer(0.05, lambda: cluster.create(widget("late")))
        writer.start()
        try:
            event = next(iter(stream))
        finally:
            writer.join()
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        assert seen([event]) == [("ADDED", "late")]

    def test_timeout_ends_the_stream(self, cluster: Cluster) -> None:
        """A short timeout with nothing happening ends the stream empty."""
        start = cluster.list(WIDGET, "Widget").resource_version
        assert list(cluster.watch(WIDGET, "Widget", resource_version=start, timeout=0.05)) == []
