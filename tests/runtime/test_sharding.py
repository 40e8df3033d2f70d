"""Sharding, step by step on a simulated clock: spread, joins drain, lapsed members, leaving, admission."""

from __future__ import annotations

import collections
import datetime as dt
import random
import re
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from runtime_kit import (
    API,
    ORDER,
    OWNER_LABEL,
    START,
    FakeKind,
    FakePass,
    FakeWatch,
    memory,
    obj,
    request,
    widget_kind,
)

from engine.cluster.api import MANAGEMENT_CLUSTER, ApiError, Obj
from engine.cluster.patches import json_copy
from engine.cluster.registry import ClusterSet
from engine.metrics import Metrics
from engine.outcome import PassError, Request, Result
from engine.runtime.kinds import shard_scoped_kinds
from engine.runtime.leader import LEASE_API_VERSION, LeaseSettings
from engine.runtime.manager import Manager
from engine.runtime.sharding import ring
from engine.runtime.sharding.assigner import Assigner
from engine.runtime.sharding.labels import DRAIN_LABEL, MEMBER_LABEL, SHARD_LABEL
from engine.runtime.sharding.member import ShardMember
from engine.runtime.sharding.ring import member_name, order_key, owner
from offline.clock import SimulatedClock
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster

NS = "c5c3-system"
S = dt.timedelta(seconds=1)
ORDERS = 60


class World:
    """One management cluster with orders, members stepping their Leases, and the leader's assigner."""

    def __init__(self, orders: int = ORDERS, clusters: tuple[str, ...] = ()) -> None:
        self.clock = SimulatedClock(START)
        self.cluster = memory("", self.clock)
        self.targets = {name: memory(name, self.clock) for name in clusters}
        self.kind = widget_kind()
        self.catalog = {self.kind.key: self.kind}
        for cluster in (self.cluster, *self.targets.values()):
            for n in range(orders):
                cluster.create(obj("Widget", f"w{n:02}"))
        self.members: dict[str, ShardMember] = {}
        self.metrics = Metrics(CollectorRegistry())
        self.assigner = Assigner(self.clusters(), self.catalog, NS, clock=self.clock, lease_duration=15,
                                 metrics=self.metrics)

    def clusters(self, management: Any = None) -> ClusterSet:
        found = ClusterSet(management or self.cluster)
        for name, target in self.targets.items():
            found.engage(name, target)
        return found

    def join(self, name: str, management: Any = None) -> ShardMember:
        settings = LeaseSettings(NS, name, name, lease_duration=15, renew_deadline=10, retry_period=2,
                                 labels=((MEMBER_LABEL, "true"),))
        member = ShardMember(self.clusters(management), self.catalog, settings, clock=self.clock)
        self.members[name] = member
        member.elector.step()
        return member

    def tick(self, *renewing: str, seconds: int = 2) -> None:
        """Move the clock; the named members renew, every member checks its deadline."""
        self.clock.advance(seconds * S)
        for name, member in self.members.items():
            if name in renewing:
                member.elector.step()
            member.elector.check_deadline()

    def lapsed(self) -> list[str]:
        """The members (by their first name) a tenure of which lapsed."""
        return [name for name, member in self.members.items() if member.lapses]

    def orders(self) -> dict[tuple[str, str], Obj]:
        found = {}
        for name, cluster in [(MANAGEMENT_CLUSTER, self.cluster), *self.targets.items()]:
            for order in cluster.list("example.io/v1", "Widget").items:
                found[(name, order["metadata"]["name"])] = order
        return found

    def owners(self) -> dict[tuple[str, str], str]:
        return {key: (o["metadata"].get("labels") or {}).get(SHARD_LABEL, "") for key, o in self.orders().items()}

    def acknowledge_drains(self) -> int:
        """Every member runs its workers' admission on its orders asked to drain (as a pass slot would)."""
        acked = 0
        for (cluster, name), order in self.orders().items():
            labels = order["metadata"].get("labels") or {}
            if DRAIN_LABEL in labels:
                verdict = self.members[labels[SHARD_LABEL]].admit(request(name, cluster=cluster))
                assert verdict == "skip"
                acked += 1
        return acked


def test_rendezvous_moves_only_what_the_new_member_wins() -> None:
    """Adding a fourth member moves about a quarter of the keys, all of them to it; removing one moves only its."""
    keys = [order_key("", ORDER, "ns", f"o{n}") for n in range(2000)]
    three = {k: owner(k, ["a", "b", "c"]) for k in keys}
    four = {k: owner(k, ["a", "b", "c", "d"]) for k in keys}
    moved = [k for k in keys if three[k] != four[k]]
    assert {four[k] for k in moved} == {"d"}
    assert 400 < len(moved) < 600
    two = {k: owner(k, ["a", "c"]) for k in keys}
    assert all(two[k] == three[k] for k in keys if three[k] != "b")
    assert set(collections.Counter(three.values())) == {"a", "b", "c"}
    assert min(collections.Counter(three.values()).values()) > 550


