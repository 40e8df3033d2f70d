"""What a watch event costs (issue 11): an update predicate that is a plain field path is read without
JMESPath, and an update whose mapped parts did not change is mapped once, not through old and new."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.expr.jmes import Query
from engine.outcome import Request
from engine.rules.catalog import load_catalog
from engine.rules.model import CompiledKind, CompiledWatch, plain_path
from engine.runtime.queue import WorkQueue
from engine.runtime.watches import Sources, mapped
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster
from tests.conftest import WIDGET

KEY = "example.io/v1/Widget"
LABELS = {"example.io/name": "w", "example.io/namespace": "ns", "example.io/cluster": ""}


def kind_with(rules_dir: Callable[..., Path], watches: str) -> CompiledKind:
    return next(iter(load_catalog(rules_dir(WIDGET + "watches:\n" + watches)).values()))


@pytest.fixture
def evaluations(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The sources of the JMESPath queries evaluated meanwhile."""
    seen: list[str] = []
    original = Query.evaluate

    def counted(self: Query, context: Any) -> Any:
        seen.append(self.source)
        return original(self, context)

    monkeypatch.setattr(Query, "evaluate", counted)
    yield seen


def order_watch(kind: CompiledKind) -> CompiledWatch:
    (watch,) = [w for w in kind.watches if w.is_order]
    return watch


