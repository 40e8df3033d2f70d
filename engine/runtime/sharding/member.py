"""Every replica's side of sharding: a membership Lease, which requests it may run, the drain ack.

A member works while its tenure holds: its Lease (named after it, labelled as a member) was renewed
within the renew deadline, exactly as a leader leads (``engine.runtime.leader``). A member that
loses its tenure never works again under that name: it stops starting passes at once and asks the
process to stop, so a restart comes back with fresh caches and is seen as a new member. That is
what lets the leader hand a lapsed member's orders to others without its acknowledgement.

Before each pass the worker asks ``admit``: the order, as this replica's cache shows it, must carry
this member's shard label and no drain label, and be newer than any state this member handed back.
An order carrying the drain label is acknowledged instead: its labels are removed in a conditional
update, from the worker slot, so no pass of it runs here at that moment and none starts afterwards.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from engine.clock import Clock
from engine.cluster.api import ApiError, Cluster, NotFound, Obj
from engine.cluster.registry import ClusterNotFound, ClusterSet
from engine.cluster.selectors import carries_labels, fitting_selector
from engine.metrics import Metrics
from engine.outcome import Request, Result
from engine.reconcile.stamp import stamping
from engine.runtime.controller import Admission
from engine.runtime.kinds import Catalog, Log, OrderKind, RunPass, shard_scoped_kinds
from engine.runtime.leader import LEASE_API_VERSION, LEASE_KIND, LeaderElector, LeaseSettings
from engine.runtime.sharding.fence import Check, Fenced, FencedClusters
from engine.runtime.sharding.labels import (
    FIELD_MANAGER,
    SHARD_LABEL,
    draining,
    labels_of,
    owner_of,
    relabelled,
    resource_version,
)

K = TypeVar("K", bound=OrderKind)

LOG = logging.getLogger("engine.runtime.sharding")


class ShardMember:
    """One replica's membership: its Lease, the orders it may run, the drain acknowledgement."""

    def __init__(
        self,
        clusters: ClusterSet,
        catalog: Catalog,
        settings: LeaseSettings,
        *,
        clock: Clock,
        metrics: Metrics | None = None,
        log: Log | None = None,
        on_lost: Callable[[], None] = lambda: None,
    ) -> None:
        """settings: the member's own Lease (its name is the member's name and identity).
        on_lost: called once when the tenure lapses (the operator stops the process)."""
        self.name = settings.name
        self.selector = f"{SHARD_LABEL}={self.name}"
        """The label selector of this member's orders (its watches of orders use it)."""
        self.settings = settings
        self.active = threading.Event()
        """Set while the tenure holds: workers start passes only then."""
        self._clusters = clusters
        self._catalog = catalog
        self._metrics = metrics
        self._log: Log = log if log is not None else LOG
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._lost = False
        self._leaving = False
        self._released: dict[Request, int | None] = {}
        """Orders this member handed back -> the resourceVersion of the hand-back (None: not a number)."""
        self._children = shard_scoped_kinds(catalog)
        """The kinds of the objects it stamps and caches by its label -> the order kinds they belong to."""
        self.namespaces_of: Callable[[str], Sequence[str] | None] = lambda cluster: None
        """The namespaces a cluster is watched in (a registration's; None: all): where children are listed."""
        self._stamped_kinds = frozenset(self._children)
        """The kinds whose children of an order carry this member's label before its passes (``_adopt``)."""
        self._adopted: set[Request] = set()
        """Orders whose children carry this member's label (stamped before its first pass of them)."""
        self.elector = LeaderElector(clusters.management, settings, clock=clock,
                                     on_started_leading=self._joined, on_stopped_leading=self._stopped, log=self._log,
                                     role=f"shard member {self.name}")

    @property
    def lost(self) -> bool:
        """Whether the tenure lapsed (the member never works again under this name)."""
        with self._lock:
            return self._lost

    def run(self, stop: threading.Event) -> None:
        """Hold the membership Lease until ``stop`` is set (renewing; the deadline watched)."""
        self.elector.run(stop)

    # -- before each pass ----------------------------------------------------------

    def admit(self, request: Request) -> Admission:
        """``run`` when this member may run the order's pass now; ``skip`` when not (or after a drain ack);
        ``retry`` when the order could not be read or acknowledged (try again with backoff)."""
        kind = self._catalog.get(request.kind)
        if kind is None:
            return "run"  # the pass says what is wrong
        try:
            cluster = self._clusters.resolve(request.cluster)
            # Our orders are in the cache the member's watch keeps: one missing there is not ours (no request).
            order = cluster.get(kind.api_version, kind.kind, request.namespace or None, request.name,
                                carries=(SHARD_LABEL,))
        except (NotFound, ClusterNotFound):
            with self._lock:
                self._adopted.discard(request)
            return "skip"
        except ApiError as exc:
            self._log.warning("%s: could not read the order to check its shard: %s", request, exc,
                              extra={"request": str(request)})
            return "retry"
        if owner_of(order) != self.name:
            with self._lock:
                self._released.pop(request, None)  # the cache is past the hand-back: a later label is new
                self._adopted.discard(request)
            return "skip"
        if self._handed_back(request, order):
            return "skip"
        if draining(order):
            return self._acknowledge(request, order)
        with self._lock:
            adopted = request in self._adopted
        return "run" if adopted else self._adopt(request, kind)

    def _adopt(self, request: Request, kind: OrderKind) -> Admission:
        """Before this member's first pass of an order, label its children for this member: those of the kinds it
        caches by its label that another member stamped (a move) or none did (written before ``--sharded``). So its
        caches hold every child of the order before a pass reads them: none is created twice, none left behind.

        Listed from the API server by the order's name and namespace labels (the cluster label, when a child has
        one, must be the order's; one without it must be on the order's cluster), on the management cluster and the
        order's own, and on every other cluster only when the order kind's rules write to a cluster they name
        (``writes_named_clusters``): elsewhere no child of it can be. On a target cluster only the kinds watched
        there are listed: a kind watched on the management cluster alone has no cache there to hold children in
        (and the target cluster's RBAC, ``engine rbac --target``, grants no list of it). A cluster that cannot be
        read holds the order back when it is the management or the order's cluster (``retry``)."""
        labels = getattr(kind, "ownership_labels", None)
        kinds = sorted(child for child, owners in self._children.items() if kind.key in owners)
        if labels is None or not kinds:
            with self._lock:
                self._adopted.add(request)
            return "run"
        name_label, namespace_label, cluster_label = labels
        owner = {name_label: request.name, namespace_label: request.namespace}
        selector = fitting_selector(owner)  # a name no label holds is only required to be there; _take compares
        taken = 0
        anywhere = getattr(kind, "writes_named_clusters", True)
        on_targets = self._watched_on_targets()
        for cluster_name, cluster in self._clusters:
            if not anywhere and cluster_name not in ("", request.cluster):
                continue
            try:
                for api_version, child_kind in kinds:
                    if cluster_name != "" and (api_version, child_kind) not in on_targets:
                        continue
                    if not cluster.serves(api_version, child_kind):
                        continue
                    for namespace in self.namespaces_of(cluster_name) or (None,):
                        for child in cluster.list(api_version, child_kind, namespace, labels=selector,
                                                  live=True).items:
                            taken += self._take(cluster_name, cluster, request, child, owner, cluster_label)
            except ApiError as exc:
                if cluster_name in ("", request.cluster):
                    self._log.info("%s: could not label its children for this member yet: %s", request, exc,
                                   extra={"request": str(request)})
                    return "retry"
                self._log.warning("%s: could not label its children on cluster %r for this member: %s", request,
                                  cluster_name, exc, extra={"request": str(request)})
        with self._lock:
            self._adopted.add(request)
        if taken:
            self._log.info("%s: labelled %d child object(s) for member %s", request, taken, self.name,
                           extra={"request": str(request)})
        return "run"

    def _watched_on_targets(self) -> set[tuple[str, str]]:
        """(apiVersion, kind) of what some order kind watches on target clusters too (``clusters: all``, the order
        kinds, what they control there): the kinds a target cluster's watches and caches hold."""
        return {(watch.api_version, watch.kind) for order_kind in self._catalog.values()
                for watch in order_kind.watches if watch.clusters != "management"}

    def _take(self, cluster_name: str, cluster: Cluster, request: Request, child: Obj, owner: Mapping[str, str],
              cluster_label: str) -> int:
        """Label one listed object for this member when it is the order's (it carries the ``owner`` labels, and
        the order's cluster label or none) and not labelled so (a conditional merge patch); 1 when written."""
        if not carries_labels(child, owner):
            return 0
        found = labels_of(child)
        where = found.get(cluster_label)
        if (where is None and cluster_name != request.cluster) or (where is not None and where != request.cluster):
            return 0  # a same-named order's of another cluster
        if found.get(SHARD_LABEL) == self.name:
            return 0
        if not self.holds():
            raise Fenced(f"member {self.name}'s shard tenure has lapsed: no write is sent any more")
        meta = child.get("metadata") or {}
        cluster.patch(str(child.get("apiVersion")), str(child.get("kind")), meta.get("namespace") or None,
                      str(meta.get("name")), {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                                                           "labels": {SHARD_LABEL: self.name}}},
                      field_manager=FIELD_MANAGER)
        return 1

    def _handed_back(self, request: Request, order: Obj) -> bool:
        """Whether the cache still shows a state at or before this member's hand-back of the order."""
        with self._lock:
            if request not in self._released:
                return False
            released = self._released[request]
            version = resource_version(order)
            if released is not None and version is not None and version > released:
                del self._released[request]
                return False
            return True

    def _acknowledge(self, request: Request, order: Obj) -> Admission:
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
            self._released[request] = resource_version(written)
            self._adopted.discard(request)
        self._log.info("%s: drained, handed back to the leader for another member", request,
                       extra={"request": str(request)})
        if self._metrics is not None:
            self._metrics.shard_drains.inc()
        return "skip"

    # -- the write fence ------------------------------------------------------------

    def holds(self) -> bool:
        """Whether the tenure holds now: Lease renewed within the renew deadline (this member's clock, no
        request), never lapsed, not leaving. The watchdog clears ``active`` up to 50 ms later; this is exact."""
        with self._lock:
            if self._lost or self._leaving:
                return False
        return self.elector.tenure_left() > 0

    def passes(self, run_pass: RunPass[K]) -> RunPass[K]:
        """``run_pass`` as this member runs it: every write fenced, each start and end recorded."""
        return self.recorded(self.fenced(run_pass))

    def fenced(self, run_pass: RunPass[K]) -> RunPass[K]:
        """``run_pass`` whose every write first checks ``holds``: once the tenure lapsed nothing more is
        written (``engine.runtime.sharding.fence``; decision 0033)."""

        def run(kind: K, request: Request, *, clusters: ClusterSet, clock: Clock, log: Log) -> Result:
            return run_pass(kind, request, clusters=FencedClusters(clusters, self._fence(request)), clock=clock,
                            log=log)

        return run

    def _fence(self, request: Request) -> Check:
        refused: list[bool] = []

        def check() -> None:
            if self.holds():
                return
            if self._metrics is not None:
                self._metrics.shard_fenced_writes.inc()
            if not refused:  # one line per pass; a failed step's successors try theirs
                refused.append(True)
                self._log.warning("%s: write refused: member %s's shard tenure has lapsed (the pass ends here)",
                                  request, self.name, extra={"request": str(request)})
            raise Fenced(f"member {self.name}'s shard tenure has lapsed: no write is sent any more")

        return check

    # -- pass records ---------------------------------------------------------------

    def recorded(self, run_pass: RunPass[K]) -> RunPass[K]:
        """``run_pass`` with a debug line when each pass starts and ends (wall-clock seconds, microseconds):
        the records that show no order is in two passes at once across replicas."""
        records = self._log

        def run(kind: K, request: Request, *, clusters: ClusterSet, clock: Clock, log: Log) -> Result:
            extra = {"request": str(request)}
            records.debug("pass started at %.6f by %s", time.time(), self.name, extra=extra)
            try:
                with stamping({SHARD_LABEL: self.name}, self._stamped_kinds):  # what it writes carries our label
                    return run_pass(kind, request, clusters=clusters, clock=clock, log=log)
            finally:
                records.debug("pass ended at %.6f by %s", time.time(), self.name, extra=extra)

        return run

    # -- leaving --------------------------------------------------------------------

    def leave(self) -> int:
        """A graceful stop, once the workers have stopped: hand every order back, give up the Lease.

        Returns how many orders were handed back. A member that lost its tenure does nothing here."""
        with self._lock:
            if self._lost:
                return 0
            self._leaving = True
        self.active.clear()
        handed = 0
        for _, cluster in self._clusters:
            for kind in self._catalog.values():
                try:
                    orders = cluster.list(kind.api_version, kind.kind, labels=self.selector, live=True).items
                except ApiError:
                    continue  # a kind this cluster does not serve, or an unreachable cluster
                for order in orders:
                    try:
                        cluster.update(relabelled(order, owner=None, drain=False), field_manager=FIELD_MANAGER)
                        handed += 1
                    except ApiError as exc:
                        self._log.warning("could not hand back %s %s: %s", kind.kind,
                                          order.get("metadata", {}).get("name"), exc)
        self.elector.release()
        try:
            self._clusters.management.delete(LEASE_API_VERSION, LEASE_KIND, self.settings.namespace, self.name)
        except ApiError as exc:
            self._log.info("could not delete the membership Lease (it expires by itself): %s", exc)
        self._log.info("left the shards as member %s: handed back %d order(s)", self.name, handed)
        return handed

    # -- the Lease's callbacks (on the elector's threads) ---------------------------

    def _joined(self) -> None:
        with self._lock:
            if self._lost or self._leaving:
                return
        self.active.set()
        self._log.info("joined the shards as member %s (Lease %s/%s)", self.name, self.settings.namespace, self.name)

    def _stopped(self) -> None:
        self.active.clear()
        with self._lock:
            if self._leaving or self._lost:
                return
            self._lost = True
        self._log.error("member %s lost its membership Lease: no pass starts any more; the leader gives its orders "
                        "to other members once the Lease expires; stopping so a restart joins afresh", self.name)
        self._on_lost()