POD_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""What Kubernetes draws the random parts of a Deployment's pod names from."""
KEYS = [order_key(cluster, kind, f"tenant-{n % 25:02}", f"order-{n:03}")
        for cluster in ("", "edge-1", "edge-2") for kind in (ORDER, f"{API}/Gadget") for n in range(500)]
"""3000 orders: two kinds on the management and two target clusters, in 25 namespaces."""
DRAWS = 40
"""Member sets drawn, each with names new to it (a seeded RNG: the same draws every run)."""
PER_DRAW = 0.04
"""Tolerance of one draw's share. If the hash behaves as a random function, a member's count of 3000 keys is
binomial: sd sqrt(p(1-p)/3000) = 0.86 points for p = 1/3, 0.79 for 1/4; 4 points is 4.6 sd or more, which a sound
hash exceeds with probability about 4e-6 per share (about 1e-3 for all 200 shares checked here, and the seed fixes
the outcome), while a member favoured or starved by 4 points fails in every draw."""
POOLED = 0.007
"""Tolerance of a share pooled over the draws (120,000 placements: sd 0.14 points for 1/3, 0.13 for 1/4; 0.7
points is 5 sd or more): catches a bias by name order (the tie-break, names sharing a long prefix) too small to
show in one draw."""


def replica_names(rng: random.Random, count: int) -> list[str]:
    """``count`` member names as ``engine run --sharded`` makes them for the replicas of one Deployment (operator.py):
    the default identity ``<pod name>_<uuid4>``, cut to fit by ``member_name``, then six hex digits drawn at start."""
    template = "".join(rng.choice(POD_ALPHABET) for _ in range(10))
    names: list[str] = []
    while len(names) < count:
        pod = f"c5c3-operator-{template}-{''.join(rng.choice(POD_ALPHABET) for _ in range(5))}"
        name = member_name(f"{pod}_{uuid.UUID(int=rng.getrandbits(128), version=4)}", f"{rng.getrandbits(24):06x}")
        if name not in names:
            names.append(name)
    return names


@dataclass(frozen=True)
class Draw:
    """Four members in the order they join, and each key's owner among the first 2, 3 and 4 of them."""

    members: list[str]
    owners: dict[int, list[str | None]]


@pytest.fixture(scope="module")
def draws() -> list[Draw]:
    rng = random.Random(13)
    found = []
    for _ in range(DRAWS):
        members = replica_names(rng, 4)
        found.append(Draw(members, {n: [owner(k, members[:n]) for k in KEYS] for n in (2, 3, 4)}))
    return found


def test_realistic_members_share_the_orders_about_evenly(draws: list[Draw]) -> None:
    """Three members, named as a Deployment's replicas are, each hold 1/3 of 3000 orders +- 4 points in every draw;
    the first, second and last by name 1/3 +- 0.7 points over all the draws."""
    pooled: collections.Counter[int] = collections.Counter()
    for draw in draws:
        held = collections.Counter(draw.owners[3])
        shares = {m: held[m] / len(KEYS) for m in draw.members[:3]}
        assert all(abs(share - 1 / 3) <= PER_DRAW for share in shares.values()), shares
        for rank, member in enumerate(sorted(draw.members[:3])):
            pooled[rank] += held[member]
    shares_by_rank = [pooled[rank] / (len(KEYS) * len(draws)) for rank in range(3)]
    assert all(abs(share - 1 / 3) <= POOLED for share in shares_by_rank), shares_by_rank


@pytest.mark.parametrize(("before", "after"), [(2, 3), (3, 4)])
def test_a_joining_member_takes_about_1_over_n_and_only_what_it_wins(draws: list[Draw], before: int,
                                                                    after: int) -> None:
    """A member joining n - 1 others (named as replicas are) moves 1/n of 3000 orders +- 4 points in every draw,
    1/n +- 0.7 points over all the draws, and every order that moves, moves to it (one leaving moves only its own)."""
    moved_total = 0
    for draw in draws:
        old, new = draw.owners[before], draw.owners[after]
        moved = [n for n in range(len(KEYS)) if old[n] != new[n]]
        assert {new[n] for n in moved} == {draw.members[after - 1]}
        assert abs(len(moved) / len(KEYS) - 1 / after) <= PER_DRAW, (len(moved), len(KEYS))
        moved_total += len(moved)
    pooled = moved_total / (len(KEYS) * len(draws))
    assert abs(pooled - 1 / after) <= POOLED, pooled


def test_member_names_are_lease_names_and_label_values_unique_per_start() -> None:
    """An identity becomes a DNS label of at most 63 characters, ending with this start's incarnation."""
    name = member_name("Pod_Name.example_" + "x" * 80 + "_1234", "a1b2c3")
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name) and len(name) <= 63
    assert name.endswith("-a1b2c3")
    assert member_name("host_6f1c", "000001") != member_name("host_6f1c", "000002")


