"""Rule reload under sharding, step by step on a simulated clock: members switch rule sets at different polls; the
leader gives an order only to a member whose Lease says it serves the order's kind, and takes it from one that no
longer does; a pass runs on the rules its admission read; a kind a member gains never trusts an old label."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runtime_kit import API, FakeKind, FakePass, FakeWatch, obj, request
from test_sharding import NS, World
from test_sharding_children import CHILD, CountedLists
from test_sharding_children import World as ChildWorld

from engine.cluster.api import ApiError, Obj
from engine.cluster.registry import ClusterSet
from engine.outcome import Request, Result
from engine.rules.catalog import load_catalog
from engine.runtime.leader import LEASE_API_VERSION
from engine.runtime.sharding.labels import DRAIN_LABEL, SHARD_LABEL
from engine.runtime.sharding.member import ShardMember
from engine.runtime.sharding.serving import KINDS_ANNOTATION, RULES_ANNOTATION, eligible, published, served_by
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster
from tests.conftest import WIDGET

GADGET = f"{API}/Gadget"
GADGETS = 30


def gadget_kind() -> FakeKind:
    return FakeKind(watches=(FakeWatch("Gadget", order_kind=GADGET),), kind="Gadget")


def gadget(name: str) -> Request:
    return Request(GADGET, "", "ns", name)


class Rollout(World):
    """The world of ``test_sharding`` with a second order kind, Gadget, that some rule sets have."""

    def __init__(self) -> None:
        super().__init__()
        self.gadget = gadget_kind()
        self.both = {self.kind.key: self.kind, GADGET: self.gadget}
        self.widgets_only = {self.kind.key: self.kind}
        for n in range(GADGETS):
            self.cluster.create(obj("Gadget", f"g{n:02}"))

    def reload(self, name: str, catalog: dict[str, Any]) -> None:
        """A member polls its rule folder and serves ``catalog``; its next renewal says so."""
        self.members[name].replace_rules(catalog)

    def gadget_owners(self) -> dict[str, str]:
        return {o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get(SHARD_LABEL, "")
                for o in self.cluster.list(API, "Gadget").items}

    def lease(self, name: str) -> Obj:
        return self.cluster.get(LEASE_API_VERSION, "Lease", NS, self.members[name].name)


def test_a_members_lease_says_which_rules_and_order_kinds_it_serves_and_follows_a_reload() -> None:
    world = Rollout()
    a = world.join("a")
    annotations = world.lease("a")["metadata"]["annotations"]
    assert annotations[KINDS_ANNOTATION] == world.kind.key and RULES_ANNOTATION in annotations
    world.reload("a", world.both)
    assert published(world.lease("a")) == {world.kind.key}  # said with its next write of the Lease
    world.tick("a")
    assert published(world.lease("a")) == {world.kind.key, GADGET}
    assert a.active.is_set()


def test_a_kind_added_by_a_rollout_goes_only_to_the_members_that_serve_it_already() -> None:
    """b and c reloaded a set that adds Gadget, a has not yet: no gadget is given to a, the widgets stay put."""
    world = Rollout()
    for name in ("a", "b", "c"):
        world.join(name)
    world.assigner.step()
    widgets = world.owners()
    world.assigner.replace_catalog(world.both)  # the leader reloaded the new set too
    for name in ("b", "c"):
        world.reload(name, world.both)
    world.tick("a", "b", "c")
    done = world.assigner.step()
    assert done.moves == {"assigned": GADGETS}
    assert set(world.gadget_owners().values()) == {"b", "c"}
    assert world.owners() == widgets
    world.reload("a", world.both)
    world.tick("a", "b", "c")
    done = world.assigner.step()  # a serves Gadget now: the ring over three takes some to it, by the drain
    assert set(done.moves) == {"drain"} and 0 < done.moves["drain"] < GADGETS
    assert world.owners() == widgets


def test_orders_of_a_kind_a_member_no_longer_serves_move_at_once_and_it_runs_none_of_them() -> None:
    world = Rollout()
    world.assigner.replace_catalog(world.both)
    for name in ("a", "b", "c"):
        world.join(name)
        world.reload(name, world.both)
    world.tick("a", "b", "c")
    world.assigner.step()
    on_a = sorted(name for name, member in world.gadget_owners().items() if member == "a")
    assert on_a
    a = world.members["a"]
    world.reload("a", world.widgets_only)
    ran = FakePass()
    assert a.admit(gadget(on_a[0])) == "run"  # a kind its rules do not have: the pass does not run either
    assert a.passes(ran)(world.gadget, gadget(on_a[0]), clusters=world.clusters(), clock=world.clock,
                         log=a._log) == Result()
    assert ran.runs == []
    assert world.assigner.step().moves == {}  # its Lease still says Gadget: nothing moves yet
    world.tick("a", "b", "c")
    done = world.assigner.step()
    assert done.moves == {"unserved": len(on_a)}
    owners = world.gadget_owners()
    assert {owners[name] for name in on_a} <= {"b", "c"} and "a" not in owners.values()
    assert not any(DRAIN_LABEL in (o["metadata"].get("labels") or {}) for o in world.cluster.list(API, "Gadget").items)
    assert world.metrics.registry.get_sample_value("c5c3_operator_shard_moves_total", {"how": "unserved"}) == len(on_a)


def test_a_kind_no_live_member_serves_is_left_as_it_is() -> None:
    world = Rollout()
    world.assigner.replace_catalog(world.both)
    for name in ("a", "b"):
        world.join(name)
    world.tick("a", "b")
    assert world.assigner.step().moves == {"assigned": len(world.orders())}
    assert set(world.gadget_owners().values()) == {""}


def test_a_member_says_it_serves_a_kind_while_a_pass_of_it_still_runs_on_the_rules_before() -> None:
    world = Rollout()
    a = world.join("a")
    world.reload("a", world.both)
    world.tick("a")
    world.assigner.replace_catalog(world.both)
    world.assigner.step()
    said: list[frozenset[str] | None] = []

    def slow(kind: FakeKind, req: Request, **_: Any) -> Result:
        world.reload("a", world.widgets_only)  # the rules change while this pass runs
        world.tick("a")
        said.append(published(world.lease("a")))
        return Result()

    assert a.admit(gadget("g00")) == "run"
    a.passes(slow)(world.gadget, gadget("g00"), clusters=world.clusters(), clock=world.clock, log=a._log)
    assert said == [{world.kind.key, GADGET}]
    world.tick("a")
    assert published(world.lease("a")) == {world.kind.key}


def test_a_pass_runs_on_the_rules_its_admission_read_or_not_at_all() -> None:
    """A reload between the admission and the pass: the pass does not run (the reload queues every order again);
    admitted again, it runs on the new rules."""
    world = Rollout()
    a = world.join("a")
    world.assigner.step()
    kinds: list[Any] = []

    def seen(kind: FakeKind, req: Request, **_: Any) -> Result:
        kinds.append(kind)
        return Result()

    assert a.admit(request("w00")) == "run"
    edited = FakeKind(watches=world.kind.watches, quiet_names=("edited",))
    world.reload("a", {world.kind.key: edited})
    a.passes(seen)(world.kind, request("w00"), clusters=world.clusters(), clock=world.clock, log=a._log)
    assert kinds == []
    assert a.admit(request("w00")) == "run"
    a.passes(seen)(world.kind, request("w00"), clusters=world.clusters(), clock=world.clock, log=a._log)
    assert kinds == [edited]  # the kind its admission read, not the one handed in


def test_a_kind_a_member_gains_never_trusts_a_label_written_before() -> None:
    """a served Gadget, stopped, and serves it again: what still carries its label may have been given on meanwhile,
    so it is handed back (the leader places it afresh) before a pass of it can run."""
    world = Rollout()
    world.assigner.replace_catalog(world.both)
    a = world.join("a")
    world.reload("a", world.both)
    world.tick("a")
    world.assigner.step()
    assert set(world.gadget_owners().values()) == {"a"}
    world.reload("a", world.widgets_only)
    world.reload("a", world.both)
    assert set(world.gadget_owners().values()) == {""}
    assert a.admit(gadget("g00")) == "skip"
    world.tick("a")
    assert world.assigner.step().moves == {"assigned": GADGETS}


def test_a_lease_that_does_not_say_serves_every_kind() -> None:
    leases = [{"metadata": {"name": "old"}},
              {"metadata": {"name": "new", "annotations": {KINDS_ANNOTATION: "x/v1/A, x/v1/B"}}},
              {"metadata": {"name": "none", "annotations": {KINDS_ANNOTATION: ""}}},
              {"metadata": {"name": "odd", "annotations": [KINDS_ANNOTATION]}}]
    served = served_by(leases)
    assert served == {"old": None, "new": {"x/v1/A", "x/v1/B"}, "none": frozenset(), "odd": None}
    assert eligible(["new", "none", "odd", "old"], served, "x/v1/B") == ["new", "odd", "old"]
    assert eligible(["new", "none", "odd", "old"], served, "x/v1/C") == ["odd", "old"]


def test_a_member_built_without_a_rules_hash_still_says_its_kinds() -> None:
    world = Rollout()
    member = ShardMember(ClusterSet(world.cluster), world.both, world.join("a").settings,
                         clock=world.clock)
    assert member.annotations() == {RULES_ANNOTATION: "", KINDS_ANNOTATION: f"{GADGET},{world.kind.key}"}


def test_a_reload_that_changes_what_a_take_over_labels_takes_every_order_over_again(
        rules_dir: Callable[..., Path]) -> None:
    """A member took an order over under rules that write its children on the management cluster only; the reloaded
    rules write one on a cluster they name: before its next pass the order is taken over again, so the child another
    member wrote there is in this member's caches. A reload that changes nothing a take-over labels lists nothing."""
    world = ChildWorld(rules_dir(WIDGET))
    far = MemoryCluster("far", clock=world.clock, permissive=True)
    far.create({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "w-part", "namespace": "ns", "labels": {**CHILD, SHARD_LABEL: "a"}}})
    world.order("b")
    counted = CountedLists(far)
    b = world.member("b")
    b._clusters.engage("far", counted)  # type: ignore[arg-type]
    assert b.admit(world.request) == "run"
    assert counted.lists == 0 and world.parts(far) == {"w-part": "a"}
    b.replace_rules(load_catalog(rules_dir(WIDGET)))  # the same rules, loaded again
    assert b.admit(world.request) == "run"
    assert counted.lists == 0
    b.replace_rules(load_catalog(rules_dir(WIDGET.swap("    as: part\n", "    as: part\n        cluster: far\n"))))
    assert b.admit(world.request) == "run"
    assert counted.lists == 1 and world.parts(far) == {"w-part": "b"}


