"""The leader's side of sharding: which members are live, and the shard label each order should carry.

Each round (every retry period, while leading) the assigner reads the membership Leases and takes every order of
every kind on every engaged cluster from ``orders`` (the keys-only informers, else a list). An order on the member
the ring picks is left alone; one with no shard label, or on a member not live or no longer serving its kind, is
labelled with the ring's member at once; one on a live member another should have gets the drain label, and a later
round labels it once handed back. A round whose basis (live members, what they serve, rule set, orders' labels) is
that of a round that wrote nothing looks at no order. The ring takes only the live members whose Lease says they
serve the order's kind (``serving.eligible``). Every write is a merge patch of the two labels conditional on the
resourceVersion read: a write from a stale read fails with a Conflict and is decided again next round. A Lease is
live while its record keeps changing, on the leader's clock; a change of the live members is seen on a live list.
"""

from __future__ import annotations

import collections
import copy
import datetime as dt
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.clock import Clock
from engine.cluster.api import ApiError, Cluster, Conflict, NotFound, Obj
from engine.cluster.registry import ClusterSet
from engine.metrics import Metrics
from engine.outcome import Request
from engine.runtime.kinds import Catalog, Log, OrderKind
from engine.runtime.leader import LEASE_API_VERSION, LEASE_KIND
from engine.runtime.sharding.labels import (
    FIELD_MANAGER,
    MEMBER_SELECTOR,
    draining,
    label_patch,
    owner_of,
    resource_version,
)
from engine.runtime.sharding.ring import Owners, order_key
from engine.runtime.sharding.serving import eligible, served_by

LOG = logging.getLogger("engine.runtime.sharding")

Written = Literal["written", "retry", "gone"]
"""What a label write came to: done; to decide again next round (a Conflict, an API error); the order is gone."""


@dataclass
class _Seen:
    spec: dict[str, Any]
    at: dt.datetime


class MemberView:
    """The live members, judged from their Leases as client-go judges a Lease it does not hold."""

    def __init__(self, lease_duration: float) -> None:
        """lease_duration: seconds, for a Lease that does not say its own."""
        self._fallback = lease_duration
        self._seen: dict[str, _Seen] = {}

    def update(self, leases: list[Obj], now: dt.datetime) -> list[str]:
        """Observe the Leases listed now; the names of the live members, sorted."""
        seen: dict[str, _Seen] = {}
        for lease in leases:
            name = str((lease.get("metadata") or {}).get("name") or "")
            spec = dict(lease.get("spec") or {})
            before = self._seen.get(name)
            seen[name] = before if before is not None and before.spec == spec else _Seen(copy.deepcopy(spec), now)
        self._seen = seen
        return sorted(name for name, s in seen.items() if self._live(name, s, now))

    def _live(self, name: str, seen: _Seen, now: dt.datetime) -> bool:
        if str(seen.spec.get("holderIdentity") or "") != name:
            return False  # released on a graceful stop
        seconds = float(seen.spec.get("leaseDurationSeconds") or self._fallback)
        return now < seen.at + dt.timedelta(seconds=seconds)


@dataclass
class Round:
    """What one round saw and did (for tests and metrics)."""

    members: list[str] = field(default_factory=list)
    owned: collections.Counter[str] = field(default_factory=collections.Counter)
    """Orders labelled per member after the round."""
    moves: collections.Counter[str] = field(default_factory=collections.Counter)
    """Label writes by what they did: assigned, moved (after a drain), reassigned (a lapsed member's), drain."""
    quiet: bool = False
    """Nothing it places by changed since a round that had nothing to write: no order was looked at."""


