"""What a watch event and a cached read cost the operator stays bounded (issue 11: CPU per order), counted in Python
calls with cProfile (load-independent, not timed): a KeystoneUser-sized status event decoded, cut and interned for
the caches, and a pass's get and labelled list answered from a cache fed by the runtime's watch."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from engine.cluster.api import Obj
from engine.cluster.kube import KubeCluster, codec
from engine.cluster.kube.store import Expectation, Store, interned
from engine.cluster.kube.wire import WatchStream
from engine.cluster.projection import project, tree
from offline.cluster.memory import MemoryCluster
from tests.call_count import calls
from tests.cluster.kube_kit import OneReadBody

API = "example.com/v1"


def order(i: int) -> dict[str, Any]:
    """An order as the benchmark's status writes leave it (three conditions, a finalizer, managed fields)."""
    condition = {"type": "Ready", "status": "True", "observedGeneration": 1,
                 "lastTransitionTime": "2026-12-02T02:34:51Z", "reason": "AllReady",
                 "message": f"credentials are delivered in Secret \"w{i}-credentials\" (keys clouds.yaml, password)"}
    return {
        "apiVersion": API, "kind": "Widget",
        "metadata": {"name": f"w{i}", "namespace": "tenant-a", "uid": f"8518f9ee-5152-47b4-9624-{i:012d}",
                     "creationTimestamp": "2026-12-02T02:34:34Z", "generation": 1,
                     "labels": {"app": "widgets", "tier": f"t{i % 3}"},
                     "finalizers": ["example.com/teardown"], "resourceVersion": str(1000 + i),
                     "managedFields": [
                         {"manager": "operator", "operation": "Update", "apiVersion": API, "fieldsType": "FieldsV1",
                          "fieldsV1": {"f:status": {"f:conditions": {}}}, "subresource": "status"},
                         {"manager": "operator", "operation": "Apply", "apiVersion": API, "fieldsType": "FieldsV1",
                          "fieldsV1": {"f:spec": {"f:size": {}}}}]},
        "spec": {"controlPlaneRef": {"name": "cp", "namespace": "openstack"}, "passwordGeneration": 1},
        "status": {"conditions": [{**condition, "type": kind} for kind in ("UserReady", "DeliveryReady", "Ready")],
                   "observedGeneration": 1, "userID": f"f8a584a1b993441f9c4ca793d189{i:04d}",
                   "secretName": f"w{i}-credentials", "secretKeys": ["clouds.yaml", "password"]},
    }


CALLS_PER_EVENT = 110
"""Python calls one status event of the order above costs the watch's reader (read, decode, cut managedFields,
intern): 245 while interning dispatched by isinstance (and a cast) and called itself for every list item, 181
after, 142.5 once a map's keys were interned by ``map`` and no ``typing.cast`` ran, 133.5 with orjson decoding
the undecoded line (``codec``), 113.5 once short values were interned in place and the keys left as orjson shares
them (no map rebuilt: 22 -> 10 microseconds an event, the same memory per cached object), 107.5 once an Apply
entry's field set (``fieldsV1``, maps down to empty maps) was no longer walked."""


def test_a_watch_event_costs_a_bounded_number_of_calls() -> None:
    lines = b"".join(json.dumps({"type": "MODIFIED", "object": order(i)}).encode() + b"\n" for i in range(50))
    stream = WatchStream(OneReadBody(lines), strip_managed_fields=True)  # type: ignore[arg-type]
    events: list[Any] = []
    assert calls(lambda: events.extend(stream)) / 50 <= CALLS_PER_EVENT
    assert len(events) == 50 and events[7]["object"]["status"] == order(7)["status"]


def test_interning_keeps_every_value_and_shares_keys_and_short_texts() -> None:
    """What the caches hold equals what was decoded (types too: 1 stays an int, True a bool), and two objects the
    client decoded (``codec``) share one copy of each key and of each short text; long texts are not interned."""
    first, second, again = (interned(codec.loads(json.dumps(order(i)).encode())) for i in (1, 2, 1))
    assert first == order(1) and second == order(2)
    assert type(first["status"]["observedGeneration"]) is int and first["spec"]["passwordGeneration"] == 1
    key_a = next(k for k in first["status"]["conditions"][0] if k == "lastTransitionTime")
    key_b = next(k for k in second["status"]["conditions"][2] if k == "lastTransitionTime")
    assert key_a is key_b
    assert first["status"]["conditions"][0]["status"] is second["status"]["conditions"][1]["status"]
    assert first["status"]["secretKeys"][0] is sys.intern("clouds.yaml")
    assert first["status"]["conditions"][0]["message"] is not again["status"]["conditions"][0]["message"]
    assert first["metadata"]["uid"] is not again["metadata"]["uid"]
    assert interned([1, True, None, 2.5, "x", [["y"]]]) == [1, True, None, 2.5, "x", [["y"]]]


def test_interning_leaves_a_managed_field_set_as_decoded() -> None:
    """An Apply entry's ``fieldsV1`` is maps down to empty maps, one per field the manager owns (an applied child's
    has dozens): nothing in it to share, so the walk skips it (a third of a User-sized event's interning) and the
    entry's own short texts are still shared."""
    decoded = codec.loads(json.dumps(order(3)).encode())
    field_set = decoded["metadata"]["managedFields"][1]["fieldsV1"]
    field_set["f:spec"]["probe"] = "".join(["App", "ly"])  # a short text no walk of the field set would miss
    kept = interned(decoded)
    entry = kept["metadata"]["managedFields"][1]
    assert entry["fieldsV1"] is field_set and entry["fieldsV1"]["f:spec"]["probe"] is not sys.intern("Apply")
    assert entry["operation"] is sys.intern("Apply") and entry["fieldsType"] is sys.intern("FieldsV1")


