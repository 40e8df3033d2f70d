"""A shard member's children: stamped with its label as passes write them, taken over (relabelled) before its
first pass of a moved order, and the only ones its watches and caches select (decision 0032)."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from engine.cluster.api import Forbidden, ObjectList
from engine.cluster.kube.scopes import answers
from engine.cluster.registry import ClusterSet
from engine.cluster.selectors import parse_labels
from engine.metrics import Metrics
from engine.outcome import Request
from engine.reconcile.run import run_pass
from engine.reconcile.stamp import stamping
from engine.rules.catalog import load_catalog
from engine.runtime.kinds import member_projections, projections, shard_scoped_kinds, shard_scopes
from engine.runtime.leader import LeaseSettings
from engine.runtime.manager import Manager
from engine.runtime.sharding.labels import MEMBER_LABEL, SHARD_LABEL
from engine.runtime.sharding.member import ShardMember
from offline.clock import SimulatedClock
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster
from tests.conftest import WIDGET

NS = "c5c3-system"
WIDGET_KIND = "example.io/v1/Widget"
CHILD = {"example.io/name": "w", "example.io/namespace": "ns", "example.io/cluster": ""}


class World:
    def __init__(self, rules: Path) -> None:
        self.clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
        self.cluster = MemoryCluster("", clock=self.clock, permissive=True)
        self.edge = MemoryCluster("edge", clock=self.clock, permissive=True)
        self.catalog = load_catalog(rules)
        self.kind = self.catalog[WIDGET_KIND]
        self.request = Request(WIDGET_KIND, "", "ns", "w")

    def clusters(self) -> ClusterSet:
        found = ClusterSet(self.cluster)
        found.engage("edge", self.edge)
        return found

    def order(self, owner: str) -> None:
        self.cluster.create({"apiVersion": "example.io/v1", "kind": "Widget",
                             "metadata": {"name": "w", "namespace": "ns", "labels": {SHARD_LABEL: owner}},
                             "spec": {"size": 2}})

    def member(self, name: str) -> ShardMember:
        settings = LeaseSettings(NS, name, name, lease_duration=15, renew_deadline=10, retry_period=2,
                                 labels=((MEMBER_LABEL, "true"),))
        member = ShardMember(self.clusters(), self.catalog, settings, clock=self.clock)
        member.elector.step()
        return member

    def run(self, member: str | None) -> None:
        if member is None:
            run_pass(self.kind, self.request, clusters=self.clusters(), clock=self.clock)
            return
        with stamping({SHARD_LABEL: member}):
            run_pass(self.kind, self.request, clusters=self.clusters(), clock=self.clock)

    def parts(self, cluster: MemoryCluster | None = None) -> dict[str, str | None]:
        """ConfigMap name -> its shard label."""
        return {item["metadata"]["name"]: (item["metadata"].get("labels") or {}).get(SHARD_LABEL)
                for item in (cluster or self.cluster).list("v1", "ConfigMap").items}


def test_the_children_kinds_a_member_selects(rules_dir: Callable[..., Path]) -> None:
    """The kind the rules write children of (watched by their labels, listed by no one across orders) is cached by
    the member's label; the order kind itself is not among them."""
    world = World(rules_dir(WIDGET))
    assert shard_scoped_kinds(world.catalog) == {("v1", "ConfigMap"): frozenset({WIDGET_KIND})}
    assert shard_scopes(world.catalog, f"{SHARD_LABEL}=a") == {("v1", "ConfigMap"): (f"{SHARD_LABEL}=a",)}
    # Beside them, the identities of the objects no member stamped (decision 0075): never another member's children.
    assert member_projections(world.catalog, SHARD_LABEL).unstamped == {("v1", "ConfigMap"): f"!{SHARD_LABEL}"}
    whole = rules_dir(WIDGET.swap("values:\n", "inputs:\n  others:\n    list: {apiVersion: v1, kind: ConfigMap}\n"
                                               "values:\n  counted: \"length(others)\"\n"))
    assert shard_scoped_kinds(load_catalog(whole)) == {}  # read across orders, items whole: cached whole
    assert projections(load_catalog(whole)) == {}
    some = rules_dir(WIDGET.swap("values:\n", "inputs:\n  others:\n    list: {apiVersion: v1, kind: ConfigMap}\n"
                                              "values:\n  sizes: \"others[].data.size\"\n"))
    assert shard_scoped_kinds(load_catalog(some)) == {("v1", "ConfigMap"): frozenset({WIDGET_KIND})}
    assert projections(load_catalog(some)) == {("v1", "ConfigMap"): (("data", "size"),)}  # a projected cache