def test_the_order_watch_tells_a_status_write_from_a_change_without_jmespath(
        rules_dir: Callable[..., Path], evaluations: list[str]) -> None:
    watch = order_watch(kind_with(rules_dir, "  []\n"))
    order = {"metadata": {"name": "w", "generation": 1, "labels": {"a": "b"}}, "spec": {"size": 1}}
    status_write = {**order, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    relabelled = {**order, "metadata": {**order["metadata"], "labels": {"a": "c"}}}
    assert not watch.passes(order, status_write)
    assert watch.passes(order, relabelled)
    assert watch.passes(order, {**order, "metadata": {**order["metadata"], "deletionTimestamp": "now"}})
    assert evaluations == []


@pytest.mark.parametrize("source", ["metadata.generation", "spec.a.b", "status", "a_1.B2"])
def test_a_plain_path_reads_what_jmespath_reads(rules_dir: Callable[..., Path], source: str) -> None:
    kind = kind_with(rules_dir, f"  - {{apiVersion: example.io/v1, kind: Gadget, name: metadata.name, "
                                f"changed: ['{source}']}}\n")
    (watch,) = [w for w in kind.watches if w.kind == "Gadget"]
    (query,) = watch.changed
    assert plain_path(query) == tuple(source.split("."))
    shapes: list[Any] = [None, 1, "x", [1], [{"b": 1}], {}, {"b": None}, {"b": [1]}, {"b": {"c": 1}}, True]
    objects = [{"metadata": {"generation": shape}, "spec": {"a": shape}, "status": shape,
                "a_1": {"B2": shape}} for shape in shapes] + [{}, {"spec": None}, {"spec": [1, 2]}]
    for old in objects:
        for new in objects:
            assert watch.passes(old, new) == (query.evaluate(old) != query.evaluate(new)), (old, new)


@pytest.mark.parametrize("source", ["metadata.labels.\"a.b\"", "spec.items[0]", "length(spec)", "@", "spec | a"])
def test_anything_but_a_plain_path_stays_jmespath(rules_dir: Callable[..., Path], source: str) -> None:
    kind = kind_with(rules_dir, "  - {apiVersion: example.io/v1, kind: Gadget, name: metadata.name, "
                                f"changed: ['{source}']}}\n")
    (watch,) = [w for w in kind.watches if w.kind == "Gadget"]
    assert plain_path(watch.changed[0]) is None


def test_a_status_only_update_of_a_child_is_mapped_once(rules_dir: Callable[..., Path],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    kind = kind_with(rules_dir, "  []\n")
    child = next(w for w in kind.watches if w.mapping == "labels")
    calls: list[object] = []
    original = CompiledWatch.requests

    def counted(self: CompiledWatch, obj: Any, cluster: str, index: Any) -> list[Request]:
        calls.append(obj)
        return original(self, obj, cluster, index)

    monkeypatch.setattr(CompiledWatch, "requests", counted)
    old = {"metadata": {"name": "w-part", "namespace": "ns", "labels": LABELS}, "status": {"ready": False}}
    new = {**old, "status": {"ready": True}}
    assert mapped(child, "", old, new, new, lambda key: []) == [Request(KEY, "", "ns", "w")]
    assert calls == [new]

    calls.clear()
    moved = {**new, "metadata": {**new["metadata"], "labels": {**LABELS, "example.io/name": "v"}}}
    assert mapped(child, "", old, moved, moved, lambda key: []) == [Request(KEY, "", "ns", "v"),
                                                                     Request(KEY, "", "ns", "w")]
    assert calls == [moved, old], "a relabelled child wakes the order it left as well"


def test_a_watch_by_query_maps_old_and_new_whatever_changed(rules_dir: Callable[..., Path]) -> None:
    kind = kind_with(rules_dir, "  - {apiVersion: example.io/v1, kind: Grant, name: status.widget}\n")
    (watch,) = [w for w in kind.watches if w.kind == "Grant"]
    old = {"metadata": {"name": "g", "namespace": "ns"}, "status": {"widget": "a"}}
    new = {**old, "status": {"widget": "b"}}
    assert not watch.maps_alike(old, new) and not watch.maps_alike(old, old)
    assert mapped(watch, "", old, new, new, lambda key: []) == [Request(KEY, "", "ns", "b"),
                                                                 Request(KEY, "", "ns", "a")]


HUB_WATCH = "  - {apiVersion: example.io/v1, kind: Hub, index: metadata.name}\n"


def indexed(rules_dir: Callable[..., Path], index_key: str) -> CompiledKind:
    return next(iter(load_catalog(rules_dir(WIDGET + f"indexKey: \"{index_key}\"\nwatches:\n" + HUB_WATCH)).values()))


def test_a_status_write_leaves_the_index_keys_as_they_were(rules_dir: Callable[..., Path]) -> None:
    kind = indexed(rules_dir, "cluster == '' && join('/', [order.spec.ns || order.metadata.namespace, order.spec.hub])")
    order = {"metadata": {"name": "w", "namespace": "ns", "resourceVersion": "1"}, "spec": {"hub": "h1"}}
    written = {**order, "metadata": {**order["metadata"], "resourceVersion": "2"}, "status": {"ok": True}}
    assert kind.index_alike(order, written)
    assert not kind.index_alike(order, {**written, "spec": {"hub": "h2"}})
    assert not kind.index_alike(order, {**written, "spec": {"hub": "h1", "ns": "other"}})
    assert not kind.index_alike({**order, "spec": {"hub": ["h1"]}}, {**written, "spec": {"hub": ["h1"]}}), \
        "a list read is computed again (equal lists may differ in the types of their items)"


@pytest.mark.parametrize("index_key", ["order.spec.hubs[0]", "order.spec.hubs[*].name", "order.spec | hub",
                                       "map(&name, order.spec.hubs)", "order"])
def test_an_index_read_through_anything_but_paths_is_always_computed(rules_dir: Callable[..., Path],
                                                                     index_key: str) -> None:
    kind = indexed(rules_dir, index_key)
    order = {"metadata": {"name": "w", "namespace": "ns"}, "spec": {"hub": "h1", "hubs": [{"name": "h1"}]}}
    assert not kind.index_alike(order, order)


def test_the_fan_out_follows_an_order_s_new_key_and_not_its_status(rules_dir: Callable[..., Path],
                                                                  evaluations: list[str]) -> None:
    source = "join('/', [order.metadata.namespace, order.spec.hub])"
    kind = indexed(rules_dir, source)
    clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    memory = MemoryCluster("", clock=clock, permissive=True)
    queue = WorkQueue(clock)
    sources = Sources({kind.key: kind}, queue, log=logging.getLogger("tests.rules"))
    sources.add_cluster("", memory)
    memory.create({"apiVersion": "example.io/v1", "kind": "Widget",
                   "metadata": {"name": "w", "namespace": "ns"}, "spec": {"hub": "h1"}})
    sources.pump()
    assert sources.index.lookup(kind.key, "ns/h1") == [("", "ns", "w")]
    widget = memory.get("example.io/v1", "Widget", "ns", "w")
    evaluations.clear()
    memory.update_status({**widget, "status": {"ready": True}})
    sources.pump()
    assert source not in evaluations, "a status write does not compute the keys again"
    widget = memory.get("example.io/v1", "Widget", "ns", "w")
    memory.update({**widget, "spec": {"hub": "h2"}})
    sources.pump()
    assert sources.index.lookup(kind.key, "ns/h1") == []
    assert sources.index.lookup(kind.key, "ns/h2") == [("", "ns", "w")]
