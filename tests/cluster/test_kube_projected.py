"""KubeCluster's projected cache (decision 0040): a kind cached by a shard member's label in full also keeps every
object cut to the paths some lists read; those lists are answered there without a request, hold only those fields,
and a list whose reads the projection does not cover is never answered from it (it reads whole objects)."""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.clock import SystemClock
from engine.cluster.api import NotCached, NotFound, NotHeld, Obj
from engine.cluster.kube import KubeCluster, store
from engine.cluster.registry import ClusterSet
from engine.outcome import Request
from engine.reconcile.run import run_pass
from engine.reconcile.stamp import stamping
from engine.rules.catalog import load_catalog
from engine.runtime.kinds import member_projections, shard_scopes
from engine.runtime.sharding.labels import SHARD_LABEL
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator
from tests.cluster.kube_kit import Requests, eventually, names, watching
from tests.conftest import WIDGET

MINE = "shard=a"
CLAIM = (("metadata", "annotations", "created"), ("data", "id"))


def secret(name: str, shard: str, claim: str = "x", **data: str) -> Obj:
    """A Secret whose data holds the given keys (base64 of their values), beside a password no read projects."""
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": "default", "labels": {"shard": shard, "claim": claim},
                         "annotations": {"created": f"t-{name}", "other": "y" * 200}},
            "data": {"password": "c2VjcmV0", **{key: b64(value) for key, value in data.items()}}}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
def kube(make_kube: Callable[..., KubeCluster]) -> KubeCluster:
    cluster = make_kube()
    cluster.scope_by_labels({("v1", "Secret"): (MINE,)})
    cluster.project_reads({("v1", "Secret"): CLAIM})
    return cluster


def test_a_list_across_members_reads_the_projected_cache(memory: MemoryCluster, emulator: Emulator,
                                                          kube: KubeCluster) -> None:
    """A list by a label no member scope answers, naming reads the projection covers, is answered from memory:
    every object of the kind (other members' too), with their identity and the projected fields only."""
    memory.create(secret("mine", "a", id="1"))
    memory.create(secret("theirs", "b", id="2"))
    memory.create(secret("elsewhere", "b", claim="z"))
    first = kube.list("v1", "Secret", labels={"claim": "x"}, reads=(("data", "id"),))
    watching(emulator, kube)
    requests = Requests(kube)
    answer = kube.list("v1", "Secret", labels={"claim": "x"}, reads=(("data", "id"),))
    assert requests.seen == []
    assert names(answer.items) == names(first.items) == ["mine", "theirs"]
    theirs = answer.items[1]
    assert theirs["data"] == {"id": b64("2")}
    assert theirs["metadata"]["annotations"] == {"created": "t-theirs"}
    assert "password" not in theirs["data"]  # never held: a Secret's password, another member's spec
    assert set(theirs["metadata"]) == {"name", "namespace", "uid", "resourceVersion", "labels", "annotations"}


def test_the_projected_store_holds_only_the_projected_fields(memory: MemoryCluster, kube: KubeCluster) -> None:
    """What the cache keeps of each object is its identity and the projection's paths, nothing else."""
    memory.create(secret("theirs", "b", id="2", phase="Ready"))
    kube.list("v1", "Secret", labels={"claim": "x"}, reads=CLAIM)
    [projected] = [i for i in kube.informers() if "projected" in i.name]
    [key] = projected.store.keys()
    held = projected.store.get(key)
    assert held is not None
    assert held == {"apiVersion": "v1", "kind": "Secret", "data": {"id": b64("2")},
                    "metadata": {"name": "theirs", "namespace": "default", "uid": held["metadata"]["uid"],
                                 "resourceVersion": held["metadata"]["resourceVersion"],
                                 "labels": {"shard": "b", "claim": "x"}, "annotations": {"created": "t-theirs"}}}


def test_a_read_outside_the_projection_reads_whole_objects(memory: MemoryCluster, emulator: Emulator,
                                                            kube: KubeCluster) -> None:
    """A list whose reads reach a path the projection does not keep, or that names no reads, is answered by the
    server, whole: a field the cache does not hold is never read as missing."""
    memory.create(secret("theirs", "b", id="2"))
    kube.list("v1", "Secret", labels={"claim": "x"}, reads=CLAIM)
    watching(emulator, kube)
    requests = Requests(kube)
    for reads in ((("data", "password"),), (("metadata", "annotations"),), None):
        [item] = kube.list("v1", "Secret", labels={"claim": "x"}, reads=reads).items
        assert item["data"]["password"] == "c2VjcmV0"
    assert requests.count() == 3