def test_a_members_passes_stamp_what_they_write_for_the_order(rules_dir: Callable[..., Path]) -> None:
    """Under a stamp the child carries the member's label; without one (scenarios, an unsharded run) it does not."""
    world = World(rules_dir(WIDGET))
    world.order("a")
    world.run(None)
    assert world.parts() == {"w-part": None}
    world.run("a")
    assert world.parts() == {"w-part": "a"}


def test_a_moved_order_has_its_children_relabelled_before_the_first_pass(rules_dir: Callable[..., Path]) -> None:
    """The new member labels the order's children for itself before its first pass (the previous member's label,
    or none), leaves a same-named order's children of another cluster alone, and its pass then finds the child
    (nothing created twice); later admissions write nothing."""
    world = World(rules_dir(WIDGET))
    world.order("b")
    world.run("a")  # written by the previous member
    world.cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "w-part", "namespace": "edge-ns",
                                       "labels": {**CHILD, "example.io/cluster": "edge", SHARD_LABEL: "c"}}})
    b = world.member("b")
    assert b.admit(world.request) == "run"
    assert world.parts() == {"w-part": "b"}
    assert world.cluster.get("v1", "ConfigMap", "edge-ns", "w-part")["metadata"]["labels"][SHARD_LABEL] == "c"
    version = world.cluster.get("v1", "ConfigMap", "ns", "w-part")["metadata"]["resourceVersion"]
    assert b.admit(world.request) == "run"
    world.run("b")
    assert len(world.cluster.list("v1", "ConfigMap", "ns").items) == 1
    assert world.cluster.get("v1", "ConfigMap", "ns", "w-part")["metadata"]["resourceVersion"] == version


def test_a_take_over_whose_relabel_conflicts_relabels_the_other_children_and_retries(
        rules_dir: Callable[..., Path]) -> None:
    """One child's relabel meets a Conflict (changed meanwhile, or a proxy's 409): the take-over still relabels the
    other children in the same admission and asks for a retry; the next admission relabels what is left."""
    world = World(rules_dir(WIDGET))
    world.order("b")
    for name in ("w-part", "w-spare"):
        world.cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": name, "namespace": "ns", "labels": {**CHILD, SHARD_LABEL: "a"}}})
    faulty = FaultyCluster(world.cluster, cluster_name="")
    clusters = ClusterSet(faulty)
    clusters.engage("edge", world.edge)
    b = ShardMember(clusters, world.catalog, LeaseSettings(NS, "b", "b", labels=((MEMBER_LABEL, "true"),)),
                    clock=world.clock)
    b.elector.step()
    faulty.inject(verb="patch", kind="ConfigMap", error="Conflict")
    assert b.admit(world.request) == "retry"
    assert sorted(world.parts().values()) == ["a", "b"]  # the first relabel conflicted, the second went through
    assert b.admit(world.request) == "run"
    assert world.parts() == {"w-part": "b", "w-spare": "b"}