def test_a_bookmark_or_a_deletion_interns_nothing(monkeypatch: Any) -> None:
    """A bookmark is a position and a deleted object leaves the cache: neither is walked for strings to share (a
    projected watch's bookmark was once interned, three strings each, which a count of a cache's strings showed)."""
    from engine.cluster.kube import store
    counted: list[str] = []
    real = store._intern
    monkeypatch.setattr(store, "_intern", lambda text: counted.append(text) or real(text))
    bookmark = {"type": "BOOKMARK", "object": {"apiVersion": API, "kind": "Widget",
                                               "metadata": {"resourceVersion": "2000"}}}
    deleted = {"type": "DELETED", "object": order(4)}
    modified = {"type": "MODIFIED", "object": order(5)}
    lines = b"".join(json.dumps(event).encode() + b"\n" for event in (bookmark, deleted, modified))
    events = list(WatchStream(OneReadBody(lines), strip_managed_fields=True))  # type: ignore[arg-type]
    assert [event["type"] for event in events] == ["BOOKMARK", "DELETED", "MODIFIED"]
    assert events[0]["object"]["metadata"]["resourceVersion"] == "2000"
    assert counted and "2000" not in counted and "w4" not in counted and "w5" in counted


CALLS_PER_PROJECTION = 35
"""Python calls (C functions included) cutting the order above to a name-claims-like shape: 48 while each field
kept whole was cut by a call of its own."""


def test_a_projected_event_is_cut_without_a_call_per_field_kept_whole() -> None:
    """A projected watch (every K-ORC User for the name claims, on every shard member) cuts each event to the paths
    its reads need. A field kept whole (most of them) is copied in place, shared with the decoded event."""
    shape = tree([("metadata", "annotations"), ("metadata", "creationTimestamp"), ("spec", "passwordGeneration"),
                  ("status", "userID"), ("status", "conditions", "[]", "type")])
    obj = order(6)
    kept = project(obj, shape)
    assert kept == {"apiVersion": API, "kind": "Widget",
                    "metadata": {key: obj["metadata"][key] for key in
                                 ("name", "namespace", "uid", "resourceVersion", "labels", "creationTimestamp")},
                    "spec": {"passwordGeneration": 1}, "status": {
                        "userID": obj["status"]["userID"],
                        "conditions": [{"type": c["type"]} for c in obj["status"]["conditions"]]}}
    assert kept["metadata"]["labels"] is obj["metadata"]["labels"]  # shared, not copied
    assert calls(lambda: project(obj, shape)) <= CALLS_PER_PROJECTION


CALLS_PER_GET = 33
"""Python calls a get answered from a cache the runtime's watch keeps costs the calling thread: 52 while every
read made a lock for starting an informer, waited on the list's event and took the store's lock to find nothing
expected; 39 after; 36 once the store's lock was taken without its Condition's Python calls; 30 once a get
resolved its kind once and found its informer without the cluster's lock."""

CALLS_PER_LIST = 250
"""The same for a list by a two-label selector answering 7 of 20 objects: 380 while every list also parsed its
selector, 237 after, 232 with the store's lock taken as above."""


def test_a_cached_read_costs_a_bounded_number_of_calls(memory: MemoryCluster, widget_crd: Obj,
                                                       make_kube: Callable[..., KubeCluster]) -> None:
    memory.create(widget_crd)
    kube = make_kube()
    feed = kube.share_watch(API, "Widget", None, None)
    assert feed is not None
    items = [order(i) for i in range(20)]
    feed.replace(items, "2000")
    kube.get(API, "Widget", "tenant-a", "w0")  # the kind resolved once
    got: list[Any] = []
    listed: list[Any] = []
    per_get = calls(lambda: got.extend(kube.get(API, "Widget", "tenant-a", f"w{i}") for i in range(20))) / 20
    per_list = calls(lambda: listed.extend(kube.list(API, "Widget", "tenant-a", labels="app=widgets,tier=t1").items
                                           for _ in range(20))) / 20
    assert per_get <= CALLS_PER_GET and per_list <= CALLS_PER_LIST
    assert [o["metadata"]["name"] for o in got] == [f"w{i}" for i in range(20)]
    assert len(listed) == 20 and [o["metadata"]["name"] for o in listed[0]] == ["w1", "w10", "w13", "w16", "w19",
                                                                               "w4", "w7"]


def test_a_get_costs_the_same_while_many_writes_are_on_their_way() -> None:
    """A get looks at the expected writes of its own object only (decision 41): with 200 writes of other objects
    not yet delivered by the watch (eight workers outrunning it), it still answers at once, in a few calls (610
    while every get walked every expectation)."""
    store = Store()
    store.replace([order(i) for i in range(3)], "100")
    for i in range(200):
        store.expect(Expectation(version=200 + i, about=("tenant-a", f"other{i}"), labels={}))
    answers: list[bool] = []
    assert calls(lambda: answers.extend(store.settle(5.0, ("tenant-a", "w1")) for _ in range(20))) / 20 <= 5
    assert answers == [True] * 20
    store.apply({"type": "MODIFIED", "object": {**order(1), "metadata": {**order(1)["metadata"],
                                                                        "resourceVersion": "250"}}})
    assert not store.settle(0.01, ("tenant-a", "other60"))  # a write on its way still holds its own object's get