def test_the_projected_cache_follows_writes_and_answers_gets_it_misses(memory: MemoryCluster, emulator: Emulator,
                                                                       kube: KubeCluster) -> None:
    """The cluster's own writes are read back at once; a get the member's scope misses is NotFound without a request
    when no object of that name exists at all, and read from the server when another member's does."""
    kube.list("v1", "Secret", labels={"claim": "x"}, reads=CLAIM)
    kube.list("v1", "Secret", labels={"shard": "a"})
    kube.create(secret("new", "b", id="3"))
    assert names(kube.list("v1", "Secret", labels={"claim": "x"}, reads=CLAIM).items) == ["new"]
    watching(emulator, kube)
    requests = Requests(kube)
    with pytest.raises(NotFound):
        kube.get("v1", "Secret", "default", "absent")
    assert requests.count() == 0
    assert kube.get("v1", "Secret", "default", "new")["data"]["password"] == "c2VjcmV0"  # whole, from the server
    assert requests.count() == 1
    memory.delete("v1", "Secret", "default", "new")
    assert eventually(lambda: kube.list("v1", "Secret", labels={"claim": "x"}, reads=CLAIM).items == [])


def test_a_projection_by_label_says_whether_a_scoped_get_can_miss_without_a_request(
        memory: MemoryCluster, emulator: Emulator, make_kube: Callable[..., KubeCluster]) -> None:
    """A member's identity cache of the objects carrying a label (as an unsharded run caches the kind) answers the
    gets its stamped scope misses: no object of the name carries the label the caller says it carries -> NotCached
    without a request (it may exist without the label, as an unsharded run's cache also cannot tell); one does
    (another member's) -> read whole from the server; the caller says nothing -> read from the server."""
    kube = make_kube()
    kube.scope_by_labels({("v1", "Secret"): ("claim,shard=a",)})
    kube.project_reads({("v1", "Secret"): ()}, labels={("v1", "Secret"): ("claim",)})
    memory.create(secret("theirs", "b"))
    memory.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bare", "namespace": "default"}})
    with pytest.raises(NotCached):
        kube.get("v1", "Secret", "default", "absent", carries=("claim",))  # starts the caches
    watching(emulator, kube)
    [projected] = [i for i in kube.informers() if "projected" in i.name]
    held = projected.store.keys()
    assert [name for _, name in held] == ["theirs"]  # identities of the labelled ones only
    requests = Requests(kube)
    for name in ("absent", "bare"):
        with pytest.raises(NotCached):
            kube.get("v1", "Secret", "default", name, carries=("claim",))
    assert requests.count() == 0
    assert kube.get("v1", "Secret", "default", "theirs", carries=("claim",))["data"]["password"] == "c2VjcmV0"
    assert requests.count() == 1
    with pytest.raises(NotFound):
        kube.get("v1", "Secret", "default", "absent")
    assert requests.count() == 2


def test_a_members_identity_cache_holds_only_unstamped_objects_and_its_misses_stay_uncertain(
        memory: MemoryCluster, emulator: Emulator, make_kube: Callable[..., KubeCluster]) -> None:
    """A member's identity caches select the objects no member stamped (decision 0075), so another member's children
    reach it through no watch. A get its stamped scope misses: an unstamped object of the name is read whole from the
    server; none -> NotHeld without a request (another member may have stamped one), for a kind selected by label
    and for one cached whole alike; the caller says nothing of the labels -> read from the server."""
    kube = make_kube()
    kube.scope_by_labels({("v1", "Secret"): ("claim,shard=a",), ("v1", "ConfigMap"): ("shard=a",)})
    kube.project_reads({("v1", "Secret"): (), ("v1", "ConfigMap"): ()}, labels={("v1", "Secret"): ("claim",)},
                       unstamped={("v1", "Secret"): "!shard", ("v1", "ConfigMap"): "!shard"})
    memory.create(secret("theirs", "b"))
    loose = secret("loose", "b")
    del loose["metadata"]["labels"]["shard"]
    memory.create(loose)
    for name, labels in (("theirs", {"shard": "b"}), ("loose", {})):
        memory.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": name, "namespace": "default", "labels": labels}})
    with pytest.raises(NotHeld):
        kube.get("v1", "Secret", "default", "absent", carries=("claim",))  # starts the caches
    with pytest.raises(NotHeld):
        kube.get("v1", "ConfigMap", "default", "absent")
    watching(emulator, kube)
    held = {}
    for informer in kube.informers():
        if "projected" in informer.name:
            keys = informer.store.keys()
            held[informer.name.split(".")[0]] = sorted(name for _, name in keys)
    assert held == {"Secret": ["loose"], "ConfigMap": ["loose"]}  # another member's children are not watched
    kube.create(secret("mine", "a"))  # a write its identity cache never shows: no read there waits for it (live)
    requests = Requests(kube)
    for kind, carries in (("Secret", ("claim",)), ("ConfigMap", ())):
        for name in ("absent", "theirs"):
            with pytest.raises(NotHeld):
                kube.get("v1", kind, "default", name, carries=carries)
    assert requests.count() == 0
    assert kube.get("v1", "Secret", "default", "loose", carries=("claim",))["data"]["password"] == "c2VjcmV0"
    assert kube.get("v1", "ConfigMap", "default", "loose")["metadata"]["name"] == "loose"
    assert requests.count() == 2
    assert kube.get("v1", "Secret", "default", "theirs")["metadata"]["labels"]["shard"] == "b"
    assert requests.count() == 3