def test_a_regained_kind_whose_hand_back_fails_is_not_taken_this_time() -> None:
    """The hand-back before a regained kind meets a Conflict (the order changed since the list): it reads the order
    again and hands it back all the same; one that keeps failing with a server error refuses the set this time
    (the next poll takes it)."""
    world = Rollout()
    world.assigner.replace_catalog(world.both)
    a = world.join("a")
    world.reload("a", world.both)
    world.tick("a")
    world.assigner.step()
    world.reload("a", world.widgets_only)
    faulty = FaultyCluster(world.cluster, cluster_name="")
    a._clusters = world.clusters(faulty)
    faulty.inject(verb="update", kind="Gadget", name="g03", error="Conflict")
    faulty.inject(verb="update", kind="Gadget", name="g05", error="ServerError")
    with pytest.raises(ApiError):
        world.reload("a", world.both)
    assert a._serving.rules.catalog == world.widgets_only
    assert world.gadget_owners()["g03"] == "" and world.gadget_owners()["g05"] == "a"
    world.reload("a", world.both)
    assert set(world.gadget_owners().values()) == {""}
    assert a._serving.rules.catalog == world.both


class Counted:
    """A cluster that records the verbs sent to it."""

    def __init__(self, inner: MemoryCluster) -> None:
        self._inner = inner
        self.verbs: list[str] = []

    def __getattr__(self, attr: str) -> Any:
        found = getattr(self._inner, attr)
        if attr not in ("get", "list", "create", "update", "patch", "delete"):
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            self.verbs.append(attr)
            return found(*args, **kwargs)

        return call


def test_what_a_member_serves_rides_on_its_renewals() -> None:
    """A reload that gains no kind sends nothing; the renewal after it carries the new kinds in its one update."""
    world = Rollout()
    counted = Counted(world.cluster)
    world.join("a", management=counted)
    world.tick("a")
    counted.verbs.clear()
    world.reload("a", {world.kind.key: FakeKind(watches=world.kind.watches, quiet_names=("edited",))})
    assert counted.verbs == []
    world.tick("a")
    assert counted.verbs == ["update"]
    world.reload("a", world.widgets_only)
    world.reload("a", world.both)  # gains Gadget: one list of it per cluster
    assert counted.verbs == ["update", "list"]
    counted.verbs.clear()
    world.tick("a")
    assert counted.verbs == ["update"] and published(world.lease("a")) == {world.kind.key, GADGET}
