"""What only the in-memory cluster does: seeding fixtures, permissive kinds, unserving, the bounded log."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "contract"))
from contract_kit import WIDGET, WIDGET_CRD, Clock, rv, widget

from engine.cluster.api import BadRequest, Gone, Invalid, NotFound
from engine.cluster.patches import json_copy
from offline.cluster.memory import MemoryCluster

EXTERNAL = "ext.example.net/v1beta1"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memory(clock: Clock) -> MemoryCluster:
    cluster = MemoryCluster(clock=clock)
    cluster.create(WIDGET_CRD)
    return cluster


@pytest.fixture
def permissive(clock: Clock) -> MemoryCluster:
    return MemoryCluster("edge-1", clock=clock, permissive=True)


def external(name: str, namespace: str | None = "default", **fields: object) -> dict[str, object]:
    meta: dict[str, object] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": EXTERNAL, "kind": "Store", "metadata": meta, **fields}


class TestSeed:
    def test_keeps_given_metadata_and_status(self, memory: MemoryCluster) -> None:
        """Seeding keeps the metadata and status it is given, even server-owned fields."""
        meta = {"uid": "u-1", "generation": 4, "labels": {"a": "b"}, "finalizers": ["x/y"],
                "creationTimestamp": "2025-01-01T00:00:00Z", "deletionTimestamp": "2025-06-01T00:00:00Z",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Secret", "name": "o", "uid": "u-0"}]}
        seeded = memory.seed(widget("a", status={"phase": "Ready"}, **meta))
        for key, value in meta.items():
            assert seeded["metadata"][key] == value
        assert seeded["status"] == {"phase": "Ready"}
        assert memory.get(WIDGET, "Widget", "default", "a") == seeded

    def test_fills_what_is_missing(self, memory: MemoryCluster, clock: Clock) -> None:
        """A seeded object gets a uid, generation 1, creationTimestamp now and a resourceVersion."""
        clock.advance(5)
        meta = memory.seed(widget("a"))["metadata"]
        assert meta["uid"] and meta["generation"] == 1 and rv(memory.get(WIDGET, "Widget", "default", "a")) > 0
        assert meta["creationTimestamp"] == "2026-01-01T00:00:05Z"

    def test_skips_admission(self, memory: MemoryCluster) -> None:
        """Seeded objects are stored as given, even where admission would reject them."""
        assert memory.seed(widget("a", spec={"size": -5}))["spec"] == {"size": -5}

    def test_records_an_event(self, memory: MemoryCluster) -> None:
        """Seeding is visible to watches as ADDED, reseeding as MODIFIED."""
        start = memory.list(WIDGET, "Widget").resource_version
        memory.seed(widget("a"))
        memory.seed(widget("a", spec={"size": 2}))
        events = list(memory.watch(WIDGET, "Widget", resource_version=start, timeout=0))
        assert [e["type"] for e in events] == ["ADDED", "MODIFIED"]

    def test_seeding_a_crd_installs_it(self, clock: Clock) -> None:
        """A seeded CRD serves its kind like a created one."""
        cluster = MemoryCluster(clock=clock)
        cluster.seed(WIDGET_CRD)
        assert cluster.resource_info(WIDGET, "Widget").plural == "widgets"


class TestMarkingDeletedBumpsGeneration:
    def test_delete_with_finalizer(self, memory: MemoryCluster) -> None:
        """As the API server's markAsDeleting, setting deletionTimestamp bumps generation once."""
        memory.create(widget("a", finalizers=["x/y"]))
        assert memory.delete(WIDGET, "Widget", "default", "a")["metadata"]["generation"] == 2  # type: ignore[index]
        assert memory.delete(WIDGET, "Widget", "default", "a")["metadata"]["generation"] == 2  # type: ignore[index]