class Assigner:
    """Labels every order with a live member, by rendezvous hashing; run by the leader only."""

    def __init__(
        self,
        clusters: ClusterSet,
        catalog: Catalog,
        namespace: str,
        *,
        clock: Clock,
        lease_duration: float,
        metrics: Metrics | None = None,
        log: Log | None = None,
    ) -> None:
        """namespace: where the membership Leases are."""
        self._clusters = clusters
        self._catalog = catalog
        self.namespace = namespace
        self._clock = clock
        self._metrics = metrics
        self._log: Log = log if log is not None else LOG
        self.view = MemberView(lease_duration)
        self._members: list[str] = []
        self.orders: Callable[[str, str, str], list[Obj] | None] | None = None
        """(cluster name, apiVersion, kind) -> every order there, at least its metadata (None: not known yet, the
        kind is skipped this round); None: the cluster lists them."""
        self._draining: dict[tuple[str, str], str] = {}
        """Order key -> the member asked to hand it back (to tell a completed move from a first assignment)."""
        self.leases: Callable[[str], list[Obj]] | None = None
        """A label selector -> the Leases carrying it as a watch last showed them (LookupError: the watch cannot
        say); None: every round lists them."""
        self._versions: dict[str, int] = {}
        """Membership Lease name -> the resourceVersion of the newest record of it a round read."""
        self._owners: dict[tuple[str, str], Owners] = {}
        """(cluster name, order kind) -> the ring's owner of each of its orders the last round placed."""
        self.changes: Callable[[], int] | None = None
        """A count that grows whenever ``orders`` answers differently other than in resourceVersions (an order
        added, removed or relabelled: ``Sources.keys_changes``); None: every round places every order."""
        self._settled: tuple[object, ...] | None = None
        """What the last round that wrote nothing placed by (members, what they serve, the rule set, ``changes``)."""
        self._settled_owned: collections.Counter[str] = collections.Counter()
        self._catalogs = 0
        """Rule sets placed by so far (a reload makes the next round place every order)."""
        self._writes = 0
        """Label writes tried so far (a round that tried one is not settled)."""

    def run(self, stop: threading.Event, leading: threading.Event, period: float) -> None:
        """A round every ``period`` seconds while ``leading`` is set, until ``stop`` is set."""
        while not stop.wait(period):
            if not leading.is_set():
                if self._members:
                    self._members = []
                    self._versions = {}
                    self._settled = None
                    self.view = MemberView(self.view._fallback)  # a new term observes the Leases afresh
                continue
            try:
                self.step()
            except Exception:  # the assigner must outlive any one failure
                self._log.exception("a sharding round failed")

    def step(self) -> Round:
        """One round: observe the members, then place every order, unless nothing it places by changed since a
        round that had nothing to write (``changes``: each order would be placed as it stands)."""
        done = Round()
        changes = self.changes() if self.changes is not None else None  # read before any order is
        leases = self._as_watched()
        if leases is not None:
            done.members = self.view.update(leases, self._clock.now())
        if leases is None or done.members != self._members:  # a change is decided on a live list
            try:
                leases = self._clusters.management.list(LEASE_API_VERSION, LEASE_KIND, self.namespace,
                                                        labels=MEMBER_SELECTOR, live=True).items
            except ApiError as exc:
                self._log.warning("could not list the membership Leases: %s", exc)
                return done
            done.members = self.view.update(leases, self._clock.now())
        self._read(leases)
        self._note_membership(done.members)
        served = served_by(leases)
        basis = (tuple(done.members), tuple(sorted(served.items(), key=lambda item: item[0])), self._catalogs,
                 changes)
        if changes is not None and basis == self._settled:
            done.quiet = True
            done.owned = collections.Counter(self._settled_owned)
            if self._metrics is not None:
                self._metrics.set_shards(done.members, done.owned)
            return done
        writes, unplaced = self._writes, False
        owners: dict[tuple[str, str], Owners] = {}
        if done.members:
            for cluster_name, cluster in self._clusters:
                for kind in self._catalog.values():
                    serving = eligible(done.members, served, kind.key)
                    orders = self._orders_of(cluster_name, cluster, kind) if serving else None
                    if orders is None:
                        unplaced = unplaced or bool(serving)
                        continue
                    ring = owners[(cluster_name, kind.key)] = self._owners.get((cluster_name, kind.key)) or Owners()
                    ring.start(serving)
                    for order in orders:
                        self._place(done, cluster_name, cluster, kind, order, serving, ring)
        self._owners = owners  # a cluster or kind not placed this round starts afresh when it is again
        settled = self._writes == writes and not unplaced
        self._settled = basis if settled else None
        self._settled_owned = collections.Counter(done.owned)
        if self._metrics is not None:
            self._metrics.set_shards(done.members, done.owned)
        return done

    def _as_watched(self) -> list[Obj] | None:
        """The membership Leases as a watch shows them (``leases.LeaseWatch``), when they can only confirm the last
        round: it had live members and each record is a number no older than the one read last (``step`` lists live
        too when the live members they show are not the last round's). None: list them live."""
        if self.leases is None or not self._members:
            return None
        try:
            leases = self.leases(MEMBER_SELECTOR)
        except LookupError:
            return None
        for lease in leases:
            version = resource_version(lease)
            seen = self._versions.get(str((lease.get("metadata") or {}).get("name") or ""))
            if version is None or (seen is not None and version < seen):
                return None
        return leases

    def _read(self, leases: list[Obj]) -> None:
        """Remember the newest record of each membership Lease a round read."""
        versions: dict[str, int] = {}
        for lease in leases:
            name = str((lease.get("metadata") or {}).get("name") or "")
            version = resource_version(lease)
            if version is not None:
                versions[name] = max(version, self._versions.get(name, version))
        self._versions = versions

    def _orders_of(self, cluster_name: str, cluster: Cluster, kind: OrderKind) -> list[Obj] | None:
        if self.orders is not None:
            return self.orders(cluster_name, kind.api_version, kind.kind)
        try:
            return cluster.list(kind.api_version, kind.kind).items
        except ApiError:
            return None  # a kind this cluster does not serve (yet), or an unreachable cluster

    def replace_catalog(self, catalog: Catalog) -> None:
        """Place the order kinds of a reloaded rule set from the next round on."""
        self._catalog = catalog
        self._catalogs += 1

    def _place(self, done: Round, cluster_name: str, cluster: Cluster, kind: OrderKind, order: Obj,
               serving: list[str], ring: Owners) -> None:
        """serving: the live members that serve the order's kind; ring: their owner of each order."""
        meta = order.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        key = order_key(cluster_name, kind.key, namespace, name)
        want = ring.of(key)
        have = owner_of(order)
        assert want is not None
        request = Request(kind.key, cluster_name, namespace, name)
        if have == want:
            if draining(order):  # the ring changed back before the member handed it over
                self._write(cluster, kind, order, request, owner=want, drain=False)
            self._draining.pop((cluster_name, key), None)
            done.owned[have] += 1
            return
        if not have or have not in serving:
            how = "assigned" if not have else "reassigned" if have not in done.members else "unserved"
            drained_from = self._draining.get((cluster_name, key))
            if not have and drained_from is not None:
                how = "moved"
            wrote = self._write(cluster, kind, order, request, owner=want, drain=False)
            if wrote != "retry":  # a write to retry keeps it: the next round's write is still a move
                self._draining.pop((cluster_name, key), None)
            if wrote == "written":
                done.owned[want] += 1
                done.moves[how] += 1
                self._count(how)
                if how == "assigned":
                    self._log.debug("%s: assigned to member %s", request, want, extra={"request": str(request)})
                elif how == "moved":
                    self._log.info("%s: moved from member %s to member %s", request, drained_from, want,
                                   extra={"request": str(request)})
                elif how == "unserved":
                    self._log.info("%s: member %s does not serve its kind any more; reassigned to member %s",
                                   request, have, want, extra={"request": str(request)})
                else:
                    self._log.info("%s: member %s is gone; reassigned to member %s", request, have, want,
                                   extra={"request": str(request)})
            return
        done.owned[have] += 1
        if not draining(order) and self._write(cluster, kind, order, request, owner=have, drain=True) == "written":
            self._draining[(cluster_name, key)] = have
            done.moves["drain"] += 1
            self._count("drain")
            self._log.info("%s: draining from member %s for member %s", request, have, want,
                           extra={"request": str(request)})

    def _write(self, cluster: Cluster, kind: OrderKind, order: Obj, request: Request, *, owner: str,
               drain: bool) -> Written:
        """Set the order's labels, conditionally on the resourceVersion read (the order itself is not held)."""
        self._writes += 1
        try:
            cluster.patch(kind.api_version, kind.kind, request.namespace or None, request.name,
                          label_patch(order, owner=owner, drain=drain), field_manager=FIELD_MANAGER)
            return "written"
        except Conflict:
            return "retry"  # it changed meanwhile: decided again next round
        except NotFound:
            return "gone"
        except ApiError as exc:
            self._log.warning("%s: could not write its shard label: %s", request, exc, extra={"request": str(request)})
            return "retry"

    def _note_membership(self, members: list[str]) -> None:
        before, after = set(self._members), set(members)
        for name in sorted(after - before):
            self._log.info("member %s joined the shards (%d live)", name, len(after))
        for name in sorted(before - after):
            self._log.warning("member %s left the shards or its Lease expired (%d live)", name, len(after))
        self._members = list(members)

    def _count(self, how: str) -> None:
        if self._metrics is not None:
            self._metrics.shard_moves.labels(how=how).inc()
