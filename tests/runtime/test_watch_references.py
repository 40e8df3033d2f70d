"""A `referencedBy` watch in the runtime: the index the engine keeps maps an event to the orders naming the object
on the event's own cluster; another cluster's orders naming an object of that name are not woken."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runtime_kit import API, START, memory, obj

from engine.expr.jmes import Query
from engine.rules.catalog import load_catalog
from engine.runtime.queue import WorkQueue
from engine.runtime.watches import Sources
from offline.clock import SimulatedClock
from tests.conftest import WIDGET

LOG = logging.getLogger("tests.runtime")


def drain(queue: WorkQueue) -> list[str]:
    names = []
    while (req := queue.pop_ready()) is not None:
        names.append(f"{req.cluster}:{req.namespace}/{req.name}")
        queue.done(req)
    return names


def test_a_hub_event_on_one_cluster_wakes_only_that_cluster_s_orders(rules_dir: Callable[..., Path]) -> None:
    rule = WIDGET + ("watches:\n  - {apiVersion: example.io/v1, kind: Hub, clusters: all, "
                     "referencedBy: order.spec.hubRef.name, changed: [metadata.generation]}\n")
    catalog = load_catalog(rules_dir(rule))
    management, edge = memory(), memory("edge")
    for cluster in (management, edge):
        cluster.create(obj("Widget", "a", spec={"hubRef": {"name": "h1"}}))
        cluster.create(obj("Widget", "b", spec={"hubRef": {"name": "h2"}}))
        cluster.create(obj("Widget", "c", namespace="other", spec={"hubRef": {"name": "h1"}}))
        cluster.create(obj("Hub", "h1", spec={"size": 1}))
    queue = WorkQueue(SimulatedClock(START))
    sources = Sources(dict(catalog), queue, log=LOG)
    sources.add_cluster("", management)
    sources.add_cluster("edge", edge)
    sources.pump()
    drain(queue)

    edge.patch(API, "Hub", "ns", "h1", {"spec": {"size": 2}})
    sources.pump()
    assert drain(queue) == ["edge:ns/a"]

    management.patch(API, "Hub", "ns", "h1", {"spec": {"size": 3}})
    sources.pump()
    assert drain(queue) == [":ns/a"]

    # An order that starts naming the hub is woken by its next change; one that stops naming it is not.
    edge.patch(API, "Widget", "ns", "b", {"spec": {"hubRef": {"name": "h1"}}})
    edge.patch(API, "Widget", "ns", "a", {"spec": {"hubRef": {"name": "h2"}}})
    sources.pump()
    drain(queue)
    edge.patch(API, "Hub", "ns", "h1", {"spec": {"size": 4}})
    sources.pump()
    assert drain(queue) == ["edge:ns/b"]

    # A status write of the hub changes no generation: nothing is woken.
    edge.patch(API, "Hub", "ns", "h1", {"status": {"ready": True}})
    sources.pump()
    assert drain(queue) == []


def test_a_reference_costs_no_jmespath_on_an_event_nor_on_a_status_write(
        rules_dir: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain field paths are read without JMESPath: the keys of an order (computed again only when a path they read
    changed) and the mapping of the referenced object's event (its namespace and name, read once, not through the
    old and the new object). The `index` watch this replaces evaluated its key query through both."""
    rule = WIDGET + ("watches:\n  - {apiVersion: example.io/v1, kind: Hub, "
                     "referencedBy: {name: order.spec.hubRef.name, namespace: order.spec.hubRef.namespace}, "
                     "changed: [metadata.generation]}\n")
    catalog = load_catalog(rules_dir(rule))
    evaluated: list[str] = []
    original = Query.evaluate

    def counted(self: Query, context: Any) -> Any:
        evaluated.append(self.source)
        return original(self, context)

    monkeypatch.setattr(Query, "evaluate", counted)
    cluster = memory()
    cluster.create(obj("Widget", "a", spec={"hubRef": {"name": "h1", "namespace": "infra"}}))
    cluster.create(obj("Hub", "h1", namespace="infra", spec={"size": 1}))
    queue = WorkQueue(SimulatedClock(START))
    sources = Sources(dict(catalog), queue, log=LOG)
    sources.add_cluster("", cluster)
    sources.pump()
    drain(queue)
    widget = cluster.get(API, "Widget", "ns", "a")
    cluster.update_status({**widget, "status": {"ready": True}})
    cluster.patch(API, "Hub", "infra", "h1", {"spec": {"size": 2}})
    sources.pump()
    assert drain(queue) == [":ns/a"]
    assert not [source for source in evaluated if "hubRef" in source or source == "metadata.generation"], evaluated