class TestPermissive:
    def test_unknown_kind_is_served(self, permissive: MemoryCluster) -> None:
        """Without a CRD, an external kind is served with a guessed plural, namespaced when given a namespace."""
        created = permissive.create(external("s", spec={"a": 1}))
        assert created["metadata"]["generation"] == 1
        info = permissive.resource_info(EXTERNAL, "Store")
        assert (info.plural, info.namespaced, info.status_subresource) == ("stores", True, True)
        assert permissive.serves(EXTERNAL, "Store")

    def test_status_subresource(self, permissive: MemoryCluster) -> None:
        """A spec change bumps generation, a status write leaves spec alone, an update ignores status."""
        permissive.create(external("s", spec={"a": 1}))
        assert permissive.patch(EXTERNAL, "Store", "default", "s", {"spec": {"a": 2}})["metadata"]["generation"] == 2
        status = permissive.patch(EXTERNAL, "Store", "default", "s", {"status": {"ok": True}, "spec": {"a": 3}},
                                  status=True)
        assert (status["spec"], status["status"], status["metadata"]["generation"]) == ({"a": 2}, {"ok": True}, 2)
        body = external("s", spec={"a": 2}, status={"ok": False})
        body["metadata"]["resourceVersion"] = status["metadata"]["resourceVersion"]
        updated = permissive.update(body)
        assert updated["status"] == {"ok": True}

    def test_not_found_names_guessed_resource(self, permissive: MemoryCluster) -> None:
        """A missing object of a permissive kind is worded with plural.group."""
        with pytest.raises(NotFound, match=r'^stores\.ext\.example\.net "x" not found$'):
            permissive.get(EXTERNAL, "Store", "default", "x")

    def test_cluster_scoped_without_namespace(self, permissive: MemoryCluster) -> None:
        """An object without a namespace is stored cluster-scoped."""
        permissive.create(external("c", None))
        assert permissive.get(EXTERNAL, "Store", None, "c")["metadata"]["name"] == "c"
        assert [o["metadata"]["name"] for o in permissive.list(EXTERNAL, "Store").items] == ["c"]

    def test_installed_crd_wins(self, permissive: MemoryCluster) -> None:
        """Once a CRD is installed, its schema and served versions apply, not the permissive guess."""
        permissive.create(WIDGET_CRD)
        assert not permissive.serves("example.com/v2", "Widget")
        with pytest.raises(Invalid, match=r"spec\.size"):
            permissive.create(widget("a", spec={"size": -1}))

    def test_strict_cluster_refuses(self, clock: Clock) -> None:
        """Without permissive, the same kind is NotFound."""
        with pytest.raises(NotFound, match="the server could not find the requested resource"):
            MemoryCluster(clock=clock).create(external("s"))


class TestResources:
    def test_lists_served_kinds(self, memory: MemoryCluster) -> None:
        """resources() lists built-in and CRD kinds, without unserved ones."""
        memory.unserve("v1", "ConfigMap")
        kinds = [(i.api_version, i.kind) for i in memory.resources()]
        assert ("example.com/v1", "Widget") in kinds
        assert ("v1", "Secret") in kinds
        assert ("v1", "ConfigMap") not in kinds
        assert kinds == sorted(kinds)

    def test_permissive_kinds_with_objects(self, permissive: MemoryCluster) -> None:
        """A permissive cluster lists the guessed kinds it holds objects of."""
        permissive.create(external("s"))
        info = next(i for i in permissive.resources() if i.kind == "Store")
        assert (info.plural, info.namespaced) == ("stores", True)


