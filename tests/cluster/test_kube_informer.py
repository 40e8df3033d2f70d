"""The informer's store (label index, expectations) and its loop, driven by fake list and watch calls."""

from __future__ import annotations

import logging
import threading
import tracemalloc
from collections.abc import Callable, Iterator

import pytest

from engine.cluster import readonly
from engine.cluster.api import Gone, NotFound, Obj, ObjectList, ServerError, WatchEvent
from engine.cluster.kube import informer as informer_module
from engine.cluster.kube.informer import Informer
from engine.cluster.kube.store import Expectation, Store
from engine.cluster.kube.wire import ResumingStream, WatchStream
from engine.cluster.retry import Backoff, WarningLimiter
from engine.cluster.selectors import EVERYTHING, Selector, parse_fields, parse_labels
from tests.cluster.kube_kit import eventually

LOG = logging.getLogger(__name__)


def obj(name: str, rv: int, namespace: str = "ns", uid: str | None = None, **labels: str) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace, "resourceVersion": str(rv), "uid": uid or f"uid-{name}",
                 "managedFields": [{"manager": "m"}]}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta}


def event(kind: str, o: Obj) -> WatchEvent:
    return {"type": kind, "object": o}


def select(store: Store, selector: str | None = None, namespace: str | None = None, fields: str | None = None
           ) -> list[str]:
    items, _ = store.select(namespace, parse_labels(selector), parse_fields(fields))
    return [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in items]


TIMEOUT = 0.05
"""A read's wait for its object's write, in the store's tests: what a read waits before it reads live."""


def waits_of(store: Store) -> list[float]:
    """The waits a store's reads make from now on (each one's seconds), recorded as they begin."""
    waits: list[float] = []
    wait = store._changed.wait

    def recorded(timeout: float | None = None) -> bool:
        waits.append(timeout or 0.0)
        return wait(timeout)

    store._changed.wait = recorded  # type: ignore[method-assign]
    return waits