def test_a_members_child_watch_holds_only_its_childrens(rules_dir: Callable[..., Path]) -> None:
    """A member's runtime watches of the children's kind select by its label: another member's children are not
    held, and they wake none of its orders."""
    world = World(rules_dir(WIDGET))
    for name, owner in (("mine", "a"), ("theirs", "b")):
        world.cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": f"{name}-part", "namespace": "ns",
                                           "labels": {**CHILD, "example.io/name": name, SHARD_LABEL: owner}}})
    manager: Manager[object] = Manager(world.catalog, ClusterSet(world.cluster), clock=world.clock,  # type: ignore[arg-type]
                                       metrics=Metrics(CollectorRegistry()), order_selector=f"{SHARD_LABEL}=a")
    manager.start()
    [children] = [i for i in manager.sources.informers() if i.kind == "ConfigMap"]
    assert children.label == f"{SHARD_LABEL}=a"
    assert sorted(name for _, name in children.cached()) == ["mine-part"]


def test_a_kind_cached_whole_finds_the_previous_members_children_at_teardown(rules_dir: Callable[..., Path]) -> None:
    """Children of a kind the member does not cache by its label (read across orders) are not relabelled on a
    move: the new member's lists of them select by the ownership labels alone, so its teardown still deletes the
    ones the previous member stamped (none is left behind)."""
    listed = WIDGET.swap("values:\n", "inputs:\n  others:\n    list: {apiVersion: v1, kind: ConfigMap}\nvalues:\n"
                                     "  counted: \"length(others)\"\n")
    world = World(rules_dir(listed.swap("steps:\n", "gates:\n  - finalizer: true\n    requeue: 1s\nsteps:\n")))
    world.order("b")
    world.run("a")
    world.run("a")
    assert world.parts() == {"w-part": "a"}
    assert world.cluster.get("example.io/v1", "Widget", "ns", "w")["metadata"]["finalizers"]
    world.cluster.delete("example.io/v1", "Widget", "ns", "w")
    b = world.member("b")
    assert b.admit(world.request) == "run"
    assert world.parts() == {"w-part": "a"}  # not relabelled: the kind is cached whole
    b.recorded(run_pass)(world.kind, world.request, clusters=world.clusters(), clock=world.clock,
                         log=logging.getLogger("test"))
    assert world.parts() == {}


class NamespacedRights:
    """A cluster where the operator may list only in some namespaces (a registration's): a list across every
    namespace is Forbidden, as the API server answers a Role-only service account."""

    def __init__(self, inner: MemoryCluster) -> None:
        self._inner = inner

    def list(self, api_version: str, kind: str, namespace: str | None = None, **kwargs: object) -> ObjectList:
        if namespace is None:
            raise Forbidden(f"{kind} is forbidden: cannot list at the cluster scope")
        return self._inner.list(api_version, kind, namespace, **kwargs)  # type: ignore[arg-type]

    def __getattr__(self, attr: str) -> object:
        return getattr(self._inner, attr)


def test_the_take_over_lists_only_the_namespaces_a_cluster_is_watched_in(rules_dir: Callable[..., Path]) -> None:
    """Where a cluster is watched in some namespaces only, the new member lists the children there, namespace by
    namespace (a list across every namespace may be forbidden), and still takes them over."""
    world = World(rules_dir(WIDGET))
    world.order("b")
    world.run("a")
    b = world.member("b")
    restricted = ClusterSet(NamespacedRights(world.cluster))  # type: ignore[arg-type]
    restricted.engage("edge", world.edge)
    b._clusters = restricted
    assert b.admit(world.request) == "retry"  # every namespace: forbidden
    b.namespaces_of = lambda cluster: ("ns",) if cluster == "" else None
    assert b.admit(world.request) == "run"
    assert world.parts() == {"w-part": "b"}


class CountedLists:
    """A cluster that counts the lists sent to it."""

    def __init__(self, inner: MemoryCluster) -> None:
        self._inner = inner
        self.lists = 0

    def list(self, *args: object, **kwargs: object) -> ObjectList:
        self.lists += 1
        return self._inner.list(*args, **kwargs)  # type: ignore[arg-type]

    def __getattr__(self, attr: str) -> object:
        return getattr(self._inner, attr)