class TestUnserve:
    def test_every_call_is_not_found(self, memory: MemoryCluster) -> None:
        """An unserved kind answers NotFound to reads, writes, watches and discovery."""
        memory.create(widget("a"))
        memory.unserve(WIDGET, "Widget")
        assert not memory.serves(WIDGET, "Widget")
        calls = [
            lambda: memory.get(WIDGET, "Widget", "default", "a"),
            lambda: memory.list(WIDGET, "Widget"),
            lambda: memory.create(widget("b")),
            lambda: memory.patch(WIDGET, "Widget", "default", "a", {"spec": {}}),
            lambda: memory.apply(widget("a"), field_manager="m"),
            lambda: memory.delete(WIDGET, "Widget", "default", "a"),
            lambda: memory.watch(WIDGET, "Widget", timeout=0),
            lambda: memory.resource_info(WIDGET, "Widget"),
        ]
        for call in calls:
            with pytest.raises(NotFound, match="the server could not find the requested resource"):
                call()

    def test_serve_again_keeps_objects(self, memory: MemoryCluster) -> None:
        """serve undoes unserve; the objects were kept."""
        memory.create(widget("a"))
        memory.unserve(WIDGET, "Widget")
        memory.serve(WIDGET, "Widget")
        assert memory.get(WIDGET, "Widget", "default", "a")["metadata"]["name"] == "a"

    def test_unserve_permissive_kind(self, permissive: MemoryCluster) -> None:
        """A permissive cluster can also refuse a kind."""
        permissive.unserve(EXTERNAL, "Store")
        with pytest.raises(NotFound):
            permissive.create(external("s"))


class TestEventLog:
    def test_too_old_resource_version_is_gone(self, clock: Clock) -> None:
        """A resourceVersion older than the bounded event log is Gone (410); a recent one still works."""
        cluster = MemoryCluster(clock=clock, event_log_size=3)
        cluster.create(WIDGET_CRD)
        first = cluster.create(widget("a"))
        for size in range(2, 6):
            cluster.patch(WIDGET, "Widget", "default", "a", {"spec": {"size": size}})
        with pytest.raises(Gone) as caught:
            cluster.watch(WIDGET, "Widget", resource_version=first["metadata"]["resourceVersion"], timeout=0)
        assert caught.value.code == 410
        assert caught.value.message.startswith("too old resource version: ")
        recent = cluster.list(WIDGET, "Widget").resource_version
        assert list(cluster.watch(WIDGET, "Widget", resource_version=str(int(recent) - 2), timeout=0))

    def test_list_then_watch_recovers(self, clock: Clock) -> None:
        """After Gone, a fresh list gives a resourceVersion to watch from again."""
        cluster = MemoryCluster(clock=clock, event_log_size=2)
        cluster.create(WIDGET_CRD)
        for name in "abcd":
            cluster.create(widget(name))
        listed = cluster.list(WIDGET, "Widget")
        cluster.create(widget("e"))
        events = list(cluster.watch(WIDGET, "Widget", resource_version=listed.resource_version, timeout=0))
        assert [e["object"]["metadata"]["name"] for e in events] == ["e"]


class TestThreads:
    def test_concurrent_writers(self, memory: MemoryCluster) -> None:
        """Writers on several threads never share a resourceVersion or lose an object."""
        versions: list[int] = []
        lock = threading.Lock()

        def write(index: int) -> None:
            for n in range(25):
                created = memory.create(widget(f"w{index}-{n}"))
                with lock:
                    versions.append(rv(created))

        threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(set(versions)) == 150
        assert len(memory.list(WIDGET, "Widget").items) == 150

    def test_blocking_watch_ends_when_closed(self, memory: MemoryCluster) -> None:
        """A watch without timeout delivers events as they come and stops when the consumer closes it."""
        stream = memory.watch(WIDGET, "Widget", resource_version=memory.list(WIDGET, "Widget").resource_version)
        writer = threading.Timer(0.02, lambda: memory.create(widget("a")))
        writer.start()
        event = next(stream)
        writer.join()
        stream.close()  # type: ignore[attr-defined]
        assert event["type"] == "ADDED"


def test_uid_factory_makes_uids_repeatable() -> None:
    """A cluster given a uid factory stamps its uids, so two runs of one script agree."""
    import datetime as dt
    import itertools

    from offline.clock import SimulatedClock

    def run() -> list[str]:
        counter = itertools.count()
        cluster = MemoryCluster("", clock=SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC)),
                                uids=lambda: f"uid-{next(counter)}")
        first = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}})
        second = cluster.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "n"}})
        return [first["metadata"]["uid"], second["metadata"]["uid"]]

    assert run() == run() == ["uid-0", "uid-1"]