class TestStore:
    def test_events_keep_it_current(self) -> None:
        """ADDED and MODIFIED store, DELETED removes, and every event (bookmarks too) moves the position."""
        store = Store()
        store.replace([obj("a", 1)], "1")
        store.apply(event("ADDED", obj("b", 2)))
        store.apply(event("MODIFIED", obj("a", 3, app="x")))
        store.apply(event("DELETED", obj("b", 4)))
        store.apply(event("BOOKMARK", {"metadata": {"resourceVersion": "9"}}))
        assert select(store) == ["ns/a"]
        assert store.get(("ns", "a"))["metadata"]["labels"] == {"app": "x"}  # type: ignore[index]
        assert store.position == "9"

    def test_managed_fields_are_not_kept(self) -> None:
        """Stored objects carry no managedFields."""
        store = Store()
        store.replace([obj("a", 1)], "1")
        assert "managedFields" not in store.get(("ns", "a"))["metadata"]  # type: ignore[index]

    def test_reads_hand_out_the_stored_object_read_only(self) -> None:
        """A get and a select answer the object the store holds, not a copy (a copy per read was 14% of a converged
        pass); a reader that changes it is named by the read check, at its next read and after the test."""
        store = Store()
        store.replace([obj("a", 1)], "1")
        got = store.get(("ns", "a"))
        assert got is not None
        assert store.get(("ns", "a")) is got
        assert store.select("ns", parse_labels(None), parse_fields(None))[0] == [got]
        assert store.select("ns", parse_labels(None), parse_fields(None))[0][0] is got
        readonly.changed()
        got = store.get(("ns", "a"))
        got["metadata"]["name"] = "changed"  # type: ignore[index]
        with pytest.raises(AssertionError, match="a reader changed an object a read handed out"):
            store.get(("ns", "a"))
        assert readonly.changed() == ["Secret ns/changed"]

    @pytest.mark.parametrize(("selector", "expected"), [
        ("app=web", ["one/a", "two/c"]),
        ("app in (web,db)", ["one/a", "one/b", "two/c"]),
        ("app=web,tier=front", ["one/a"]),
        ("app!=web", ["one/b", "two/d"]),
        ("!app", ["two/d"]),
        ("tier", ["one/a"]),
    ])
    def test_label_selection(self, selector: str, expected: list[str]) -> None:
        """The label index answers selectors exactly as matching every object would."""
        store = Store()
        store.replace([obj("a", 1, "one", app="web", tier="front"), obj("b", 2, "one", app="db"),
                       obj("c", 3, "two", app="web"), obj("d", 4, "two")], "4")
        assert select(store, selector) == expected

    def test_index_follows_label_changes(self) -> None:
        """An object whose labels change is found under the new ones only."""
        store = Store()
        store.replace([obj("a", 1, app="web")], "1")
        store.apply(event("MODIFIED", obj("a", 2, app="db")))
        assert select(store, "app=web") == []
        assert select(store, "app=db") == ["ns/a"]

    def test_an_update_that_keeps_the_labels_leaves_the_indexes_alone(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A status or spec change (most watch events) replaces the object without taking it out of and back
        into its namespace and label index sets; reads see the new object."""
        store = Store()
        store.replace([obj("a", 1, app="web")], "1")
        dropped: list[tuple[str, str]] = []
        original = Store._drop
        monkeypatch.setattr(Store, "_drop", lambda self, key: dropped.append(key) or original(self, key))
        changed = obj("a", 2, app="web")
        changed["data"] = {"k": "new"}
        store.apply(event("MODIFIED", changed))
        assert dropped == []
        assert store.get(("ns", "a"))["data"] == {"k": "new"}  # type: ignore[index]
        assert select(store, "app=web") == ["ns/a"] and select(store, namespace="ns") == ["ns/a"]

    def test_a_label_value_that_changes_its_json_type_is_indexed_anew(self) -> None:
        """1 and true compare equal in Python but index under different keys ("1", "True"): the index follows."""
        store = Store()
        odd = obj("a", 1)
        odd["metadata"]["labels"] = {"flag": 1}
        store.replace([odd], "1")
        flipped = obj("a", 2)
        flipped["metadata"]["labels"] = {"flag": True}
        store.apply(event("MODIFIED", flipped))
        assert set(store._labels) == {("flag", "True")}

    def test_namespace_and_fields(self) -> None:
        """A namespace and a field selector narrow the answer; items come ordered by namespace, then name."""
        store = Store()
        store.replace([obj("b", 1, "two"), obj("a", 2, "two"), obj("z", 3, "one")], "3")
        assert select(store) == ["one/z", "two/a", "two/b"]
        assert select(store, namespace="two") == ["two/a", "two/b"]
        assert select(store, fields="metadata.name!=a") == ["one/z", "two/b"]

    def test_a_select_walks_only_its_namespace(self) -> None:
        """Listing a small namespace of a crowded store walks (and sorts) that namespace's keys only (issue 11:
        a pass's lists cost what they answer, not what the cache holds): a walk of all 5000 keys allocates
        their sorted list, ~40 KiB."""
        store = Store()
        store.replace([obj(f"o{i}", i, "crowd") for i in range(5000)] + [obj("mine", 5001, "small")], "5001")
        assert peak_bytes(lambda: select(store, namespace="small")) == (["small/mine"], True)
        assert peak_bytes(lambda: select(store, "app!=x", namespace="small")) == (["small/mine"], True)

    def test_a_select_by_a_rare_label_copies_no_crowded_label_set(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An order's children, selected by its name label beside labels every child carries: one candidate
        examined and no copy of the crowded labels' index sets made (one would allocate ~100 KiB)."""
        store = Store()
        store.replace([obj(f"o{i}", i, "ns", owner=f"o{i}", role="child", cluster="") for i in range(2000)], "2000")
        examined: list[Obj] = []
        original = Selector.matches_object

        def matches_object(self: Selector, o: Obj) -> bool:
            examined.append(o)
            return original(self, o)

        monkeypatch.setattr(Selector, "matches_object", matches_object)
        assert peak_bytes(lambda: select(store, "role=child,cluster=,owner in (o7)", namespace="ns")) == (
            ["ns/o7"], True)
        assert len(examined) == 1


def peak_bytes(call: Callable[[], list[str]], limit: int = 16 * 1024) -> tuple[list[str], bool]:
    """What ``call`` answers, and whether it allocated at most ``limit`` bytes at its peak (work, not time)."""
    tracemalloc.start()
    try:
        answer = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return answer, peak <= limit


class TestExpectations:
    def test_waits_for_a_version(self) -> None:
        """A read waits until the watch reaches the written resourceVersion."""
        store = Store()
        store.replace([], "5")
        store.expect(Expectation(version=7))
        threading.Timer(0.02, lambda: store.apply(event("ADDED", obj("a", 7)))).start()
        assert store.settle(5.0)
        assert select(store) == ["ns/a"]

    def test_waits_for_a_deletion(self) -> None:
        """A read after a delete waits until that object (that uid) has left the store."""
        store = Store()
        store.replace([obj("a", 1)], "1")
        store.expect(Expectation(gone=("ns", "a"), uid="uid-a"))
        threading.Timer(0.02, lambda: store.apply(event("DELETED", obj("a", 2)))).start()
        assert store.settle(5.0)
        assert select(store) == []

    def test_a_new_object_of_the_same_name_is_not_the_deleted_one(self) -> None:
        """A re-created object (another uid) under the deleted name satisfies the deletion."""
        store = Store()
        store.replace([obj("a", 5, uid="second")], "5")
        store.expect(Expectation(gone=("ns", "a"), uid="first"))
        assert store.settle(0.0)

    def test_gives_up_after_the_timeout(self) -> None:
        """An expectation the watch never meets is dropped after the timeout (the read then goes live)."""
        store = Store()
        store.replace([], "5")
        store.expect(Expectation(version=6))
        assert not store.settle(0.01)
        assert store.settle(0.0)

    def test_a_get_waits_only_for_the_writes_of_the_object_it_reads(self) -> None:
        """Read-your-writes per object (decision 0041): a get of another object answers at once while a write is on
        its way; a get of the written object waits for it, and so does a list; a deletion concerns the object gone;
        what a watch event showed (about no object) holds every read."""
        store = Store()
        store.replace([obj("a", 4), obj("b", 5)], "5")
        store.expect(Expectation(version=7, about=("ns", "a")))
        assert store.settle(0.0, ("ns", "b"))
        assert not store.settle(0.01, ("ns", "a"))
        store.expect(Expectation(version=7, about=("ns", "a")))
        assert not store.settle(0.01)
        store.expect(Expectation(version=7, about=("ns", "a")))
        threading.Timer(0.02, lambda: store.apply(event("MODIFIED", obj("a", 7)))).start()
        assert store.settle(5.0, ("ns", "a"))
        assert store.get(("ns", "a"))["metadata"]["resourceVersion"] == "7"  # type: ignore[index]
        store.expect(Expectation(gone=("ns", "b"), uid="uid-b"))
        assert store.settle(0.0, ("ns", "a"))
        assert not store.settle(0.01, ("ns", "b"))
        store.expect_version(9)
        assert not store.settle(0.01, ("ns", "b"))

    def test_a_list_waits_only_for_the_writes_of_objects_it_selects(self) -> None:
        """A list waits for a write of an object in its namespace that its selector matches after the write, or
        matches as the store holds it now (the write may take it out of the selection), and for a deletion of an
        object it would answer; writes of objects it selects neither before nor after do not hold it (decision
        0041)."""
        store = Store()
        store.replace([obj("a", 4, app="x"), obj("b", 5, app="y")], "5")
        x = parse_labels("app=x")
        store.expect(Expectation(version=7, about=("other", "c"), labels={"app": "x"}))
        store.expect(Expectation(version=7, about=("ns", "b"), labels={"app": "z"}))
        store.expect(Expectation(gone=("ns", "b"), uid="uid-b"))
        assert store.settle(0.0, listing=("ns", x))
        assert not store.settle(0.01, listing=(None, x))  # every namespace: the write of other/c is in it
        store.expect(Expectation(version=7, about=("ns", "b"), labels={"app": "x"}))
        assert not store.settle(0.01, listing=("ns", x))  # b enters the selection
        store.expect(Expectation(version=7, about=("ns", "a"), labels={"app": "z"}))
        assert not store.settle(0.01, listing=("ns", x))  # a leaves it
        store.expect(Expectation(gone=("ns", "a"), uid="uid-a"))
        assert not store.settle(0.01, listing=("ns", x))  # a goes
        store = Store()  # the writes above stay expected until the watch delivers them: start again
        store.replace([obj("a", 4, app="x"), obj("b", 5, app="y")], "5")
        store.expect(Expectation(version=7, about=("ns", "b"), labels={"app": "x"}))
        threading.Timer(0.02, lambda: store.apply(event("MODIFIED", obj("b", 7, app="x")))).start()
        assert store.settle(5.0, listing=("ns", x))
        assert select(store, "app=x") == ["ns/a", "ns/b"]

    def test_a_read_that_gives_up_forgets_no_write(self) -> None:
        """A watch that lags: a get that waited its timeout for its object's write reads live, and so does every
        later read that needs that write, at once, until the watch delivers it; the other objects' writes still
        hold their reads (one read giving up used to drop every expectation of the kind, so a get of another
        object answered its copy from before this cluster's write)."""
        store = Store()
        store.replace([obj("a", 4), obj("b", 5)], "5")
        store.expect(Expectation(version=6, about=("ns", "a")))
        store.expect(Expectation(version=7, about=("ns", "b")))
        assert not store.settle(TIMEOUT, ("ns", "b"))
        assert not store.settle(TIMEOUT, ("ns", "a"))  # before: answered at once, from the copy before our write
        waits = waits_of(store)
        assert not store.settle(TIMEOUT, ("ns", "b"))  # its write is overdue: no second wait
        assert not store.settle(TIMEOUT, listing=("ns", EVERYTHING))
        assert waits == [], "a read of a write already waited for in vain waits again"
        store.apply(event("MODIFIED", obj("a", 6)))
        assert store.settle(TIMEOUT, ("ns", "a"))
        assert not store.settle(TIMEOUT, ("ns", "b"))
        assert waits == []
        store.apply(event("MODIFIED", obj("b", 7)))
        assert store.settle(TIMEOUT, ("ns", "b")) and store.settle(TIMEOUT)

    def test_met_expectations_cost_nothing(self) -> None:
        """A write the store has already seen (a no-op write) does not make reads wait."""
        store = Store()
        store.replace([obj("a", 4)], "5")
        store.expect(Expectation(version=4))
        assert store.settle(0.0)


class FakeServer:
    """Scripted answers for an informer: lists in order, and watch streams fed from the test."""

    def __init__(self, lists: list[ObjectList | Exception]) -> None:
        self.lists = lists
        self.list_calls = 0
        self.watch_calls: list[str] = []
        self.streams: list[Iterator[WatchEvent] | Exception] = []

    def list(self) -> ObjectList:
        answer = self.lists[min(self.list_calls, len(self.lists) - 1)]
        self.list_calls += 1
        if isinstance(answer, Exception):
            raise answer
        return answer

    def watch(self, rv: str) -> Iterator[WatchEvent]:
        self.watch_calls.append(rv)
        if not self.streams:
            return Blocking()
        answer = self.streams.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Blocking(Iterator[WatchEvent]):
    """A stream with nothing to say: it blocks until closed, as a quiet watch does."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def __next__(self) -> WatchEvent:
        self.closed.wait()
        raise StopIteration

    def close(self) -> None:
        self.closed.set()


def start(server: FakeServer) -> Informer:
    informer = Informer("fake", server.list, server.watch, log=LOG)
    informer.start()
    return informer


class TestInformerLoop:
    def test_first_list_errors_reach_the_caller(self) -> None:
        """start() lists in the caller's thread, so a kind not served is the caller's NotFound."""
        server = FakeServer([NotFound("the server could not find the requested resource")])
        with pytest.raises(NotFound):
            start(server)

    def test_resumes_from_the_last_version_seen(self) -> None:
        """Each new watch starts from the resourceVersion the previous one reached (bookmarks included)."""
        server = FakeServer([ObjectList([obj("a", 1)], "3")])
        bookmark = event("BOOKMARK", {"metadata": {"resourceVersion": "8"}})
        server.streams = [iter([event("ADDED", obj("b", 4)), bookmark]), iter([event("MODIFIED", obj("a", 9))])]
        informer = start(server)
        try:
            assert eventually(lambda: len(server.watch_calls) == 3)
            assert server.watch_calls == ["3", "8", "9"]
            assert server.list_calls == 1
            assert select(informer.store) == ["ns/a", "ns/b"]
        finally:
            informer.stop()

    def test_gone_lists_again(self) -> None:
        """Gone makes the informer list again and watch from the new list."""
        server = FakeServer([ObjectList([obj("a", 1)], "1"), ObjectList([obj("b", 20)], "20")])
        server.streams = [Gone("too old resource version: 1 (10)")]
        informer = start(server)
        try:
            assert eventually(lambda: server.watch_calls == ["1", "20"])
            assert informer.relists == 1
            assert select(informer.store) == ["ns/b"]
        finally:
            informer.stop()

    def test_failures_are_retried(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Any other failure is retried after a pause, from the same resourceVersion, keeping the store."""
        monkeypatch.setattr(informer_module, "Backoff", lambda: Backoff(minimum=0.001, maximum=0.001))
        server = FakeServer([ObjectList([obj("a", 1)], "1")])
        server.streams = [ServerError("connection refused"), ServerError("connection refused")]
        informer = start(server)
        try:
            assert eventually(lambda: server.watch_calls == ["1", "1", "1"])
            assert informer.has_synced()
            assert select(informer.store) == ["ns/a"]
        finally:
            informer.stop()

    def test_a_permanent_gone_backs_off(self) -> None:
        """Gone on every watch: one re-list at once, then waits doubling with jitter; never more than about
        one request per second waited (the waits are simulated: the stop event's wait takes no time)."""
        samples: list[tuple[int, float]] = []

        class AlwaysGone(FakeServer):
            def watch(self, rv: str) -> Iterator[WatchEvent]:
                self.watch_calls.append(rv)
                if len(self.watch_calls) > 1000:
                    informer.stop(wait=0)
                raise Gone("too old resource version")

        class SimulatedStop(threading.Event):
            now = 0.0

            def wait(self, timeout: float | None = None) -> bool:
                self.now += timeout or 0.0
                samples.append((server.list_calls + len(server.watch_calls), self.now))
                if self.now >= 300:
                    self.set()
                return self.is_set()

        server = AlwaysGone([ObjectList([], "1")])
        informer = Informer("fake", server.list, server.watch, log=LOG, cluster="edge-1",
                            warnings=WarningLimiter(clock=lambda: 0.0))
        stop = informer._stop = SimulatedStop()
        informer.start()
        assert informer._thread is not None
        informer._thread.join(10)
        assert stop.now >= 300, f"{len(server.watch_calls)} watches and {stop.now:.0f}s waited"
        assert all(made <= waited + 6 for made, waited in samples), samples
        assert server.list_calls >= 5

    def test_watches_that_end_before_their_first_event_back_off(self) -> None:
        """A watch answered and closed at once, with no event (cut after its headers), is a failure: waits
        doubling with jitter, about one request per second waited at most; failing after FAILING_AFTER in a row."""
        samples: list[tuple[int, float]] = []

        class AlwaysCut(FakeServer):
            def watch(self, rv: str) -> Iterator[WatchEvent]:
                self.watch_calls.append(rv)
                if len(self.watch_calls) > 1000:
                    informer.stop(wait=0)
                return iter(())

        class SimulatedStop(threading.Event):
            now = 0.0

            def wait(self, timeout: float | None = None) -> bool:
                self.now += timeout or 0.0
                samples.append((server.list_calls + len(server.watch_calls), self.now))
                if self.now >= 300:
                    self.set()
                return self.is_set()

        server = AlwaysCut([ObjectList([], "1")])
        informer = Informer("fake", server.list, server.watch, log=LOG, cluster="edge-1",
                            warnings=WarningLimiter(clock=lambda: 0.0))
        stop = informer._stop = SimulatedStop()
        informer.start()
        assert informer._thread is not None
        informer._thread.join(10)
        assert stop.now >= 300, f"{len(server.watch_calls)} watches and {stop.now:.0f}s waited"
        assert all(made <= waited + 6 for made, waited in samples), samples
        assert server.list_calls == 1, "an ended watch resumes, it does not list again"
        assert informer.backoff.failing

    def test_kind_gone_ends_the_informer(self) -> None:
        """NotFound from the watch means the kind is no longer served: the informer ends, dead."""
        server = FakeServer([ObjectList([], "1")])
        server.streams = [NotFound("the server could not find the requested resource")]
        informer = start(server)
        assert eventually(lambda: informer.dead)
        assert not informer.has_synced()

    def test_stop_interrupts_a_quiet_watch(self) -> None:
        """stop() closes the watch the thread is blocked in, and the thread ends."""
        server = FakeServer([ObjectList([], "1")])
        informer = start(server)
        assert eventually(lambda: server.watch_calls == ["1"])
        informer.stop()
        assert informer.dead
        assert not [t for t in threading.enumerate() if t.name == "informer fake"]



class FakeStream(WatchStream):
    """A finished response's events, as a WatchStream hands them out."""

    def __init__(self, events: list[WatchEvent]) -> None:
        super().__init__(None)
        self._events = iter(events)

    def __next__(self) -> WatchEvent:
        return next(self._events)


class TestResumingStream:
    def test_reopens_from_the_last_version(self) -> None:
        """A watch without a timeout reopens where the ended stream stopped, bookmarks included."""
        opened: list[str | None] = []
        streams = [[event("ADDED", obj("a", 3))], [event("BOOKMARK", {"metadata": {"resourceVersion": "7"}})],
                   [event("MODIFIED", obj("a", 9))]]

        def reopen(rv: str | None) -> WatchStream:
            opened.append(rv)
            return FakeStream(streams.pop(0) if streams else [])

        stream = ResumingStream(reopen, None)
        seen = [next(stream)["type"] for _ in range(3)]
        stream.close()
        assert seen == ["ADDED", "BOOKMARK", "MODIFIED"]
        assert opened == [None, "3", "7"]
        assert list(stream) == []

    def test_reopen_errors_raise(self) -> None:
        """When reopening fails (Gone), the caller hears it."""
        def reopen(rv: str | None) -> WatchStream:
            if rv is not None:
                raise Gone("too old resource version")
            return FakeStream([event("ADDED", obj("a", 3))])

        stream = ResumingStream(reopen, None)
        next(stream)
        with pytest.raises(Gone):
            next(stream)