def test_the_take_over_lists_only_the_clusters_the_rules_can_write_children_on(
        rules_dir: Callable[..., Path]) -> None:
    """Rules that write children on the management cluster only: the take-over of an order on a target cluster lists
    the management cluster alone, neither the order's cluster (the kind is watched on the management cluster only:
    no cache there holds it, and a target cluster's RBAC grants no list of it) nor a third registered one (no child
    of the order can be there), and takes its child over. Rules that name a cluster by a text may have put children
    anywhere, and watch them everywhere: every cluster is listed, and the child found on the named one is taken over
    too."""
    labels = {**CHILD, "example.io/cluster": "edge", SHARD_LABEL: "a"}
    for rule, named in ((WIDGET, False), (WIDGET.swap("    as: part\n", "    as: part\n        cluster: far\n"), True)):
        world = World(rules_dir(rule))
        assert world.kind.writes_named_clusters is named
        far = MemoryCluster("far", clock=world.clock, permissive=True)
        world.edge.create({"apiVersion": "example.io/v1", "kind": "Widget",
                           "metadata": {"name": "w", "namespace": "ns", "labels": {SHARD_LABEL: "b"}},
                           "spec": {"size": 2}})
        for cluster in (world.cluster, far):
            cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "w-part", "namespace": "ns", "labels": labels}})
        counted = {"": CountedLists(world.cluster), "edge": CountedLists(world.edge), "far": CountedLists(far)}
        b = world.member("b")
        b._clusters = ClusterSet(counted[""])  # type: ignore[arg-type]
        for name in ("edge", "far"):
            b._clusters.engage(name, counted[name])  # type: ignore[arg-type]
        assert b.admit(Request(WIDGET_KIND, "edge", "ns", "w")) == "run"
        listed = {name: cluster.lists for name, cluster in counted.items()}
        assert listed == {"": 1, "edge": int(named), "far": int(named)}
        assert world.parts() == {"w-part": "b"}
        assert world.parts(far) == {"w-part": "b" if named else "a"}


def test_an_order_no_pass_took_past_its_finalizer_is_admitted_without_a_take_over(
        rules_dir: Callable[..., Path]) -> None:
    """Steps, which alone write children, run only once the order carries its kind's finalizer: a new order (no
    finalizer) can have no child anywhere, so its first admission lists nothing. Once a pass installed the finalizer,
    a member new to the order (a move) lists and relabels its children before its first pass, as before."""
    world = World(rules_dir(WIDGET.swap("steps:\n", "gates:\n  - finalizer: true\n    requeue: 1s\nsteps:\n")))
    world.order("a")
    counted = CountedLists(world.cluster)
    a = world.member("a")
    a._clusters = ClusterSet(counted)  # type: ignore[arg-type]
    assert a.admit(world.request) == "run"
    assert counted.lists == 0
    world.run("a")  # the finalizer
    world.run("a")  # the child
    assert world.parts() == {"w-part": "a"}
    order = world.cluster.get("example.io/v1", "Widget", "ns", "w")
    world.cluster.update({**order, "metadata": {**order["metadata"], "labels": {SHARD_LABEL: "b"}}})
    b = world.member("b")
    b._clusters = ClusterSet(counted)  # type: ignore[arg-type]
    assert b.admit(world.request) == "run"
    assert counted.lists == 1
    assert world.parts() == {"w-part": "b"}


def test_an_order_whose_name_no_label_holds_is_admitted(rules_dir: Callable[..., Path]) -> None:
    """An order whose name is longer than a label value (stored where no rule refused it) is admitted, so its
    passes (its teardown above all) run: the list of its children only asks that the name label be there, and a
    child of another order in its namespace is not taken."""
    world = World(rules_dir(WIDGET))
    name = "w" * 64
    world.request = Request(WIDGET_KIND, "", "ns", name)
    world.cluster.seed({"apiVersion": "example.io/v1", "kind": "Widget",
                        "metadata": {"name": name, "namespace": "ns", "labels": {SHARD_LABEL: "b"}}, "spec": {}})
    world.cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": f"{name}-part", "namespace": "ns",
                                       "labels": {**CHILD, SHARD_LABEL: "a"}}})
    b = world.member("b")
    assert b.admit(world.request) == "run"
    assert world.parts() == {f"{name}-part": "a"}


