"""KubeCluster's informer cache over HTTP: converged reads cost no request, writes read back at once,
the watch follows other writers, reconnects when the server ends it, and lists again after Gone."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.clock import SystemClock
from engine.cluster.api import BadRequest, NotFound, Obj
from engine.cluster.kube import KubeCluster, api_client_from_kubeconfig
from engine.cluster.kube.informer import Informer
from engine.cluster.patches import json_copy
from engine.cluster.selectors import EVERYTHING, FieldSelector
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator
from tests.cluster.kube_kit import MakeKube, Requests, eventually, names, watching


def secret(name: str, namespace: str = "default", **labels: str) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"k": "dg=="}}


class TestConvergedReads:
    def test_no_request_once_synced(self, memory: MemoryCluster, emulator: Emulator, kube: KubeCluster) -> None:
        """After the first read of a kind, gets and lists of it are answered without any HTTP request."""
        memory.create(secret("a", app="web"))
        memory.create(secret("b", "other"))
        kube.get("v1", "Secret", "default", "a")
        watching(emulator, kube)
        requests = Requests(kube)
        for _ in range(5):
            assert kube.get("v1", "Secret", "default", "a")["data"] == {"k": "dg=="}
            assert names(kube.list("v1", "Secret").items) == ["a", "b"]
            assert names(kube.list("v1", "Secret", "other").items) == ["b"]
            assert names(kube.list("v1", "Secret", labels={"app": "web"}).items) == ["a"]
            with pytest.raises(NotFound, match=r'^secrets "x" not found$'):
                kube.get("v1", "Secret", "default", "x")
        assert requests.seen == []

    def test_first_read_lists_then_watches(self, memory: MemoryCluster, kube: KubeCluster) -> None:
        """The first read of a kind lists it once and watches from the list's resourceVersion."""
        memory.create(secret("a"))
        requests = Requests(kube)
        kube.get("v1", "Secret", "default", "a")
        lists = [q for method, path, q in requests.seen if path == "/api/v1/secrets" and "watch" not in q]
        assert len(lists) == 1
        assert eventually(lambda: len(requests.watches()) == 1)
        assert requests.watches()[0]["resourceVersion"] == [kube.list("v1", "Secret").resource_version]

    def test_other_writers_arrive_through_the_watch(self, memory: MemoryCluster, kube: KubeCluster) -> None:
        """Changes made by someone else show up in the cache once the watch delivers them."""
        assert kube.list("v1", "Secret").items == []
        memory.create(secret("a"))
        assert eventually(lambda: names(kube.list("v1", "Secret").items) == ["a"])
        memory.delete("v1", "Secret", "default", "a")
        assert eventually(lambda: kube.list("v1", "Secret").items == [])

    def test_live_reads_ask_the_server(self, memory: MemoryCluster, emulator: Emulator, kube: KubeCluster) -> None:
        """live=True reads go to the API server even when the cache could answer."""
        memory.create(secret("a"))
        kube.list("v1", "Secret")
        watching(emulator, kube)
        requests = Requests(kube)
        assert kube.get("v1", "Secret", "default", "a", live=True)["metadata"]["name"] == "a"
        assert names(kube.list("v1", "Secret", live=True).items) == ["a"]
        assert [(m, p) for m, p, _ in requests.seen] == [
            ("GET", "/api/v1/namespaces/default/secrets/a"), ("GET", "/api/v1/secrets")]

    def test_unsupported_field_selector_goes_live(self, emulator: Emulator, kube: KubeCluster) -> None:
        """A field selector the cache cannot match is the server's to answer (here: refused)."""
        kube.list("v1", "Secret")
        watching(emulator, kube)
        requests = Requests(kube)
        with pytest.raises(BadRequest):
            kube.list("v1", "Secret", fields="data.k=v")
        assert requests.count() == 1