def short_strings(value: object) -> int:
    """The string values a walk interns in ``value`` (``store.SHORT_TEXT``), map keys not counted."""
    if isinstance(value, dict):
        return sum(short_strings(item) for item in value.values())
    if isinstance(value, list):
        return sum(short_strings(item) for item in value)
    return int(isinstance(value, str) and len(value) <= store.SHORT_TEXT)


def test_a_projected_watch_walks_only_what_its_cache_keeps(memory: MemoryCluster, emulator: Emulator,
                                                          make_kube: Callable[..., KubeCluster],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """An event of a kind a member keeps only identities of is cut down before it is interned: the strings
    interned are exactly those of the identities the cache keeps, none of the data, annotations or
    managedFields every member would otherwise walk for every other member's child."""
    kube = make_kube()
    kube.scope_by_labels({("v1", "Secret"): ("claim,shard=a",)})
    kube.project_reads({("v1", "Secret"): ()}, labels={("v1", "Secret"): ("claim",)})
    with pytest.raises(NotCached):
        kube.get("v1", "Secret", "default", "absent", carries=("claim",))  # starts the caches
    watching(emulator, kube)
    seen: list[tuple[str, str]] = []
    real = store._intern
    def counted(text: str) -> str:
        seen.append((threading.current_thread().name, text))
        return real(text)

    monkeypatch.setattr(store, "_intern", counted)
    for index in range(3):
        memory.create(secret(f"theirs-{index}", "b", id=f"{index}", phase="Ready"))
    [projected] = [i for i in kube.informers() if "projected" in i.name]
    assert eventually(lambda: len(projected.store.keys()) == 3)
    # Only the projected informer's own thread: other tests' watch threads may still intern in this process.
    calls = [text for thread, text in seen if thread == f"informer {projected.name}"]
    keys = projected.store.keys()
    held = [projected.store.get(key) for key in keys]
    assert len(calls) == sum(short_strings(obj) for obj in held)
    assert "c2VjcmV0" not in calls and "t-theirs-0" not in calls  # a password's data, an annotation


def test_a_members_get_that_says_it_carries_the_stamp_asks_that_scope_alone_and_its_unstamped_caches(
        memory: MemoryCluster, emulator: Emulator, make_kube: Callable[..., KubeCluster]) -> None:
    """A member's get that says its object carries a scope's keys, the stamp included, is answered by that scope's
    cache alone: no cache of the kind's other label scope opens (one only other order kinds need, decision 0082).
    Its miss still asks the caches of unstamped objects, as a get that names no stamp does (decision 0075): an
    unstamped object of the name is read whole from the server; none -> NotHeld without a request."""
    kube = make_kube()
    kube.scope_by_labels({("v1", "Secret"): ("claim,shard=a", "other,shard=a")})
    kube.project_reads({("v1", "Secret"): ()}, labels={("v1", "Secret"): ("claim", "other")},
                       unstamped={("v1", "Secret"): "!shard"})
    memory.create(secret("theirs", "b"))
    loose = secret("loose", "b")
    del loose["metadata"]["labels"]["shard"]
    memory.create(loose)
    memory.create(secret("mine", "a"))
    carries = ("claim", "shard")
    with pytest.raises(NotHeld):
        kube.get("v1", "Secret", "default", "absent", carries=carries)  # starts the caches
    watching(emulator, kube)
    requests = Requests(kube)
    for name in ("absent", "theirs"):
        with pytest.raises(NotHeld):
            kube.get("v1", "Secret", "default", name, carries=carries)
    assert kube.get("v1", "Secret", "default", "mine", carries=carries)["metadata"]["name"] == "mine"
    assert requests.count() == 0
    assert kube.get("v1", "Secret", "default", "loose", carries=carries)["data"]["password"] == "c2VjcmV0"
    assert requests.count() == 1
    assert not [informer.name for informer in kube.informers() if "other" in informer.name]


def test_a_members_get_that_says_it_carries_the_stamp_still_finds_another_members_object_in_a_cache_of_every_one(
        memory: MemoryCluster, emulator: Emulator, make_kube: Callable[..., KubeCluster]) -> None:
    """A kind a member caches by its stamp and also keeps whole as a projection of every object (a list across
    orders reads it, as the name claims read every K-ORC User): a get that says it carries the stamp and misses the
    stamped cache asks that projection. Another member's object of the name is read whole from the server (so the
    pass's ownership test refuses it, never overwrites it); none -> NotFound, which the projection can tell."""
    kube = make_kube()
    kube.scope_by_labels({("v1", "Secret"): (MINE,)})
    kube.project_reads({("v1", "Secret"): CLAIM})
    memory.create(secret("theirs", "b", id="2"))
    carries = ("shard",)
    with pytest.raises(NotFound) as absent:
        kube.get("v1", "Secret", "default", "absent", carries=carries)  # starts the caches
    assert not isinstance(absent.value, NotCached)
    watching(emulator, kube)
    requests = Requests(kube)
    assert kube.get("v1", "Secret", "default", "theirs", carries=carries)["data"]["password"] == "c2VjcmV0"
    assert requests.count() == 1


WIDGETS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.io"},
    "spec": {"group": "example.io", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def test_a_members_pass_refuses_another_members_child_that_a_projection_of_every_object_holds(
        memory: MemoryCluster, emulator: Emulator, make_kube: Callable[..., KubeCluster],
        rules_dir: Callable[..., Path]) -> None:
    """Rules that list their child kind across orders, reading one path of each (so a member keeps a projection of
    every object of it, as the name claims keep every K-ORC User), and a child name another member's order holds:
    the member's pass reads that object whole and refuses it, leaving it as it was; it never applies over it
    (decision 0082)."""
    catalog = load_catalog(rules_dir(WIDGET.swap(
        "values:\n", "inputs:\n  others:\n    list: {apiVersion: v1, kind: ConfigMap}\n"
                     "values:\n  sizes: \"others[].data.size\"\n")))
    memory.create(WIDGETS_CRD)
    kube = make_kube()
    kube.scope_by_labels(shard_scopes(catalog, f"{SHARD_LABEL}=a"))
    projected = member_projections(catalog, SHARD_LABEL)
    kube.project_reads(projected.paths, projected.labels, projected.unstamped)
    memory.create({"apiVersion": "example.io/v1", "kind": "Widget",
                   "metadata": {"name": "w", "namespace": "ns", "labels": {SHARD_LABEL: "a"}}, "spec": {"size": 2}})
    theirs = memory.create({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "w-part", "namespace": "ns",
                                         "labels": {"example.io/name": "x", "example.io/namespace": "ns",
                                                    "example.io/cluster": "", SHARD_LABEL: "b"}},
                            "data": {"size": "9"}})
    with stamping({SHARD_LABEL: "a"}, frozenset({("v1", "ConfigMap")})):
        run_pass(catalog["example.io/v1/Widget"], Request("example.io/v1/Widget", "", "ns", "w"),
                 clusters=ClusterSet(kube), clock=SystemClock())
    kept = memory.get("v1", "ConfigMap", "ns", "w-part")
    assert kept["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]
    assert kept["metadata"]["labels"][SHARD_LABEL] == "b" and kept["data"] == {"size": "9"}
    order = memory.get("example.io/v1", "Widget", "ns", "w")
    built = next(c for c in order["status"]["conditions"] if c["type"] == "BuiltReady")
    assert "refusing to adopt pre-existing ConfigMap ns/w-part" in built["message"], built