RETIRED = WIDGET.add_after("""  size: "order.spec.size || `1`"
""", """inputs:
  retired:
    list: {apiVersion: v1, kind: ConfigMap, namespace: "{{ childNamespace }}", labels: {example.io/retired: "yes"}}
    children: true
""").swap("""      - apply: part.yaml.j2
        as: part
""", """      - delete: retired
      - apply: part.yaml.j2
        as: part
""")


class CarriesSaid(FaultyCluster):
    """Records the kind and the labels each get says its object carries."""

    said: list[tuple[str, tuple[str, ...]]]

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, **options: Any) -> Any:
        self.said = [*getattr(self, "said", []), (kind, tuple(sorted(options.get("carries") or ())))]
        return super().get(api_version, kind, namespace, name, **options)


def test_a_members_lookup_of_a_child_says_it_carries_the_stamp(rules_dir: Callable[..., Path]) -> None:
    """The child a member's pass is about to write is looked up by the labels it will carry, the stamp too: the
    member's cache of the children it stamped answers alone, so no cache of another label scope of the kind (one
    only other order kinds need) is opened for it (decision 0082). Without a stamp nothing changes."""
    world = World(rules_dir(WIDGET))
    world.order("a")
    gets = CarriesSaid(world.cluster, cluster_name="")
    with stamping({SHARD_LABEL: "a"}, frozenset({("v1", "ConfigMap")})):
        run_pass(world.kind, world.request, clusters=ClusterSet(gets), clock=world.clock)
    assert ("ConfigMap", tuple(sorted((*CHILD, SHARD_LABEL)))) in gets.said
    unsharded = CarriesSaid(world.cluster, cluster_name="")
    run_pass(world.kind, world.request, clusters=ClusterSet(unsharded), clock=world.clock)
    assert ("ConfigMap", tuple(sorted(CHILD))) in unsharded.said


class SelectorsListed(FaultyCluster):
    """Records the kind and label selector of every list."""

    selectors: list[tuple[str, object]]

    def list(self, api_version: str, kind: str, namespace: str | None = None, **options: Any) -> ObjectList:
        self.selectors = [*getattr(self, "selectors", []), (kind, options.get("labels"))]
        return super().list(api_version, kind, namespace, **options)


def test_a_list_of_children_by_a_label_selects_by_the_members_stamp_too(rules_dir: Callable[..., Path]) -> None:
    """A ``children: true`` list that also names a label selects by the order's own labels and the member's stamp
    as well, so the member's cache of its own children answers it; it still finds only that order's children with
    the label (another order's, another member's, an untagged one are kept)."""
    world = World(rules_dir(RETIRED))
    for name, labels in (("w-old", {**CHILD, "example.io/retired": "yes", SHARD_LABEL: "a"}),
                         ("w-kept", {**CHILD, SHARD_LABEL: "a"}),
                         ("x-old", {**CHILD, "example.io/name": "x", "example.io/retired": "yes", SHARD_LABEL: "a"})):
        world.cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": name, "namespace": "ns", "labels": labels}})
    world.order("a")
    lists = SelectorsListed(world.cluster, cluster_name="")
    with stamping({SHARD_LABEL: "a"}, frozenset({("v1", "ConfigMap")})):
        run_pass(world.kind, world.request, clusters=ClusterSet(lists), clock=world.clock)
    [listed] = [labels for kind, labels in lists.selectors if kind == "ConfigMap"]
    assert listed == {**CHILD, "example.io/retired": "yes", SHARD_LABEL: "a"}
    assert answers(f"{SHARD_LABEL}=a", parse_labels(",".join(f"{k}={v}" for k, v in listed.items())))
    assert sorted(world.parts()) == ["w-kept", "w-part", "x-old"]