def test_secret_created_without_a_type_reads_opaque() -> None:
    """As on the API server, a Secret created without a type is stored as Opaque."""
    import datetime as dt

    from offline.clock import SimulatedClock

    cluster = MemoryCluster("", clock=SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC)))
    stored = cluster.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}})
    assert stored["type"] == "Opaque"


class TestInputLimits:
    """Bodies the in-memory admission must answer, not crash on."""

    def test_an_integer_beyond_int64_is_invalid(self, memory: MemoryCluster) -> None:
        with pytest.raises(Invalid) as refused:
            memory.create(widget("big", spec={"size": 10**30}))
        assert "spec.size in body must be of type integer" in str(refused.value)

    @staticmethod
    def deep(levels: int) -> object:
        nested: object = 1
        for _ in range(levels):
            nested = {"a": nested}
        return nested

    def test_a_body_nested_5000_deep_is_a_bad_request(self, memory: MemoryCluster) -> None:
        body = widget("deep", spec={"size": 1, "x": self.deep(5000)})
        with pytest.raises(BadRequest, match="nests objects and lists deeper than"):
            memory.create(body)
        with pytest.raises(BadRequest, match="nests objects and lists deeper than"):
            memory.apply(body, field_manager="test")
        memory.create(widget("deep"))
        with pytest.raises(BadRequest, match="nests objects and lists deeper than"):
            memory.patch(WIDGET, "Widget", "default", "deep", {"spec": {"x": self.deep(5000)}})

    def test_a_body_nested_150_deep_is_stored(self, memory: MemoryCluster) -> None:
        memory.create(widget("fine", spec={"size": 1, "x": self.deep(150)}))
        memory.patch(WIDGET, "Widget", "default", "fine", {"spec": {"size": 2}})


class TestPutWithManagedFields:
    """What a PUT's body says of managedFields, as the API server reads it (fieldmanager.decodeLiveOrNew)."""

    @staticmethod
    def managers(obj: dict[str, Any]) -> set[tuple[str, str]]:
        return {(row["manager"], row["operation"]) for row in obj["metadata"].get("managedFields") or []}

    @pytest.fixture
    def cluster(self) -> MemoryCluster:
        cluster = MemoryCluster("", clock=Clock())
        cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
                       "data": {"a": "1"}}, field_manager="owner")
        live = json_copy(cluster.get("v1", "ConfigMap", "default", "c"))
        live["data"]["b"] = "2"
        cluster.update(live, field_manager="editor")
        return cluster

    def test_absent_keeps_the_stored_entries(self, cluster: MemoryCluster) -> None:
        live = json_copy(cluster.get("v1", "ConfigMap", "default", "c"))
        del live["metadata"]["managedFields"]
        live["data"]["c"] = "3"
        assert self.managers(cluster.update(live, field_manager="third")) == {
            ("owner", "Apply"), ("editor", "Update"), ("third", "Update")}

    def test_a_list_replaces_the_stored_entries(self, cluster: MemoryCluster) -> None:
        live = json_copy(cluster.get("v1", "ConfigMap", "default", "c"))
        live["metadata"]["managedFields"] = [
            row for row in live["metadata"]["managedFields"] if row["operation"] == "Apply"]
        live["data"]["c"] = "3"
        assert self.managers(cluster.update(live, field_manager="third")) == {("owner", "Apply"), ("third", "Update")}

    def test_an_empty_list_resets_them_even_when_nothing_else_changes(self, cluster: MemoryCluster) -> None:
        live = json_copy(cluster.get("v1", "ConfigMap", "default", "c"))
        live["metadata"]["managedFields"] = []
        assert self.managers(cluster.update(live, field_manager="third")) == set()
        assert self.managers(cluster.get("v1", "ConfigMap", "default", "c")) == set()

    def test_entries_it_cannot_read_keep_the_stored_ones(self, cluster: MemoryCluster) -> None:
        live = json_copy(cluster.get("v1", "ConfigMap", "default", "c"))
        live["metadata"]["managedFields"] = [{"manager": "x", "operation": "Delete"}]
        assert self.managers(cluster.update(live, field_manager="third")) == {("owner", "Apply"), ("editor", "Update")}