class TestReadYourWrites:
    def test_create_update_delete_read_back(self, kube: KubeCluster) -> None:
        """Each write of this cluster is visible to the very next cached read."""
        kube.list("v1", "Secret")
        created = kube.create(secret("a"))
        assert kube.get("v1", "Secret", "default", "a") == created
        changed = dict(created, data={"k": "eA=="})
        assert kube.update(changed)["data"] == {"k": "eA=="}
        assert kube.get("v1", "Secret", "default", "a")["data"] == {"k": "eA=="}
        kube.patch("v1", "Secret", "default", "a", {"metadata": {"labels": {"x": "y"}}})
        assert names(kube.list("v1", "Secret", labels="x=y").items) == ["a"]
        assert kube.delete("v1", "Secret", "default", "a") is None
        with pytest.raises(NotFound):
            kube.get("v1", "Secret", "default", "a")

    def test_list_resource_version_covers_own_writes(self, kube: KubeCluster) -> None:
        """A cached list right after writes holds them, at a resourceVersion a watch can resume from."""
        kube.list("v1", "Secret")
        written = [kube.create(secret(name)) for name in ("a", "b", "c")]
        listed = kube.list("v1", "Secret")
        assert names(listed.items) == ["a", "b", "c"]
        assert int(listed.resource_version) >= max(int(o["metadata"]["resourceVersion"]) for o in written)

    def test_last_finalizer_removed_reads_gone(self, kube: KubeCluster) -> None:
        """The write that removes a deleting object's last finalizer makes the next read NotFound."""
        kube.list("v1", "Secret")
        body = secret("a")
        body["metadata"]["finalizers"] = ["example.com/hold"]
        kube.create(body)
        assert kube.delete("v1", "Secret", "default", "a") is not None
        kube.patch("v1", "Secret", "default", "a", {"metadata": {"finalizers": None}})
        with pytest.raises(NotFound):
            kube.get("v1", "Secret", "default", "a")

    def test_managed_fields_keep_only_apply_entries(self, kube: KubeCluster, make_kube: MakeKube) -> None:
        """A cached cluster returns, of managedFields, only the Apply entries (what the engine compares
        an apply with), from reads and writes alike; a live one keeps every entry."""
        kube.list("v1", "Secret")
        kube.create(secret("a"), field_manager="person")
        applied = kube.apply(secret("a"), field_manager="engine")

        def rows(obj: Obj) -> list[tuple[str, str]]:
            return [(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields", [])]

        assert rows(applied) == [("engine", "Apply")]
        assert rows(kube.get("v1", "Secret", "default", "a")) == [("engine", "Apply")]
        live = make_kube(cache=False)
        assert sorted(rows(live.get("v1", "Secret", "default", "a"))) == [("engine", "Apply"), ("person", "Update")]


class TestScope:
    def test_namespaces_restrict_the_cache(self, memory: MemoryCluster, emulator: Emulator,
                                           make_kube: MakeKube) -> None:
        """With namespaces, reads inside them are cached; reads elsewhere and across all namespaces go live."""
        memory.create(secret("a", "tenant"))
        memory.create(secret("b", "elsewhere"))
        memory.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant"}})
        kube = make_kube(namespaces=["tenant"])
        kube.get("v1", "Secret", "tenant", "a")
        watching(emulator, kube)
        requests = Requests(kube)
        kube.get("v1", "Secret", "tenant", "a")
        assert names(kube.list("v1", "Secret", "tenant").items) == ["a"]
        assert requests.count() == 0
        kube.get("v1", "Secret", "elsewhere", "b")
        assert names(kube.list("v1", "Secret").items) == ["b", "a"]  # elsewhere/b, tenant/a
        kube.get("v1", "Namespace", None, "tenant")
        assert requests.count() == 3

    def test_cache_off_reads_live(self, memory: MemoryCluster, make_kube: MakeKube) -> None:
        """cache=False: every read is a request, and no informer runs."""
        memory.create(secret("a"))
        kube = make_kube(cache=False)
        kube.get("v1", "Secret", "default", "a")
        requests = Requests(kube)
        kube.get("v1", "Secret", "default", "a")
        kube.list("v1", "Secret")
        assert requests.count() == 2
        assert kube.informers() == []


class TestLifecycle:
    def test_synced_and_stopped(self, memory: MemoryCluster, kube: KubeCluster) -> None:
        """An informer is synced after the first read; stop ends its thread and reads go live afterwards."""
        memory.create(secret("a"))
        kube.get("v1", "Secret", "default", "a")
        (informer,) = kube.informers()
        assert informer.has_synced() and kube.has_synced()
        threads = [t for t in threading.enumerate() if t.name.startswith("informer Secret.v1")]
        kube.stop()
        assert all(not t.is_alive() for t in threads)
        assert kube.informers() == []
        assert kube.get("v1", "Secret", "default", "a")["metadata"]["name"] == "a"

    def test_unserved_kind_leaves_no_informer(self, memory: MemoryCluster, kube: KubeCluster, widget_crd: Obj) -> None:
        """A read of a kind not served is NotFound and starts nothing; once its CRD exists it is cached."""
        with pytest.raises(NotFound):
            kube.list("example.com/v1", "Widget")
        assert kube.informers() == []
        memory.create(widget_crd)
        assert kube.list("example.com/v1", "Widget").items == []
        assert len(kube.informers()) == 1

    def test_withdrawn_kind_ends_its_informer(self, memory: MemoryCluster, kube: KubeCluster, widget_crd: Obj) -> None:
        """When a kind's CRD goes, its informer ends and reads answer NotFound."""
        memory.create(widget_crd)
        kube.list("example.com/v1", "Widget")
        (informer,) = kube.informers()
        memory.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "widgets.example.com")
        assert eventually(lambda: informer.dead)
        with pytest.raises(NotFound):
            kube.list("example.com/v1", "Widget")


class TestWatchLoop:
    def test_resumes_when_the_server_ends_a_watch(self, memory: MemoryCluster, make_kube: MakeKube) -> None:
        """When the server ends a watch, the informer resumes from the resourceVersion reached, without listing."""
        kube = make_kube(watch_timeout=1)
        kube.list("v1", "Secret")
        requests = Requests(kube)
        memory.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}})
        other_kind_written = int(memory.list("v1", "ConfigMap").resource_version)
        # A watch of Secrets sees no ConfigMap event: only the bookmark ending a watch moves it past that write.
        assert eventually(lambda: any(int(query["resourceVersion"][0]) >= other_kind_written
                                      for query in requests.watches()), within=10)
        memory.create(secret("late"))
        assert eventually(lambda: names(kube.list("v1", "Secret").items) == ["late"])
        (informer,) = kube.informers()
        assert informer.relists == 0
        assert not [q for _, path, q in requests.seen if path == "/api/v1/secrets" and "watch" not in q]

    def test_survives_an_api_server_restart(self, memory: MemoryCluster, tmp_path: Path) -> None:
        """A dropped connection and refused reconnects are retried until the server is back."""
        first = Emulator(memory)
        first.start()
        port = int(first.url.rsplit(":", 1)[1])
        kube = KubeCluster("", api_client_from_kubeconfig(first.kubeconfig("test")), discovery_cache_dir=tmp_path)
        try:
            kube.list("v1", "Secret")
            first.stop()
            memory.create(secret("while-down"))
            second = Emulator(memory, port=port)
            second.start()
            try:
                assert eventually(lambda: names(kube.list("v1", "Secret").items) == ["while-down"], within=10)
            finally:
                second.stop()
        finally:
            kube.stop()

    def test_lists_again_after_gone(self, tmp_path: Path) -> None:
        """A watch from a resourceVersion compacted away is Gone; the informer lists again and watches on."""
        memory = MemoryCluster("", clock=SystemClock(), event_log_size=2)
        with Emulator(memory) as server:
            kube = KubeCluster("", api_client_from_kubeconfig(server.kubeconfig("test")), cache=False,
                               discovery_cache_dir=tmp_path)
            memory.create(secret("a"))
            stale = kube.list("v1", "Secret").resource_version
            for name in ("b", "c", "d"):
                memory.create(secret(name))
            first = iter([stale])  # the first watch starts from before the writes, as after a long outage

            def watch_from(rv: str) -> Iterator[Any]:
                return kube.watch("v1", "Secret", resource_version=next(first, rv), timeout=5, bookmarks=True)

            informer = Informer("secrets", lambda: kube.list("v1", "Secret"), watch_from,
                                log=logging.getLogger(__name__))
            informer.start()
            try:
                assert eventually(lambda: informer.relists == 1)
                memory.create(secret("e"))
                assert eventually(lambda: names(informer.store.select(None, EVERYTHING, FieldSelector())[0])
                                  == ["a", "b", "c", "d", "e"])
            finally:
                informer.stop()
                kube.stop()