def test_the_leader_labels_every_order_with_a_live_member_about_evenly() -> None:
    """Three members: every order, on the management and a target cluster, carries one member's label."""
    world = World(clusters=("edge",))
    for name in ("a", "b", "c"):
        world.join(name)
    done = world.assigner.step()
    assert done.members == ["a", "b", "c"]
    owners = world.owners()
    assert len(owners) == 2 * ORDERS and set(owners.values()) == {"a", "b", "c"}
    assert min(collections.Counter(owners.values()).values()) >= 25
    assert done.moves == {"assigned": 2 * ORDERS}
    assert world.assigner.step().moves == {}  # stable: nothing more to write
    text = world.metrics.registry.get_sample_value("c5c3_operator_shard_orders", {"member": "a"})
    assert text == owners_count(owners, "a")
    assert world.metrics.registry.get_sample_value("c5c3_operator_shard_members") == 3


def test_a_round_hashes_only_the_orders_it_has_not_placed_by_the_same_members(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The leader places every order every round: a round with the members of the one before hashes no order it
    placed then (at 20,000 orders and three members that was 60,000 hashes a round), a new order is hashed once,
    and a member joining has every order placed again by the four."""
    hashed: list[str] = []

    def counted(member: str, key: str) -> int:
        hashed.append(key)
        return real(member, key)

    real = ring.score
    monkeypatch.setattr(ring, "score", counted)
    world = World()
    for name in ("a", "b", "c"):
        world.join(name)
    world.assigner.step()
    assert len(hashed) == 3 * ORDERS
    hashed.clear()
    world.cluster.create(obj("Widget", "late"))
    assert world.assigner.step().moves == {"assigned": 1}
    assert len(hashed) == 3 and all(key.endswith("late") for key in hashed)
    hashed.clear()
    world.cluster.delete("example.io/v1", "Widget", "ns", "w00")
    assert world.assigner.step().moves == {}
    assert hashed == []
    world.join("d")
    drained = world.assigner.step().moves["drain"]
    assert len(hashed) == 4 * ORDERS  # every order again, by the four: the ones "d" wins are asked to drain
    assert drained == sum(1 for key in world.owners()
                          if ring.owner(order_key("", world.kind.key, "ns", key[1]), ["a", "b", "c", "d"]) == "d")


class Changes:
    """What the leader's keys-only views count (``Sources.keys_changes``), moved by hand; the orders each round
    reads counted."""

    def __init__(self, world: World) -> None:
        self.count = 0
        self.reads = 0
        self._world = world
        world.assigner.changes = lambda: self.count
        world.assigner.orders = self._orders

    def _orders(self, cluster: str, api_version: str, kind: str) -> list[Obj] | None:
        self.reads += 1
        return self._world.cluster.list(api_version, kind).items


def test_a_round_looks_at_no_order_while_nothing_it_places_by_changed_since_one_that_wrote_nothing() -> None:
    """A round after one that wrote nothing, with the same members and no order added, removed or relabelled,
    reads no order (the keys views' count has not grown); a new order, a member joining, a reload or a write the
    round before each make the next round place every order again, and the owned metric stays the full count."""
    world = World()
    changes = Changes(world)
    for name in ("a", "b"):
        world.join(name)
    assert world.assigner.step().moves == {"assigned": ORDERS}
    changes.count += ORDERS  # the label events of those writes
    placed = world.assigner.step()  # a round that wrote something is not a basis: this one looks again
    assert (placed.quiet, placed.moves, changes.reads) == (False, {}, 2)
    quiet = world.assigner.step()
    assert (quiet.quiet, changes.reads) == (True, 2)
    assert quiet.owned == placed.owned and sum(quiet.owned.values()) == ORDERS
    assert world.metrics.registry.get_sample_value("c5c3_operator_shard_orders", {"member": "a"}) == placed.owned["a"]

    world.cluster.create(obj("Widget", "late"))
    assert world.assigner.step().quiet  # the views have not shown it yet: nothing to place it by
    changes.count += 1
    assert world.assigner.step().moves == {"assigned": 1}
    changes.count += 1
    world.assigner.step()
    assert world.assigner.step().quiet

    world.join("c")
    joined = world.assigner.step()
    assert not joined.quiet and joined.moves["drain"] > 0
    world.assigner.replace_catalog(dict(world.catalog))
    assert not world.assigner.step().quiet  # a reloaded rule set: every order again


def test_a_round_whose_write_failed_is_no_basis_for_a_quiet_one() -> None:
    """A label write that met a Conflict is decided again by the next round even though no count grew."""
    world = World(orders=4)
    changes = Changes(world)
    world.join("a")
    faulty = FaultyCluster(world.cluster, cluster_name="")
    faulty.inject(verb="patch", kind="Widget", name="w00", error="Conflict")
    world.assigner._clusters = world.clusters(faulty)
    assert world.assigner.step().moves == {"assigned": 3}
    changes.count += 3
    retried = world.assigner.step()
    assert (retried.quiet, retried.moves) == (False, {"assigned": 1})
    assert world.owners()[("", "w00")] == "a"


def owners_count(owners: dict[tuple[str, str], str], member: str) -> float:
    return float(sum(1 for o in owners.values() if o == member))


def test_a_joining_member_gets_orders_only_after_their_owner_hands_them_back() -> None:
    """A fourth member: only the orders it wins are asked to drain, keep their owner until acknowledged,
    then carry the new member's label; nothing else moves."""
    world = World()
    for name in ("a", "b", "c"):
        world.join(name)
    world.assigner.step()
    before = world.owners()
    world.join("d")
    asked = world.assigner.step()
    draining = {k for k, o in world.orders().items() if DRAIN_LABEL in (o["metadata"].get("labels") or {})}
    assert asked.moves == {"drain": len(draining)}
    assert world.owners() == before  # no order changes owner without its owner's acknowledgement
    world.assigner.step()
    assert world.owners() == before  # however often the leader looks
    assert world.acknowledge_drains() == len(draining)
    assert all(world.owners()[k] == "" for k in draining)
    moved = world.assigner.step()
    after = world.owners()
    assert moved.moves == {"moved": len(draining)}
    assert {k for k in after if after[k] != before[k]} == draining
    assert {after[k] for k in draining} == {"d"}
    assert ORDERS // 8 <= len(draining) <= ORDERS // 2


def test_a_move_whose_label_write_conflicts_still_counts_as_a_move() -> None:
    """The leader's label for the new member meets a Conflict (the order changed since its view): the next round
    writes it, and it is counted and logged as a move, not as a first assignment."""
    world = World()
    for name in ("a", "b", "c"):
        world.join(name)
    world.assigner.step()
    world.join("d")
    world.assigner.step()
    world.acknowledge_drains()
    handed_back = sorted(name for (_, name), member in world.owners().items() if not member)
    faulty = FaultyCluster(world.cluster, cluster_name="")
    faulty.inject(verb="patch", kind="Widget", name=handed_back[0], error="Conflict")
    world.assigner._clusters = world.clusters(faulty)
    assert world.assigner.step().moves == {"moved": len(handed_back) - 1}
    assert world.assigner.step().moves == {"moved": 1}
    assert world.owners()[("", handed_back[0])] == "d"
    assert world.metrics.registry.get_sample_value("c5c3_operator_shard_moves_total", {"how": "moved"}) == len(
        handed_back)


class PatchBodies:
    """A cluster that records the bodies of the merge patches sent to it."""

    def __init__(self, inner: MemoryCluster) -> None:
        self._inner = inner
        self.bodies: list[Any] = []

    def patch(self, *args: Any, **kwargs: Any) -> Obj:
        self.bodies.append(json_copy(args[4]))
        return self._inner.patch(*args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


def test_a_first_assignment_writes_the_shard_label_alone_and_a_drain_is_lifted_by_name() -> None:
    """The leader's write to an order without a drain label names only the shard label: an API server that merges
    the labels of a patch into an order carrying none verbatim would keep a drain label's null, and the member would
    hand the order back. Lifting a drain (the ring changed back) names the drain label, to remove it."""
    world = World(orders=3)
    world.join("a")
    recorded = PatchBodies(world.cluster)
    world.assigner._clusters = world.clusters(recorded)
    assert world.assigner.step().moves == {"assigned": 3}
    assert [body["metadata"]["labels"] for body in recorded.bodies] == [{SHARD_LABEL: "a"}] * 3
    order = world.cluster.get("example.io/v1", "Widget", "ns", "w00")
    world.cluster.update({**order, "metadata": {**order["metadata"],
                                                "labels": {SHARD_LABEL: "a", DRAIN_LABEL: "true"}}})
    recorded.bodies.clear()
    world.assigner.step()
    assert [body["metadata"]["labels"] for body in recorded.bodies] == [{SHARD_LABEL: "a", DRAIN_LABEL: None}]
    assert DRAIN_LABEL not in world.orders()[(MANAGEMENT_CLUSTER, "w00")]["metadata"]["labels"]


def test_a_lapsed_member_stops_before_the_leader_reassigns_its_orders() -> None:
    """b stops renewing: it stops working at its renew deadline (10 s) and the leader reassigns only its
    orders once its Lease has not changed for the lease duration (15 s) on the leader's clock."""
    world = World()
    for name in ("a", "b", "c"):
        world.join(name)
    world.assigner.step()
    before = world.owners()
    b = world.members["b"]
    reassigned_at = None
    for _ in range(12):
        world.tick("a", "c")
        done = world.assigner.step()
        if done.moves:
            reassigned_at = world.clock.now()
            assert not b.active.is_set() and b.lapses == 1  # it had stopped already
            assert done.moves == {"reassigned": list(before.values()).count("b")}
            break
        assert world.owners() == before
    assert reassigned_at is not None and reassigned_at - START >= 15 * S
    after = world.owners()
    assert {k for k in after if after[k] != before[k]} == {k for k in before if before[k] == "b"}
    assert set(after.values()) == {"a", "c"}
    assert world.lapsed() == ["b"]


def reading_pass(kind: FakeKind, req: Request, *, clusters: ClusterSet, **_: Any) -> Result:
    """A pass that reads its order; an API error ends it as ``run_pass`` ends one (the error in the Result)."""
    try:
        clusters.resolve(req.cluster).get(kind.api_version, kind.kind, req.namespace, req.name)
    except ApiError as err:
        return Result(error=PassError(str(err)))
    return Result()


def test_a_lapsed_member_never_works_again_under_its_name_and_rejoins_under_a_new_one() -> None:
    """A renewal that succeeds after the deadline does not bring the lapsed tenure back: its elector sends no request
    any more. The member rejoins under a new name with a new Lease; the lapsed Lease is deleted once it would have
    expired for everyone (a lease duration after its last renewal began), and only then does the leader give its
    orders on, to the new member among others; a pass admitted under the lapsed name never sends a request."""
    world = World()
    faulty = FaultyCluster(world.cluster, cluster_name="")
    a = world.join("a", management=faulty)
    world.join("b")
    world.assigner.step()
    before = world.owners()
    mine = sorted(k for k, m in before.items() if m == "a")
    assert mine and a.active.is_set()
    renewed = a.elector.renewed_at
    assert renewed is not None
    admitted = a.admit(request(mine[0][1]))  # a worker admitted a pass under "a" ...
    assert admitted == "run"
    faulty.inject(verb="update", api_version=LEASE_API_VERSION, kind="Lease", times=10)  # 2 a step
    for _ in range(5):
        world.tick("a", "b")
    assert not a.active.is_set() and a.lapses == 1 and a.name == "a"
    calls = len(faulty.calls)
    world.tick("a", "b")
    assert len(faulty.calls) == calls and not a.elector.leading  # the lapsed tenure's elector sends nothing

    assert a.rejoin() == "a-2"
    assert a.name == "a-2" and a.selector == f"{SHARD_LABEL}=a-2"
    a.elector.step()
    assert a.active.is_set() and a.holds()
    calls = len(faulty.calls)
    result = a.passes(reading_pass)(world.kind, request(mine[0][1]), clusters=world.clusters(faulty),
                                    clock=world.clock, log=None)  # ... it runs only now, fenced by the lapsed tenure
    assert result.error is not None and "tenure has lapsed" in str(result.error)
    assert len(faulty.calls) == calls  # not even its read was sent
    assert a.passes(reading_pass)(world.kind, request(mine[0][1]), clusters=world.clusters(faulty),
                                  clock=world.clock, log=None).error is None  # a pass of the new tenure reads
    leases = {lease["metadata"]["name"] for lease in world.cluster.list(LEASE_API_VERSION, "Lease", NS).items}
    assert leases == {"a", "a-2", "b"}

    # A leader in a new term (it observes every Lease afresh) would judge "a" live for a lease duration from now;
    # the deletion, due a lease duration after a's last renewal began, lets it give a's orders on at once.
    leader = Assigner(world.clusters(), world.catalog, NS, clock=world.clock, lease_duration=15)
    assert "a" in leader.step().members
    while world.clock.now() + 2 * S < renewed + 15 * S:
        world.tick("a", "b")  # "a" renews the Lease of its current name, a-2
        assert a.forget_lapsed() == []
        assert "a" in leader.step().members
        world.acknowledge_drains()
        assert all(world.owners()[k] == "a" for k in mine)
    world.tick("a", "b")
    assert a.forget_lapsed() == ["a"]
    done = leader.step()
    assert done.members == ["a-2", "b"] and done.moves["reassigned"] == len(mine)
    after = world.owners()
    assert set(after.values()) == {"a-2", "b"}
    assert world.lapsed() == ["a"]


def test_a_rejoined_member_starts_no_pass_while_a_pass_of_its_lapsed_name_runs() -> None:
    """A pass of "a" is still running (blocked in a call) when "a" lapses and rejoins as a-2 and a-2 holds its Lease:
    a-2 starts passes (and its clients name it) only once that pass has ended; the pass sends nothing more."""
    world = World(orders=6)
    served: list[str] = []
    faulty = FaultyCluster(world.cluster, cluster_name="")
    settings = LeaseSettings(NS, "a", "a", lease_duration=15, renew_deadline=10, retry_period=2,
                             labels=((MEMBER_LABEL, "true"),))
    a = ShardMember(world.clusters(faulty), world.catalog, settings, clock=world.clock, on_serving=served.append)
    world.members["a"] = a
    a.elector.step()
    world.assigner.step()
    assert a.active.is_set() and served == ["a"]
    seen: dict[str, object] = {}

    def blocked(kind: FakeKind, req: Request, *, clusters: ClusterSet, **_: Any) -> Result:
        faulty.inject(verb="update", api_version=LEASE_API_VERSION, kind="Lease", times=10)  # 2 a step
        for _ in range(5):  # a's renewals fail past its renew deadline while this pass is blocked
            world.tick("a")
        seen["rejoined as"] = a.rejoin()
        a.elector.step()  # a-2 holds its Lease ...
        seen["active while the pass runs"] = a.active.is_set()
        seen["served while the pass runs"] = list(served)
        return reading_pass(kind, req, clusters=clusters)

    name = "w00"
    assert world.owners()[("", name)] == "a" and a.admit(request(name)) == "run"
    result = a.passes(blocked)(world.kind, request(name), clusters=world.clusters(faulty), clock=world.clock,
                               log=None)
    assert seen == {"rejoined as": "a-2", "active while the pass runs": False, "served while the pass runs": ["a"]}
    assert result.error is not None and "tenure has lapsed" in str(result.error)  # its read was refused
    assert a.active.is_set() and served == ["a", "a-2"]  # ... and serves once the pass of "a" ended


def test_a_member_that_leaves_hands_its_orders_back_and_they_move_at_once() -> None:
    """A graceful stop removes its labels and its Lease; the next round reassigns them without waiting."""
    world = World()
    for name in ("a", "b", "c"):
        world.join(name)
    world.assigner.step()
    before = world.owners()
    handed = world.members["c"].leave()
    assert handed == list(before.values()).count("c")
    assert world.lapsed() == []
    done = world.assigner.step()
    assert done.members == ["a", "b"]
    after = world.owners()
    assert set(after.values()) == {"a", "b"}
    assert all(after[k] == before[k] for k in before if before[k] != "c")


def test_a_member_out_of_hand_back_time_still_gives_up_its_lease_and_its_orders_move_at_once() -> None:
    """A member holding more orders than it can hand back within its stop's budget (one update each; thousands
    outlast a pod's termination grace period) stops handing back when the time is out, releases its Lease all the
    same, and the leader's next round gives every order it still labels to a live member."""
    world = World()
    for name in ("a", "b", "c"):
        world.join(name)
    world.assigner.step()
    before = world.owners()
    assert list(before.values()).count("c") > 0
    assert world.members["c"].leave(budget=0.0) == 0
    assert world.owners() == before  # nothing handed back ...
    done = world.assigner.step()  # ... and yet nothing waits for the Lease to expire
    assert done.members == ["a", "b"]
    after = world.owners()
    assert set(after.values()) == {"a", "b"}
    assert all(after[k] == before[k] for k in before if before[k] != "c")


def test_admission_runs_only_own_undrained_orders_and_never_a_handed_back_state() -> None:
    """admit: another member's order is skipped; a drained order is acknowledged, and the stale cached copy
    of it from before the hand-back is refused; it runs again once really given back."""
    world = World(orders=1)
    a = world.join("a")
    world.assigner.step()
    req = request("w00")
    assert a.admit(req) == "run"
    assert a.admit(request("nope")) == "skip"
    stale = world.cluster.get("example.io/v1", "Widget", "ns", "w00")
    order = dict(stale, metadata={**stale["metadata"], "labels": {SHARD_LABEL: "a", DRAIN_LABEL: "true"}})
    world.cluster.update(order)
    assert a.admit(req) == "skip"  # acknowledged: both labels gone
    assert world.owners()[("", "w00")] == ""
    cached = StaleCluster(world.cluster, stale)
    a._clusters = world.clusters(cached)
    assert a.admit(req) == "skip"  # a cache still showing the label from before the hand-back
    world.assigner.step()  # back to a (the only member), a newer version
    a._clusters = world.clusters()
    assert a.admit(req) == "run"
    other = world.clusters()
    b = ShardMember(other, world.catalog, LeaseSettings(NS, "b", "b"), clock=world.clock)
    assert b.admit(req) == "skip"


class StaleCluster:
    """A cluster whose get answers one old copy of an order (a cache that has not caught up)."""

    def __init__(self, inner: MemoryCluster, old: Obj) -> None:
        self._inner, self._old = inner, old

    def get(self, *args: Any, **kwargs: Any) -> Obj:
        return self._old

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


def member_a(cluster: Any, clock: SimulatedClock) -> Manager[Any]:
    """A started manager of Widget orders as member "a" runs it: only the orders labelled for it are its own."""
    kind = widget_kind()
    manager: Manager[Any] = Manager({kind.key: kind}, ClusterSet(cluster), clock=clock,
                                    metrics=Metrics(CollectorRegistry()), run_pass=FakePass(),
                                    order_selector=f"{SHARD_LABEL}=a")
    manager.start()
    return manager


def test_a_members_watches_hold_only_its_orders() -> None:
    """A manager given a member's selector lists and watches only the orders labelled for it in full; beside it,
    the leader's view holds every order as its name, version and labels only, and wakes nothing."""
    clock = SimulatedClock(START)
    cluster = memory("", clock)
    cluster.create(obj("Widget", "mine", labels={SHARD_LABEL: "a"}))
    cluster.create(obj("Widget", "theirs", labels={SHARD_LABEL: "b"}))
    cluster.create(obj("Widget", "unassigned"))
    manager = member_a(cluster, clock)
    assert [r.name for r in manager.queue.waiting()] == ["mine"]
    manager.sources.show_keys(True)  # it leads
    manager.sources.pump()
    [informer] = [i for i in manager.sources.informers() if not i.keys_only]
    [view] = [i for i in manager.sources.informers() if i.keys_only]
    assert sorted(name for _, name in informer.cached()) == ["mine"]
    assert sorted(name for _, name in view.cached()) == ["mine", "theirs", "unassigned"]
    assert all(set(held) == {"metadata"} for held in view.cached().values())
    theirs = json_copy(cluster.get("example.io/v1", "Widget", "ns", "theirs"))
    theirs["metadata"]["labels"][SHARD_LABEL] = "a"
    cluster.update(theirs)
    manager.settle()
    assert sorted(name for _, name in informer.cached()) == ["mine", "theirs"]
    placed = manager.sources.keys_of("", "example.io/v1", "Widget")
    assert placed is not None
    assert {o["metadata"]["name"]: o["metadata"].get("labels", {}).get(SHARD_LABEL) for o in placed} == {
        "mine": "a", "theirs": "a", "unassigned": None}


def test_the_keys_views_count_what_the_leader_places_by_and_not_status_writes() -> None:
    """The count a quiet round compares grows when an order is added, relabelled or removed, or a view is closed;
    a status or spec write, which only moves the resourceVersion, leaves it as it was."""
    clock = SimulatedClock(START)
    cluster = memory("", clock)
    cluster.create(obj("Widget", "mine", labels={SHARD_LABEL: "a"}))
    manager = member_a(cluster, clock)
    sources = manager.sources
    sources.show_keys(True)
    sources.pump()
    listed = sources.keys_changes
    assert listed >= 1
    mine = json_copy(cluster.get("example.io/v1", "Widget", "ns", "mine"))
    cluster.update_status({**mine, "status": {"phase": "Ready"}})
    cluster.update({**cluster.get("example.io/v1", "Widget", "ns", "mine"), "spec": {"size": 2}})
    manager.settle()
    assert sources.keys_changes == listed
    cluster.create(obj("Widget", "new"))
    manager.settle()
    assert sources.keys_changes == listed + 1
    new = json_copy(cluster.get("example.io/v1", "Widget", "ns", "new"))
    new["metadata"]["labels"] = {SHARD_LABEL: "b"}
    cluster.update(new)
    manager.settle()
    assert sources.keys_changes == listed + 2
    cluster.delete("example.io/v1", "Widget", "ns", "new")
    manager.settle()
    assert sources.keys_changes == listed + 3
    edge = memory("edge", clock)
    edge.create(obj("Widget", "far"))
    manager.engage("edge", edge)  # a cluster engaged while leading: its view lists its order
    sources.pump()
    assert sources.keys_changes == listed + 4
    manager.disengage("edge")  # its orders leave what the leader places
    assert sources.keys_changes == listed + 5
    sources.show_keys(False)
    assert sources.keys_changes == listed + 6


def test_only_the_leader_keeps_the_view_of_every_order() -> None:
    """A follower watches only its own orders: it holds and decodes nothing of the others'. Leading opens the
    keys-only view, which answers only once it has listed every order; leading no more closes it and drops it."""
    clock = SimulatedClock(START)
    cluster = memory("", clock)
    cluster.create(obj("Widget", "mine", labels={SHARD_LABEL: "a"}))
    cluster.create(obj("Widget", "theirs", labels={SHARD_LABEL: "b"}))
    manager = member_a(cluster, clock)
    assert [i.label for i in manager.sources.informers()] == [f"{SHARD_LABEL}=a"]
    assert manager.sources.keys_of("", "example.io/v1", "Widget") is None
    assert manager.ready()

    manager.sources.show_keys(True)
    [view] = [i for i in manager.sources.informers() if i.keys_only]
    cluster.create(obj("Widget", "new"))
    assert manager.sources.keys_of("", "example.io/v1", "Widget") is None  # not listed yet: nothing to place
    assert manager.ready()  # the leader's view holds no probe back
    manager.sources.pump()
    placed = manager.sources.keys_of("", "example.io/v1", "Widget")
    assert sorted(o["metadata"]["name"] for o in placed or []) == ["mine", "new", "theirs"]

    manager.sources.show_keys(False)
    assert [i.label for i in manager.sources.informers()] == [f"{SHARD_LABEL}=a"]
    assert view.cached() == {} and view.stop.is_set()
    assert manager.sources.keys_of("", "example.io/v1", "Widget") is None
    manager.engage("edge", memory("edge", clock))  # a cluster engaged while following: no view there either
    assert not [i for i in manager.sources.informers() if i.keys_only]
    manager.sources.show_keys(True)
    assert {i.cluster_name for i in manager.sources.informers() if i.keys_only} == {"", "edge"}


@pytest.mark.parametrize("members", [1, 2, 4])
def test_every_order_has_exactly_one_member(members: int) -> None:
    world = World(orders=20)
    for n in range(members):
        world.join(f"m{n}")
    world.assigner.step()
    assert len(set(world.owners().values())) == members


def test_the_leader_places_orders_from_their_keys_alone_and_never_from_a_stale_one() -> None:
    """Given only each order's name, version and labels (the keys-only view), the leader labels them with a merge
    patch of the two labels: the rest of the order is kept, and a key older than the order writes nothing."""
    world = World(orders=4)
    world.join("a")
    for order in world.cluster.list("example.io/v1", "Widget").items:
        world.cluster.update({**order, "spec": {"size": order["metadata"]["name"]}})
    held = [{"metadata": {k: o["metadata"][k] for k in ("namespace", "name", "resourceVersion")}}
            for o in world.cluster.list("example.io/v1", "Widget").items]
    world.assigner.orders = lambda cluster, api_version, kind: held
    stale = world.cluster.get("example.io/v1", "Widget", "ns", "w00")
    world.cluster.update({**stale, "spec": {"changed": True}})  # w00 is newer than its key now
    done = world.assigner.step()
    assert done.moves == {"assigned": 3}
    orders = world.orders()
    assert SHARD_LABEL not in (orders[(MANAGEMENT_CLUSTER, "w00")]["metadata"].get("labels") or {})
    assert orders[(MANAGEMENT_CLUSTER, "w00")]["spec"] == {"changed": True}
    for name in ("w01", "w02", "w03"):
        assert orders[(MANAGEMENT_CLUSTER, name)]["metadata"]["labels"][SHARD_LABEL] == "a"
        assert orders[(MANAGEMENT_CLUSTER, name)]["spec"] == {"size": name}
    world.assigner.orders = lambda cluster, api_version, kind: None  # not listed yet: the kind waits
    assert world.assigner.step().moves == {}


@dataclass(frozen=True)
class ReadAcross(FakeKind):
    """Widgets whose inputs list Gadgets beyond their own children, so every member caches every Gadget."""

    listed_beyond_children: tuple[tuple[str, str], ...] = ((API, "Gadget"),)


def test_an_event_on_another_members_child_queues_nothing() -> None:
    """A kind cached whole (read across orders) sends every member the events of every order's children: those
    that map to an order this member does not hold are not queued (its admission would only skip them)."""
    clock = SimulatedClock(START)
    cluster = memory("", clock)
    cluster.create(obj("Widget", "mine", labels={SHARD_LABEL: "a"}))
    cluster.create(obj("Widget", "theirs", labels={SHARD_LABEL: "b"}))
    kind = ReadAcross(watches=(FakeWatch("Widget"), FakeWatch("Gadget", mapping="labels")))
    assert (API, "Gadget") not in shard_scoped_kinds({kind.key: kind})  # every member holds every Gadget
    fake = FakePass()
    manager: Manager[Any] = Manager({kind.key: kind}, ClusterSet(cluster), clock=clock,
                                    metrics=Metrics(CollectorRegistry()), run_pass=fake,
                                    order_selector=f"{SHARD_LABEL}=a")
    manager.start()
    manager.settle()
    assert fake.names() == ["mine"]
    cluster.create(obj("Gadget", "g-theirs", labels={OWNER_LABEL: "ns.theirs"}))
    cluster.create(obj("Gadget", "g-mine", labels={OWNER_LABEL: "ns.mine"}))
    manager.sources.pump()
    assert [r.name for r in manager.queue.waiting()] == ["mine"]
    theirs = json_copy(cluster.get("example.io/v1", "Widget", "ns", "theirs"))
    theirs["metadata"]["labels"][SHARD_LABEL] = "a"  # handed to this member: its children wake it again
    cluster.update(theirs)
    manager.settle()
    gadget = cluster.get("example.io/v1", "Gadget", "ns", "g-theirs")
    cluster.update({**gadget, "spec": {"size": 2}})
    manager.sources.pump()
    assert [r.name for r in manager.queue.waiting()] == ["theirs"]
