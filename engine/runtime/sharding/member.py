"""Every replica's side of sharding: a membership Lease, which requests it may run, the drain ack.

A member works while its tenure holds: its Lease was renewed within the renew deadline, as a leader leads
(``engine.runtime.leader``). A lapsed tenure never works again: no pass starts, a running pass sends no further
request (its fence), the elector sends nothing more. The replica rejoins in the same process as a new member (a
new name and Lease, the old name's caches dropped: ``on_rejoin``) and starts passes once it holds the new Lease and
all of the lapsed name has ended (``on_serving``). A name is never used again, so the leader may hand a lapsed
member's orders on without its acknowledgement; the lapsed Lease is deleted once it expired in every eye.

Before each pass the worker asks ``admit``: the order must carry this member's shard label and no drain label, and
be newer than any state this member handed back. An order with the drain label is acknowledged instead (its labels
removed in a conditional update, from the worker slot); a pass is fenced by the tenure that admitted it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from engine.clock import Clock
from engine.cluster.api import ApiError, NotFound, Obj
from engine.cluster.registry import ClusterNotFound, ClusterSet
from engine.metrics import Metrics
from engine.outcome import Request, Result
from engine.reconcile.stamp import stamping
from engine.runtime.controller import Admission
from engine.runtime.kinds import Catalog, Log, OrderKind, RunPass
from engine.runtime.leader import LEASE_API_VERSION, LEASE_KIND, LeaderElector, LeaseSettings
from engine.runtime.sharding.fence import Check, Fenced, FencedClusters
from engine.runtime.sharding.fresh import childless
from engine.runtime.sharding.handback import hand_back
from engine.runtime.sharding.labels import (
    FIELD_MANAGER,
    SHARD_LABEL,
    draining,
    owner_of,
    relabelled,
    resource_version,
)
from engine.runtime.sharding.ring import member_name
from engine.runtime.sharding.serving import MemberRules, Serving, lease_annotations
from engine.runtime.sharding.takeover import take_over

K = TypeVar("K", bound=OrderKind)

LOG = logging.getLogger("engine.runtime.sharding")

Rejoined = Callable[[str, str], None]
"""(the lapsed member's name, the new one): called before the new Lease is sought."""


HAND_BACK_BUDGET = 5.0
"""Seconds a graceful stop hands orders back (one update each) before it releases the Lease anyway."""


@dataclass(eq=False)
class Tenure:
    """One member name's membership: its Lease's elector and what it did under that name. Once lapsed, for good."""

    name: str
    settings: LeaseSettings
    elector: LeaderElector = field(init=False)
    after: str | None = None
    """The lapsed member's name it rejoined after (None: the replica's first)."""
    joined: bool = False
    """Its Lease is held (it may start passes once nothing of a lapsed tenure runs any more)."""
    serving: bool = False
    """Its passes may start (``active`` set for it once)."""
    lapsed: bool = False
    last_renewal: dt.datetime | None = None
    """At the lapse: when its last successful renewal started (its Lease is deleted a lease duration later)."""
    adopted: set[Request] = field(default_factory=set)
    """Orders whose children carry this name (stamped before its first pass of them)."""
    released: dict[Request, int | None] = field(default_factory=dict)
    """Orders handed back under this name -> the resourceVersion of the hand-back (None: not a number)."""

    @property
    def selector(self) -> str:
        return f"{SHARD_LABEL}={self.name}"


class ShardMember:
    """One replica's membership: its Lease, the orders it may run, the drain acknowledgement, the rejoin."""

    def __init__(
        self,
        clusters: ClusterSet,
        catalog: Catalog,
        settings: LeaseSettings,
        *,
        clock: Clock,
        metrics: Metrics | None = None,
        log: Log | None = None,
        rename: Callable[[], str] | None = None,
        on_rejoin: Rejoined = lambda lapsed, name: None,
        on_serving: Callable[[str], None] = lambda name: None,
        rules_hash: Callable[[], str] = lambda: "",
    ) -> None:
        """settings: the member's first Lease (its name is the member's name and identity).
        rename: a new member name for each rejoin (default: the first name with a counter).
        on_rejoin: called on the membership's thread when a lapsed member rejoins under a new name, before
        its Lease is sought (the operator drops the old name's caches and selects the new name's orders).
        on_serving: called with the name passes are about to start under, once per name: its Lease is held and
        nothing of a lapsed name runs any more (the operator's clients name the member in their User-Agent).
        rules_hash: the short hash of the rule set served now, written on the membership Lease (decision 0068)."""
        self._settings = settings
        self.active = threading.Event()
        """Set while the tenure holds: workers start passes only then."""
        self._clusters = clusters
        self._serving = Serving(catalog)
        """The rules served now and the kinds running (published on the Lease: ``serving``, decision 0068)."""
        self._rules_hash = rules_hash
        self._clock = clock
        self._metrics = metrics
        self._log: Log = log if log is not None else LOG
        counter = itertools.count(2)
        self._rename = rename if rename is not None else lambda: member_name(settings.name, str(next(counter)))
        self._on_rejoin = on_rejoin
        self._on_serving = on_serving
        self._lock = threading.Lock()
        self._busy: dict[Tenure, int] = {}
        """Admissions and passes running now, by the tenure they run under."""
        self._leaving = False
        self._lapses = 0
        self._lapsed: list[Tenure] = []
        """Lapsed tenures whose Lease is still to be deleted."""
        self._admitting = threading.local()
        """The tenure that admitted the request a worker thread is about to run (``admit``, then the pass)."""
        self.namespaces_of: Callable[[str], Sequence[str] | None] = lambda cluster: None
        """The namespaces a cluster is watched in (a registration's; None: all): where children are listed."""
        self._tenure = self._new_tenure(settings.name)

    def _new_tenure(self, name: str) -> Tenure:
        tenure = Tenure(name, dataclasses.replace(self._settings, name=name, identity=name))
        tenure.elector = LeaderElector(self._clusters.management, tenure.settings, clock=self._clock,
                                       on_started_leading=lambda: self._joined(tenure),
                                       on_stopped_leading=lambda: self._stopped(tenure), log=self._log,
                                       role=f"shard member {name}", annotations=self.annotations)
        return tenure

    @property
    def tenure(self) -> Tenure:
        """The current tenure (a new one after each rejoin)."""
        with self._lock:
            return self._tenure

    @property
    def name(self) -> str:
        """The member's current name (its Lease's name and the value of its orders' shard label)."""
        return self.tenure.name

    @property
    def selector(self) -> str:
        """The label selector of this member's orders (its watches of orders use it)."""
        return self.tenure.selector

    @property
    def settings(self) -> LeaseSettings:
        return self.tenure.settings

    @property
    def elector(self) -> LeaderElector:
        """The current tenure's Lease elector."""
        return self.tenure.elector

    @property
    def lapses(self) -> int:
        """How many of this replica's tenures lapsed (each followed by a rejoin under a new name)."""
        with self._lock:
            return self._lapses

    def run(self, stop: threading.Event) -> None:
        """Hold the membership Lease until ``stop`` is set (renewing; the deadline watched); after a lapse, rejoin
        under a new name and hold that one's; delete the lapsed Leases when they are due."""
        forgetting = threading.Thread(target=self._forgetting, args=(stop,), name="shard lapsed Leases", daemon=True)
        forgetting.start()
        try:
            while not stop.is_set():
                self.tenure.elector.run(stop, until_lost=True)
                if not stop.is_set() and self.rejoin() is None:
                    break  # leaving
        finally:
            forgetting.join(self._settings.retry_period + 1)

    def rejoin(self) -> str | None:
        """If the current tenure lapsed: a new tenure under a new name (its Lease sought by ``run``, or a step of
        its elector), the caches of the old name dropped by ``on_rejoin``. The new name, or None (nothing lapsed,
        or leaving)."""
        with self._lock:
            lapsed = self._tenure
            if not lapsed.lapsed or self._leaving:
                return None
            name = self._rename()
            self._tenure = self._new_tenure(name)
            self._tenure.after = lapsed.name
        try:
            self._on_rejoin(lapsed.name, name)
        except Exception:  # the membership must outlive any one failure; the new name's caches fill as they can
            self._log.exception("rejoining as member %s: dropping the caches of member %s failed", name, lapsed.name)
        if self._metrics is not None:
            self._metrics.shard_rejoins.inc()
        self._log.warning("member %s rejoins the shards as member %s: its caches of %s's orders are dropped, the "
                          "leader gives those orders on once %s's Lease is deleted or expired", lapsed.name, name,
                          lapsed.name, lapsed.name)
        return name

    # -- lapsed Leases --------------------------------------------------------------

    def forget_lapsed(self) -> list[str]:
        """Delete the Lease of each lapsed tenure once it is due: a lease duration after its last successful renewal
        began, on this member's clock, when every other replica would judge it expired as well (decision 27's
        margin is kept: its last write was sent before the renew deadline). The leader then gives its orders on at
        once instead of waiting to observe the expiry. Returns the names whose Lease is gone now."""
        now = self._clock.now()
        with self._lock:
            due = [t for t in self._lapsed if t.last_renewal is None
                   or now >= t.last_renewal + dt.timedelta(seconds=t.settings.lease_seconds)]
        gone: list[str] = []
        for tenure in due:
            try:
                self._clusters.management.delete(LEASE_API_VERSION, LEASE_KIND, tenure.settings.namespace,
                                                 tenure.name)
            except NotFound:
                pass
            except ApiError as exc:
                self._log.debug("could not delete the Lease of lapsed member %s yet: %s", tenure.name, exc)
                continue
            with self._lock:
                self._lapsed.remove(tenure)
            gone.append(tenure.name)
            self._log.info("deleted the Lease of lapsed member %s", tenure.name)
        return gone

    def _forgetting(self, stop: threading.Event) -> None:
        while not stop.wait(self._settings.retry_period):
            with self._lock:
                pending = bool(self._lapsed)
            if pending:
                try:
                    self.forget_lapsed()
                except Exception:  # the thread must outlive any one failure
                    self._log.exception("deleting a lapsed membership Lease failed")

    # -- before each pass ----------------------------------------------------------

    def admit(self, request: Request) -> Admission:
        """``run`` when this member may run the order's pass now; ``skip`` when not (or after a drain ack);
        ``retry`` when the order could not be read or acknowledged (try again with backoff). The pass that follows
        on this thread is fenced by the tenure that said ``run``."""
        tenure = self.tenure
        self._admitting.tenure = self._admitting.rules = None
        if tenure.after is not None and not tenure.serving:
            return "retry"  # a worker past the gate as the last tenure lapsed: again once this one serves
        rules = self._serving.enter(request.kind)
        if rules is None:
            return "run"  # a kind the rules served now do not have: the pass says what is wrong, or does not run
        try:
            with self._working(tenure):
                verdict = self._admit(request, tenure, rules)
        finally:
            self._serving.leave(request.kind)
        if verdict == "run":
            self._admitting.tenure, self._admitting.rules = tenure, rules
        return verdict

    def _admit(self, request: Request, tenure: Tenure, rules: MemberRules) -> Admission:
        kind = rules.catalog[request.kind]
        try:
            cluster = self._clusters.resolve(request.cluster)
            # Our orders are in the cache the member's watch keeps: one missing there is not ours (no request).
            order = cluster.get(kind.api_version, kind.kind, request.namespace or None, request.name,
                                carries=(SHARD_LABEL,))
        except (NotFound, ClusterNotFound):
            with self._lock:
                tenure.adopted.discard(request)
            return "skip"
        except ApiError as exc:
            self._log.warning("%s: could not read the order to check its shard: %s", request, exc,
                              extra={"request": str(request)})
            return "retry"
        if owner_of(order) != tenure.name:
            with self._lock:
                tenure.released.pop(request, None)  # the cache is past the hand-back: a later label is new
                tenure.adopted.discard(request)
            return "skip"
        if self._handed_back(tenure, request, order):
            return "skip"
        if draining(order):
            return self._acknowledge(tenure, request, order)
        with self._lock:
            adopted = request in tenure.adopted
            if not adopted and childless(kind, order):  # nothing to take over: no pass wrote a child yet
                tenure.adopted.add(request)
                adopted = True
        return "run" if adopted else self._adopt(tenure, request, kind, rules)

    def _adopt(self, tenure: Tenure, request: Request, kind: OrderKind, rules: MemberRules) -> Admission:
        """Before this member's first pass of an order, label its children for this member (``takeover``): those
        of the kinds it caches by its label that another member stamped (a move) or none did (written before
        ``--sharded``). A cluster that cannot be read holds the order back when it is the management or the
        order's cluster (``retry``)."""
        labels = getattr(kind, "ownership_labels", None)
        kinds = sorted(child for child, owners in rules.children.items() if kind.key in owners)
        taken: int | None = 0
        if labels is not None and kinds:
            taken = take_over(self._clusters, request, kinds, labels, tenure.name,
                              anywhere=getattr(kind, "writes_named_clusters", True),
                              on_targets=rules.watched_on_targets, namespaces_of=self.namespaces_of,
                              holds=lambda: self.holds(tenure), log=self._log)
            if taken is None:
                return "retry"
        with self._lock:
            if self._serving.rules is rules:
                tenure.adopted.add(request)
        if taken:
            self._log.info("%s: labelled %d child object(s) for member %s", request, taken, tenure.name,
                           extra={"request": str(request)})
        return "run"

    def _handed_back(self, tenure: Tenure, request: Request, order: Obj) -> bool:
        """Whether the cache still shows a state at or before this member's hand-back of the order."""
        with self._lock:
            if request not in tenure.released:
                return False
            released = tenure.released[request]
            version = resource_version(order)
            if released is not None and version is not None and version > released:
                del tenure.released[request]
                return False
            return True

    def _acknowledge(self, tenure: Tenure, request: Request, order: Obj) -> Admission:
        """Hand the order back: remove the shard and drain labels, conditionally on the version read."""
        try:
            cluster = self._clusters.resolve(request.cluster)
            written = cluster.update(relabelled(order, owner=None, drain=False), field_manager=FIELD_MANAGER)
        except ClusterNotFound:
            return "skip"
        except ApiError as exc:
            self._log.info("%s: could not hand the order back yet: %s", request, exc, extra={"request": str(request)})
            return "retry"
        with self._lock:
            tenure.released[request] = resource_version(written)
            tenure.adopted.discard(request)
        self._log.info("%s: drained, handed back to the leader for another member", request,
                       extra={"request": str(request)})
        if self._metrics is not None:
            self._metrics.shard_drains.inc()
        return "skip"

    # -- the fence ------------------------------------------------------------------

    def holds(self, tenure: Tenure | None = None) -> bool:
        """Whether a tenure (default: the current one) holds now: it is the current one, its Lease was renewed
        within the renew deadline (this member's clock, no request), it never lapsed, the member is not leaving.
        The watchdog clears ``active`` up to 50 ms later; this is exact. No lock (the fence asks before every request):
        each condition, once false, stays false, so three reads that each find it true held at the first one."""
        current = self._tenure
        tenure = tenure if tenure is not None else current
        if tenure is not current or tenure.lapsed or self._leaving:
            return False
        return tenure.elector.tenure_left() > 0

    def passes(self, run_pass: RunPass[K]) -> RunPass[K]:
        """``run_pass`` as this member runs it: on the rules its admission read, only while they are still the rules
        served (a reload meanwhile skips it: the reload queues every order again); every request fenced by the tenure
        that admitted it, each start and end recorded."""

        def run(kind: K, request: Request, *, clusters: ClusterSet, clock: Clock, log: Log) -> Result:
            tenure, admitted = self._admitted()
            rules = self._serving.enter(request.kind, admitted)
            if rules is None:
                self._log.debug("%s: the rules changed since its admission; it runs again on the new ones", request,
                                extra={"request": str(request)})
                return Result()
            try:
                ruled = cast(K, rules.catalog[request.kind])
                with self._working(tenure):
                    return self.recorded(self.fenced(run_pass, tenure), tenure, rules)(
                        ruled, request, clusters=clusters, clock=clock, log=log)
            finally:
                self._serving.leave(request.kind)

        return run

    @contextlib.contextmanager
    def _working(self, tenure: Tenure) -> Iterator[None]:
        """An admission or a pass under ``tenure`` runs in the block: a new tenure starts no pass meanwhile."""
        with self._lock:
            self._busy[tenure] = self._busy.get(tenure, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._busy[tenure] -= 1
                if not self._busy[tenure]:
                    del self._busy[tenure]
                done = tenure.lapsed and tenure not in self._busy
            if done:
                self._serve()

    def _admitted(self) -> tuple[Tenure, MemberRules | None]:
        """The tenure that admitted the pass this thread starts and the rules it read (taken once); the current
        tenure and None without admission."""
        tenure: Tenure | None = getattr(self._admitting, "tenure", None)
        rules: MemberRules | None = getattr(self._admitting, "rules", None)
        self._admitting.tenure = self._admitting.rules = None
        return (tenure, rules) if tenure is not None else (self.tenure, None)

    def fenced(self, run_pass: RunPass[K], tenure: Tenure | None = None) -> RunPass[K]:
        """``run_pass`` whose every request first checks ``holds`` for the tenure (default: the current one when
        the pass starts): once it lapsed, nothing more is sent (``engine.runtime.sharding.fence``; decision 0033)."""

        def run(kind: K, request: Request, *, clusters: ClusterSet, clock: Clock, log: Log) -> Result:
            fence = self._fence(request, tenure if tenure is not None else self.tenure)
            return run_pass(kind, request, clusters=FencedClusters(clusters, fence), clock=clock, log=log)

        return run

    def _fence(self, request: Request, tenure: Tenure) -> Check:
        refused: list[bool] = []

        def check(write: bool) -> None:
            if self.holds(tenure):
                return
            if write and self._metrics is not None:
                self._metrics.shard_fenced_writes.inc()
            if not refused:  # one line per pass; a failed step's successors try theirs
                refused.append(True)
                self._log.warning("%s: request refused: member %s's shard tenure has lapsed (the pass ends here)",
                                  request, tenure.name, extra={"request": str(request)})
            raise Fenced(f"member {tenure.name}'s shard tenure has lapsed: no request is sent any more")

        return check

    # -- pass records ---------------------------------------------------------------

    def recorded(self, run_pass: RunPass[K], tenure: Tenure | None = None,
                 rules: MemberRules | None = None) -> RunPass[K]:
        """``run_pass`` with a debug line when each pass starts and ends (wall-clock seconds, microseconds), naming
        the member of the tenure (default: the current one when the pass starts): the records that show no order
        is in two passes at once across replicas. What the pass writes carries that member's label (the children
        of the kinds ``rules`` stamp; default: the rules served when the pass starts)."""
        records = self._log

        def run(kind: K, request: Request, *, clusters: ClusterSet, clock: Clock, log: Log) -> Result:
            name = (tenure if tenure is not None else self.tenure).name
            extra = {"request": str(request)}
            records.debug("pass started at %.6f by %s", time.time(), name, extra=extra)
            try:
                stamped = (rules if rules is not None else self._serving.rules).stamped
                with stamping({SHARD_LABEL: name}, stamped):  # what it writes carries our label
                    return run_pass(kind, request, clusters=clusters, clock=clock, log=log)
            finally:
                records.debug("pass ended at %.6f by %s", time.time(), name, extra=extra)

        return run

    # -- rule reload ----------------------------------------------------------------

    def replace_rules(self, catalog: Catalog) -> None:
        """Serve a reloaded rule set (decision 0068). First the orders of each kind it gains that carry this member's
        label are handed back: the leader may have given them on while this member did not serve their kind, so such
        a label is never trusted; a failed list of the management cluster raises and the set is not taken (the next
        poll tries again). Then the set is served: admissions and passes that start from now on run on it, those
        running finish on theirs (and the kinds they run stay published until they end). When its take-over of an
        order would label other children than before, every order is taken over again before its next pass."""
        before = self._serving.rules
        gained = [kind for key, kind in catalog.items() if key not in before.catalog]
        tenure = self.tenure
        if gained:
            handed = self._hand_back(tenure, gained, strict=True)
            if handed:
                self._log.info("handed back %d order(s) of kind(s) the reloaded rules add", handed)
        with self._lock:  # an admission on the rules before marks nothing adopted after this (``_adopt``)
            _, rules = self._serving.replace(catalog)
            if not rules.adopts_like(before):
                tenure.adopted.clear()

    def annotations(self) -> dict[str, str]:
        """What its membership Lease carries, written with each renewal: the rules' hash, the kinds it serves."""
        return lease_annotations(self._rules_hash(), self._serving.kinds())

    # -- leaving --------------------------------------------------------------------

    def leave(self, budget: float = HAND_BACK_BUDGET) -> int:
        """A graceful stop, once the workers have stopped: hand orders back for at most ``budget`` seconds, give
        up the Lease; delete the Leases of lapsed tenures that are due. An order not handed back in time moves at
        the leader's next round all the same (a released Lease is no live member's): the budget keeps a member
        holding thousands of orders (one update each) inside a pod's termination grace period.

        Returns how many orders were handed back. A member whose current tenure lapsed hands nothing back."""
        with self._lock:
            tenure = self._tenure
            self._leaving = True
            held = not tenure.lapsed
        self.active.clear()
        handed = 0
        if held:
            handed = self._hand_back(tenure, deadline=time.monotonic() + budget)
            tenure.elector.release()
            try:
                self._clusters.management.delete(LEASE_API_VERSION, LEASE_KIND, tenure.settings.namespace,
                                                 tenure.name)
            except ApiError as exc:
                self._log.info("could not delete the membership Lease (it expires by itself): %s", exc)
            self._log.info("left the shards as member %s: handed back %d order(s)", tenure.name, handed)
        self.forget_lapsed()
        return handed

    def _hand_back(self, tenure: Tenure, kinds: Sequence[OrderKind] | None = None, *, strict: bool = False,
                   deadline: float | None = None) -> int:
        """``handback.hand_back`` of this member's orders of ``kinds`` (default: every kind served)."""
        served = kinds if kinds is not None else list(self._serving.rules.catalog.values())
        return hand_back(self._clusters, served, tenure.name, tenure.selector, self._log, strict=strict,
                         deadline=deadline)

    # -- the Lease's callbacks (on the elector's threads) ---------------------------

    def _joined(self, tenure: Tenure) -> None:
        with self._lock:
            if tenure is not self._tenure or tenure.lapsed or self._leaving:
                return
            tenure.joined = True
        self._serve()

    def _serve(self) -> None:
        """Start passes under the current tenure once its Lease is held and nothing of a lapsed tenure runs any
        more (each such pass ends at its next request, which the fence refuses), so no request of the lapsed
        name is sent under the new one."""
        with self._lock:
            tenure = self._tenure
            if not tenure.joined or tenure.serving or tenure.lapsed or self._leaving:
                return
            waiting = sum(count for other, count in self._busy.items() if other is not tenure)
            if waiting:
                self._log.info("member %s holds its Lease; its passes start once %d admission(s) and pass(es) of a "
                               "lapsed member have ended", tenure.name, waiting)
                return
            tenure.serving = True
        try:
            self._on_serving(tenure.name)
        except Exception:  # the member must serve whatever its clients' names say
            self._log.exception("naming member %s in the clients failed", tenure.name)
        with self._lock:
            if tenure is not self._tenure or tenure.lapsed or self._leaving:
                return
            self.active.set()
        self._log.info("joined the shards as member %s (Lease %s/%s)", tenure.name, tenure.settings.namespace,
                       tenure.name)

    def _stopped(self, tenure: Tenure) -> None:
        """The tenure ended (elector lock held): no pass starts and no request of its passes is sent any more; its
        elector retires; the member rejoins under a new name (``rejoin``)."""
        with self._lock:
            current = tenure is self._tenure
            if current:
                self.active.clear()
            if self._leaving or tenure.lapsed:
                return
            tenure.lapsed = True
            tenure.last_renewal = tenure.elector.renewed_at
            self._lapses += 1
            self._lapsed.append(tenure)
        tenure.elector.retire()
        self._log.error("member %s lost its membership Lease: no pass starts any more and running passes send no "
                        "request; it rejoins the shards as a new member", tenure.name)