OWNER_A = "a.example.com/owner"
OWNER_B = "b.example.com/owner"


class TestLabelScopes:
    """A label-scoped kind: one label-selected informer per key; only labelled objects are held."""

    @pytest.fixture
    def scoped(self, memory: MemoryCluster, make_kube: MakeKube) -> KubeCluster:
        memory.create(secret("a1", **{OWNER_A: "x"}))
        memory.create(secret("b1", "other", **{OWNER_B: "y"}))
        for i in range(20):
            memory.create(secret(f"unrelated-{i}"))
        kube = make_kube()
        kube.scope_by_labels({("v1", "Secret"): (OWNER_A, OWNER_B)})
        return kube

    def test_the_cache_holds_only_labelled_objects(self, scoped: KubeCluster) -> None:
        assert names(scoped.list("v1", "Secret", labels={OWNER_A: "x"}).items) == ["a1"]
        assert names(scoped.list("v1", "Secret", labels=OWNER_B).items) == ["b1"]
        held = sorted(name for informer in scoped.informers()
                      for name in names(informer.store.select(None, EVERYTHING, FieldSelector())[0]))
        assert held == ["a1", "b1"]

    def test_labelled_reads_cost_no_request_once_synced(self, emulator: Emulator, scoped: KubeCluster) -> None:
        scoped.get("v1", "Secret", "default", "a1")
        scoped.get("v1", "Secret", "other", "b1")
        watching(emulator, scoped)
        requests = Requests(scoped)
        for _ in range(3):
            assert scoped.get("v1", "Secret", "default", "a1")["metadata"]["name"] == "a1"
            assert scoped.get("v1", "Secret", "other", "b1")["metadata"]["name"] == "b1"
            assert names(scoped.list("v1", "Secret", "default", labels={OWNER_A: "x", "k": "v"}).items) == []
            assert names(scoped.list("v1", "Secret", labels=f"{OWNER_A} in (x,z)").items) == ["a1"]
        assert requests.seen == []

    def test_a_get_the_labelled_caches_miss_asks_the_server(self, emulator: Emulator, scoped: KubeCluster) -> None:
        """An unlabelled object exists all the same: a miss is read live, never taken as absent."""
        scoped.get("v1", "Secret", "other", "b1")
        watching(emulator, scoped)
        requests = Requests(scoped)
        assert scoped.get("v1", "Secret", "default", "unrelated-3")["metadata"]["name"] == "unrelated-3"
        with pytest.raises(NotFound):
            scoped.get("v1", "Secret", "default", "nowhere")
        assert [(m, p) for m, p, _ in requests.seen] == [
            ("GET", "/api/v1/namespaces/default/secrets/unrelated-3"),
            ("GET", "/api/v1/namespaces/default/secrets/nowhere")]

    def test_a_get_of_an_object_carrying_a_scope_label_is_answered_by_its_cache(self, emulator: Emulator,
                                                                               scoped: KubeCluster) -> None:
        """The caller says the object it wants carries a scope key: that key's cache alone answers, and a miss
        is NotFound without a request (an unlabelled object of that name is not the one wanted)."""
        scoped.get("v1", "Secret", "default", "a1")
        scoped.get("v1", "Secret", "other", "b1")
        watching(emulator, scoped)
        requests = Requests(scoped)
        assert scoped.get("v1", "Secret", "default", "a1", carries=(OWNER_A, "k"))["metadata"]["name"] == "a1"
        for name in ("unrelated-3", "nowhere"):
            with pytest.raises(NotFound, match=f'^secrets "{name}" not found$'):
                scoped.get("v1", "Secret", "default", name, carries=(OWNER_A,))
        assert requests.seen == []
        # A key that scopes no cache tells nothing: the miss is read from the server.
        assert scoped.get("v1", "Secret", "default", "unrelated-3", carries=("k",))["metadata"]["name"] == "unrelated-3"
        assert [(m, p) for m, p, _ in requests.seen] == [("GET", "/api/v1/namespaces/default/secrets/unrelated-3")]

    def test_a_list_without_a_scope_label_asks_the_server(self, emulator: Emulator, scoped: KubeCluster) -> None:
        scoped.list("v1", "Secret", labels=OWNER_A)
        watching(emulator, scoped)
        requests = Requests(scoped)
        assert len(scoped.list("v1", "Secret", "default").items) == 21
        assert len(scoped.list("v1", "Secret", labels={"k": "v"}).items) == 0
        assert len(requests.seen) == 2

    def test_own_writes_read_back_without_waiting_on_the_other_labels(self, scoped: KubeCluster) -> None:
        """A write of an object carrying one key is awaited by that key's cache only (no read goes live)."""
        scoped.list("v1", "Secret", labels=OWNER_A)
        scoped.list("v1", "Secret", labels=OWNER_B)
        requests = Requests(scoped)
        created = scoped.create(secret("a2", **{OWNER_A: "x"}))
        assert scoped.get("v1", "Secret", "default", "a2") == created
        assert names(scoped.list("v1", "Secret", labels=OWNER_B).items) == ["b1"]
        scoped.patch("v1", "Secret", "default", "a2", {"metadata": {"labels": {OWNER_A: None}}})
        assert names(scoped.list("v1", "Secret", labels=OWNER_A).items) == ["a1"]
        assert scoped.delete("v1", "Secret", "default", "a1") is None
        assert names(scoped.list("v1", "Secret", labels=OWNER_A).items) == []
        assert [m for m, _, q in requests.seen if "watch" not in q] == ["POST", "PATCH", "DELETE"]

    def test_an_object_that_gains_the_label_enters_the_cache(self, memory: MemoryCluster,
                                                             scoped: KubeCluster) -> None:
        assert names(scoped.list("v1", "Secret", labels=OWNER_A).items) == ["a1"]
        memory.patch("v1", "Secret", "default", "unrelated-0", {"metadata": {"labels": {OWNER_A: "z"}}})
        assert eventually(lambda: names(scoped.list("v1", "Secret", labels=OWNER_A).items) == ["a1", "unrelated-0"])
        memory.patch("v1", "Secret", "default", "unrelated-0", {"metadata": {"labels": {OWNER_A: None}}})
        assert eventually(lambda: names(scoped.list("v1", "Secret", labels=OWNER_A).items) == ["a1"])


