"""A watch that lags behind this cluster's writes (decision 0041): a cached read that gives up waiting for its own
object's write (the settle timeout) reads live, and must not make the reads of *other* objects forget the writes
they wait for. Before, one timed-out get dropped every pending write of the kind: a get of another object written
just before then answered the cached copy from before that write, and a pass would apply the object again, or
send its status with a stale resourceVersion (409)."""

from __future__ import annotations

import threading
from typing import Any

from engine.cluster.api import Obj, WatchEvent
from offline.cluster.memory import MemoryCluster
from tests.cluster.kube_kit import MakeKube

HOLD = 10.0
"""Seconds the held watch waits at most for the test to let it go (it never does before the asserts)."""


def config_map(name: str, value: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"v": value}}


def test_a_get_that_gives_up_keeps_the_other_objects_writes(memory: MemoryCluster, make_kube: MakeKube) -> None:
    memory.create(config_map("a", "0"))
    memory.create(config_map("b", "0"))
    kube = make_kube(settle_timeout=0.2)
    assert kube.get("v1", "ConfigMap", "default", "a")["data"] == {"v": "0"}  # the informer listed and watches
    (informer,) = kube.informers()
    store: Any = informer.store
    deliver = store.apply
    release = threading.Event()

    def lagging(event: WatchEvent, *rest: Any) -> None:  # a slow watch: nothing reaches the cache until released
        release.wait(HOLD)
        deliver(event, *rest)

    store.apply = lagging
    try:
        kube.patch("v1", "ConfigMap", "default", "a", {"data": {"v": "1"}})
        kube.patch("v1", "ConfigMap", "default", "b", {"data": {"v": "1"}})
        assert kube.get("v1", "ConfigMap", "default", "b")["data"] == {"v": "1"}  # gave up waiting: read live
        assert kube.get("v1", "ConfigMap", "default", "a")["data"] == {"v": "1"}  # its own write, not the cache's
        assert kube.list("v1", "ConfigMap", "default").items[0]["data"] == {"v": "1"}
    finally:
        release.set()
