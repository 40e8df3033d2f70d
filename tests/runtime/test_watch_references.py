"""A `referencedBy` watch in the runtime: the index the engine keeps maps an event to the orders naming the object
on the event's own cluster; another cluster's orders naming an object of that name are not woken."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from runtime_kit import API, START, memory, obj

from engine.rules.catalog import load_catalog
from engine.runtime.queue import WorkQueue
from engine.runtime.watches import Sources
from engine.testing.clock import SimulatedClock
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