class TestSharedWatch:
    """``share_watch``: the runtime's watch of a kind keeps the read cache, so the cluster opens no watch of
    its own for it (one watch per kind); reads wait for its first list, go live while the kind is lost, and
    the cluster watches by itself again once the shared watch is released."""

    @staticmethod
    def fed(kube: KubeCluster) -> Any:
        feed = kube.share_watch("v1", "Secret", None, None)
        assert feed is not None
        answer = kube.list("v1", "Secret", live=True)  # as the runtime's informer lists
        feed.replace(answer.items, answer.resource_version)
        return feed

    def test_reads_come_from_the_fed_cache_and_the_cluster_opens_no_watch(self, memory: MemoryCluster,
                                                                         kube: KubeCluster) -> None:
        memory.create(secret("a"))
        feed = self.fed(kube)
        requests = Requests(kube)
        assert kube.get("v1", "Secret", "default", "a")["metadata"]["name"] == "a"
        added = memory.create(secret("b"))
        feed.apply({"type": "ADDED", "object": added})
        assert names(kube.list("v1", "Secret").items) == ["a", "b"]
        time.sleep(0.2)
        assert requests.seen == []

    def test_a_write_is_read_back_once_the_shared_watch_delivers_it(self, memory: MemoryCluster,
                                                                    kube: KubeCluster) -> None:
        feed = self.fed(kube)
        written = kube.create(secret("mine"))
        threading.Timer(0.2, feed.apply, args=({"type": "ADDED", "object": written},)).start()
        assert kube.get("v1", "Secret", "default", "mine")["metadata"]["uid"] == written["metadata"]["uid"]

    def test_a_get_of_another_object_does_not_wait_for_a_write_on_its_way(self, memory: MemoryCluster,
                                                                          kube: KubeCluster) -> None:
        """Read-your-writes per object (decision 0041): while the watch has not delivered this cluster's write of
        one object, a get of another is answered from the cache at once (no wait, no request); the written object
        and a list are read once the watch delivers the write."""
        memory.create(secret("a"))
        feed = self.fed(kube)
        written = kube.create(secret("mine"))
        requests = Requests(kube)
        assert kube.get("v1", "Secret", "default", "a")["metadata"]["name"] == "a"
        assert requests.seen == []
        threading.Timer(0.2, feed.apply, args=({"type": "ADDED", "object": written},)).start()
        assert kube.get("v1", "Secret", "default", "mine")["metadata"]["uid"] == written["metadata"]["uid"]
        assert names(kube.list("v1", "Secret").items) == ["a", "mine"]
        assert requests.seen == []

    def test_a_list_waits_for_every_write_on_its_way(self, memory: MemoryCluster, kube: KubeCluster) -> None:
        feed = self.fed(kube)
        written = kube.create(secret("mine"))
        threading.Timer(0.2, feed.apply, args=({"type": "ADDED", "object": written},)).start()
        assert names(kube.list("v1", "Secret").items) == ["mine"]

    def test_a_list_does_not_wait_for_a_write_it_would_not_answer(self, memory: MemoryCluster,
                                                                   kube: KubeCluster) -> None:
        """A list by a selector the written object matches neither before nor after the write answers at once, from
        the cache (decision 41); one it matches waits for the watch to deliver the write."""
        memory.create(secret("other", app="y"))
        feed = self.fed(kube)
        written = kube.create(secret("mine", app="x"))
        requests = Requests(kube)
        assert names(kube.list("v1", "Secret", labels="app=y").items) == ["other"]
        assert requests.seen == []
        threading.Timer(0.2, feed.apply, args=({"type": "ADDED", "object": written},)).start()
        assert names(kube.list("v1", "Secret", labels="app=x").items) == ["mine"]
        assert requests.seen == []

    def test_a_selector_no_scope_names_is_not_shared(self, kube: KubeCluster) -> None:
        """A watch by a selector that is not one of the kind's scopes keeps no cache: no read is answered from it."""
        assert kube.share_watch("v1", "Secret", None, "sharding.c5c3.io/shard=member-a") is None
        assert kube.share_watch("v1", "Secret", None, "sharding.c5c3.io/shard") is None

    def test_a_shard_members_orders_are_the_only_ones_cached(self, memory: MemoryCluster,
                                                              kube: KubeCluster) -> None:
        """A kind scoped by a member's ``key=value`` (its orders under --sharded): the member's watch keeps the read
        cache, which holds its objects only; its gets are answered there (a miss by a caller that says the object
        carries the shard label is NotFound without a request), other reads go to the server, and the cluster
        never opens a watch, or a cache, of every object of the kind."""
        mine = "sharding.c5c3.io/shard=member-a"
        kube.scope_by_labels({("v1", "Secret"): (mine,)})
        memory.create(secret("a1", **{"sharding.c5c3.io/shard": "member-a"}))
        memory.create(secret("b1", **{"sharding.c5c3.io/shard": "member-b"}))
        memory.create(secret("none"))
        feed = kube.share_watch("v1", "Secret", None, mine)
        assert feed is not None
        answer = kube.list("v1", "Secret", labels=mine, live=True)
        feed.replace(answer.items, answer.resource_version)
        assert names(feed.store.select(None, EVERYTHING, FieldSelector())[0]) == ["a1"]
        requests = Requests(kube)
        assert kube.get("v1", "Secret", "default", "a1")["metadata"]["name"] == "a1"
        assert names(kube.list("v1", "Secret", labels=mine).items) == ["a1"]
        with pytest.raises(NotFound):
            kube.get("v1", "Secret", "default", "b1", carries=("sharding.c5c3.io/shard",))
        assert requests.count() == 0
        assert kube.get("v1", "Secret", "default", "b1")["metadata"]["name"] == "b1"  # not ours: the server
        assert names(kube.list("v1", "Secret").items) == ["a1", "b1", "none"]  # no scope answers: the server
        assert [m for m, _, _ in requests.seen] == ["GET", "GET"] and requests.watches() == []
        assert [repr(i) for i in kube.informers()] == [repr(feed)]

    def test_a_read_waits_for_the_first_list(self, kube: KubeCluster) -> None:
        feed = kube.share_watch("v1", "Secret", None, None)
        assert feed is not None
        only_listed = {**secret("listed"), "metadata": {"name": "listed", "namespace": "default",
                                                        "resourceVersion": "1"}}
        threading.Timer(0.2, feed.replace, args=([only_listed], "1")).start()
        assert kube.get("v1", "Secret", "default", "listed")["metadata"]["name"] == "listed"

    def test_lost_reads_live_and_released_watches_again(self, memory: MemoryCluster, kube: KubeCluster) -> None:
        memory.create(secret("a"))
        feed = self.fed(kube)
        feed.lost()
        requests = Requests(kube)
        kube.get("v1", "Secret", "default", "a")
        assert [(m, p) for m, p, _ in requests.seen] == [("GET", "/api/v1/namespaces/default/secrets/a")]
        feed.release()
        kube.get("v1", "Secret", "default", "a")
        assert eventually(lambda: len(requests.watches()) == 1)

    def test_a_scope_the_cache_does_not_cover_is_not_shared(self, make_kube: MakeKube) -> None:
        assert make_kube(namespaces=["default"]).share_watch("v1", "Secret", None, None) is None
        assert make_kube(namespaces=["default"]).share_watch("v1", "Secret", "other", None) is None
        assert make_kube().share_watch("v1", "Secret", "default", None) is None
        assert make_kube(cache=False).share_watch("v1", "Secret", None, None) is None
        assert make_kube(namespaces=["default"]).share_watch("v1", "Secret", "default", None) is not None


def test_cached_objects_share_their_keys(memory: MemoryCluster, kube: KubeCluster) -> None:
    """Objects decoded from different answers (a list, then a watch event) share one copy of each map key
    and short value, instead of one per object: a third of what the caches held per order."""
    memory.create(secret("a"))
    kube.list("v1", "Secret")
    memory.create(secret("b"))
    assert eventually(lambda: names(kube.list("v1", "Secret").items) == ["a", "b"])
    a, b = kube.list("v1", "Secret").items

    def key(obj: Obj, name: str) -> str:
        return next(k for k in obj["metadata"] if k == name)

    assert key(a, "resourceVersion") is key(b, "resourceVersion")
    assert key(a, "namespace") is key(b, "namespace") and a["metadata"]["namespace"] is b["metadata"]["namespace"]


def test_a_put_of_a_cached_object_keeps_every_managers_entries(memory: MemoryCluster, kube: KubeCluster) -> None:
    """The cache keeps only Apply entries of managedFields; a PUT of a cached object must not send that
    cut list back, or the API server replaces the object's managedFields with it and another
    manager's field ownership is lost."""
    memory.apply(secret("shared", app="a"), field_manager="owner")
    edited = json_copy(memory.get("v1", "Secret", "default", "shared"))
    edited["data"] = {"k": "ZWRpdGVk"}
    memory.update(edited, field_manager="editor")

    cached = json_copy(kube.get("v1", "Secret", "default", "shared"))
    assert {row["operation"] for row in cached["metadata"]["managedFields"]} == {"Apply"}
    cached["metadata"]["labels"]["relabelled"] = "yes"
    kube.update(cached, field_manager="engine")

    stored = memory.get("v1", "Secret", "default", "shared")
    assert stored["metadata"]["labels"]["relabelled"] == "yes"
    assert {(row["manager"], row["operation"]) for row in stored["metadata"]["managedFields"]} == {
        ("owner", "Apply"), ("editor", "Update"), ("engine", "Update")}
