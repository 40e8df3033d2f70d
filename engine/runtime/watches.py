"""Event sources: list-then-watch each watched kind on each cluster, and map events to requests.

Events become requests through the compiled watch's own mapper, never by event type; the queue de-duplicates them;
an update is mapped through the old object and the new one (a reference dropped wakes the order it named). The order
kinds' informers also keep the fan-out index (index key -> orders) that index-mapped watches read. A poison object
(one an expression cannot be evaluated on) is logged, counted and skipped, never stalling a watch.

The informers themselves are ``engine.runtime.informers``; the order index and the mapping of an event to
requests, ``engine.runtime.event_orders``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

from engine.cluster.api import MANAGEMENT_CLUSTER, Cluster, Obj
from engine.cluster.retry import CLUSTER_WARNINGS, WarningLimiter
from engine.expr.errors import ExprError
from engine.metrics import Metrics
from engine.outcome import Request
from engine.runtime.echoes import Echoes
from engine.runtime.event_orders import OrderIndex, mapped
from engine.runtime.informers import KEYS_ONLY, RECHECK_INTERVAL, WATCH_TIMEOUT, Informer, InformerKey, _key
from engine.runtime.kinds import (
    Catalog,
    LabelScopes,
    Log,
    OrderKind,
    Watch,
    declared_scopes,
    label_scopes,
    shard_scopes,
)
from engine.runtime.queue import Wake, WorkQueue

__all__ = ["KEYS_ONLY", "RECHECK_INTERVAL", "WATCH_TIMEOUT", "Feeds", "Informer", "Sources", "mapped"]


Feeds = tuple[list[Watch], list[OrderKind]]
"""What one informer feeds: the watches mapping its events, the order kinds whose index it keeps."""


class Sources:
    """Every informer of every engaged cluster, the order index, and the queue they feed.

    An object an expression cannot be evaluated on (a poison object: stored without admission, its
    fields of the wrong type) never stalls a watch: the failing index or mapping is logged at error
    (object, cluster, the expression and where it is written), counted, and skipped; the cache keeps
    the object, the resourceVersion advances, and every other watch still maps the event (an order's
    own watch queues it by its key, so its pass can say what is wrong).

    A shard member (``order_selector`` set) queues an order only while its selected order informers hold it: the
    events of a kind cached whole on every member (read across orders) that map to another member's order are
    dropped here instead of being queued, taken by a worker and skipped by the admission (decision 0039).

    A label-scoped kind (``children.cacheOnlyLabelled`` in the rules) is watched through one
    label-selected informer per label key, so objects carrying none of the keys are never held here.

    With ``defer_unused`` (``engine run``, decision 0045), an informer that only order kinds without an order need
    (their children, the kinds their watches name, the label scopes they declared) is not opened until one of those
    kinds has an order: an order kind's own informer always runs, and the event that shows a kind's first order opens
    the kind's other informers on every engaged cluster before it queues the order (their reads wait for their first
    list, as at start).
    """

    def __init__(self, catalog: Catalog, queue: WorkQueue, *, log: Log, recover: bool = False,
                 metrics: Metrics | None = None, warnings: WarningLimiter | None = None) -> None:
        """recover=True: a watch mapper that raises for any other reason than an expression failing on
        the object's data is logged and skipped (threaded mode); False: it propagates (a bug).
        warnings: at most one warning per cluster a minute (default: the process's limiter)."""
        self._catalog = catalog
        self._queue = queue
        self.log = log
        self._metrics = metrics
        self.warnings = warnings if warnings is not None else CLUSTER_WARNINGS
        self.recover = recover
        self.lock = threading.RLock()
        self.index = OrderIndex()
        self._informers: dict[InformerKey, Informer] = {}
        self._clusters: dict[str, tuple[Cluster, tuple[str, ...] | None]] = {}
        """Engaged clusters and their namespaces, to build informers for a reloaded rule set."""
        self._label_scopes = label_scopes(catalog)
        self.order_selector: str | None = None
        """A label selector the orders' own informers list and watch with (a shard member's); None: every order."""
        self._held_by: dict[tuple[str, str], list[Informer]] | None = None
        """A shard member's order informers by (cluster, order kind key), what ``_holds`` looks orders up in; None:
        to be built again (the informers changed)."""
        self.keys_views = False
        """Whether a shard member keeps the keys-only views of every order (``KEYS_ONLY``): only while it leads
        (``show_keys``); a follower decodes none of the other members' order events."""
        self.keys_changes = 0
        """Grows whenever what ``keys_of`` answers changes other than in resourceVersions: an order added (a view's
        list too), removed or relabelled, a view dropped, a cluster's views removed. The assigner skips a round when
        it has not grown since a round that had nothing to write (a status write leaves it as it was)."""
        self._threads_running = False
        self._watch_timeout = WATCH_TIMEOUT
        self._recheck = RECHECK_INTERVAL
        self.echoes: Echoes | None = None
        """Set (``engine run``) before clusters are added: the events that only echo a pass's own writes do
        not wake its order again (``engine.runtime.echoes``); None (deterministic runs): every event does."""
        self.defer_unused = False
        """Set (``engine run``) before clusters are added: the informers only order kinds without an order need open
        with such a kind's first order (decision 0045); False (deterministic runs): every informer opens at once."""
        self._active: set[str] = set()
        """The order kinds (keys) an order informer has held an order of, on any engaged cluster."""
        self._declared = declared_scopes(catalog)

    def informers(self, cluster: str | None = None) -> list[Informer]:
        with self.lock:
            return [i for i in self._informers.values() if cluster is None or i.cluster_name == cluster]

    def add_cluster(self, name: str, cluster: Cluster, namespaces: Sequence[str] | None = None) -> list[Informer]:
        """Build the informers of one cluster (replacing any it had); started if threads run.

        namespaces: watch only these (one informer per kind and namespace); None: every namespace."""
        self.remove_cluster(name)
        observe = getattr(cluster, "observe_writes", None)
        if self.echoes is not None and callable(observe):
            observe(self.echoes.observer(name))
        with self.lock:  # planned and registered at once: an order kind's first order elsewhere opens its watches here
            built = [Informer(self, name, cluster, api_version, kind, watches, indexes, namespace, label)
                     for (_, api_version, kind, namespace, label), (watches, indexes)
                     in self._plan(name, namespaces).items()]
            self._clusters[name] = (cluster, tuple(namespaces) if namespaces is not None else None)
            for informer in built:
                self._informers[self._informer_key(informer)] = informer
            self._held_by = None
            if self._threads_running:
                for informer in built:
                    self._start(informer)
        return built

    def replace_catalog(self, catalog: Catalog) -> None:
        """Follow a reloaded rule set: informers it needs are opened, ones it no longer needs closed, and
        the informers kept feed its watches (and its index expressions, applied again to what they hold)."""
        with self.lock:
            self._catalog = catalog
            self._label_scopes = label_scopes(catalog)
            self._declared = declared_scopes(catalog)
            plan: dict[InformerKey, Feeds] = {}
            for name, (_, namespaces) in self._clusters.items():
                plan.update(self._plan(name, namespaces))
            closed = [self._informers.pop(key) for key in [k for k in self._informers if k not in plan]]
            self._held_by = None
            for informer in closed:
                informer.forget_index()
            opened: list[Informer] = []
            for key, (watches, indexes) in plan.items():
                kept = self._informers.get(key)
                if kept is not None:
                    kept.retarget(watches, indexes)
                    continue
                name, api_version, kind, namespace, label = key
                informer = Informer(self, name, self._clusters[name][0], api_version, kind, watches, indexes,
                                    namespace, label)
                self._informers[key] = informer
                opened.append(informer)
            if self._threads_running:
                for informer in opened:
                    self._start(informer)
        for informer in closed:
            informer.halt()

    def reselect(self, selector: str | None) -> None:
        """Select the orders (and the children a shard member caches by its label) by another selector: a shard
        member rejoined under a new name. The informers of the old selector close and what they held goes (their
        index entries too); those of the new one open and list; every other informer is kept."""
        with self.lock:
            self.order_selector = selector
        self.replace_catalog(self._catalog)

    def quiet_removal(self, child: Obj) -> Callable[[Request], bool]:
        """Whether an order's rules say the removal of ``child`` changes nothing for it (``children.quietRemoval``)."""
        def quiet(request: Request) -> bool:
            order_kind = self._catalog.get(request.kind)
            return order_kind is not None and order_kind.quiet_removal(child)
        return quiet

    def requeue_orders(self) -> int:
        """Queue every order held by an order kind's informer (after a rule reload); returns how many."""
        queued = 0
        for informer in self.informers():
            for watch in [w for w in informer.watches if w.is_order]:
                for obj in informer.cached().values():
                    self.map_event(watch, informer.cluster_name, None, obj, obj, hold=False)  # new rules
                    queued += 1
        return queued

    def _plan(self, name: str, namespaces: Sequence[str] | None) -> dict[InformerKey, Feeds]:
        """The informers one cluster needs for the current catalog, with the watches and indexes each feeds."""
        kinds: dict[tuple[str, str], tuple[list[Watch], list[OrderKind]]] = {}
        for order_kind in self._catalog.values():  # order kinds first: the index is filled before fan-out watches map
            kinds.setdefault((order_kind.api_version, order_kind.kind), ([], []))[1].append(order_kind)
        for order_kind in self._catalog.values():
            for watch in order_kind.watches:
                if name != MANAGEMENT_CLUSTER and watch.clusters == "management":
                    continue
                kinds.setdefault((watch.api_version, watch.kind), ([], []))[0].append(watch)
        plan: dict[InformerKey, Feeds] = {}
        scopes = self._scopes()
        for (api_version, kind), (watches, indexes) in kinds.items():
            labels = scopes.get((api_version, kind)) or (self.order_selector if indexes else None,)
            watchers = {watch.order_kind for watch in watches}
            for namespace in namespaces or (None,):
                for label in labels:
                    if indexes or not self.defer_unused or self._needed(api_version, kind, label, watchers):
                        plan[(name, api_version, kind, namespace, label)] = (watches, indexes)
                if indexes and self.order_selector is not None and self.keys_views:  # the leader's view, keys only
                    plan[(name, api_version, kind, namespace, KEYS_ONLY)] = ([], [])
        return plan

    def _needed(self, api_version: str, kind: str, label: str | None, watchers: set[str]) -> bool:
        """Whether an order kind that has had an order needs this informer: one that declared its label scope
        (``children.cacheOnlyLabelled``; a shard member's selector may follow the key), else one watching the kind."""
        declared = self._declared.get((api_version, kind, label.partition(",")[0])) if label else None
        return not (declared or watchers).isdisjoint(self._active)

    def activate(self, order_kinds: Iterable[OrderKind]) -> None:
        """An order informer holds an order of these kinds: with ``defer_unused``, open on every engaged cluster the
        informers they need that are not open yet (before the event that showed the order is mapped; lock held)."""
        if all(order_kind.key in self._active for order_kind in order_kinds):
            return  # every later order: one set lookup
        with self.lock:
            fresh = sorted({order_kind.key for order_kind in order_kinds} - self._active)
            if not fresh:
                return
            self._active.update(fresh)
            if not self.defer_unused:
                return
            opened: list[Informer] = []
            for name, (cluster, namespaces) in self._clusters.items():
                for key, (watches, indexes) in self._plan(name, namespaces).items():
                    if key not in self._informers:
                        _, api_version, kind, namespace, label = key
                        informer = Informer(self, name, cluster, api_version, kind, watches, indexes, namespace, label)
                        informer.on_demand = True
                        self._informers[key] = informer
                        opened.append(informer)
            if not opened:
                return
            self._held_by = None
            if self._threads_running:
                for informer in opened:
                    self._start(informer)
        self.log.info("the first order of %s: opened %d watch(es) it needs", ", ".join(fresh), len(opened))

    def _scopes(self) -> LabelScopes:
        """The label scopes kinds are watched by: the rules' (decision 14) and, for a shard member, its selector on
        the kinds of the objects it stamps (``kinds.shard_scopes``, decision 0032)."""
        if self.order_selector is None:
            return self._label_scopes
        return {**self._label_scopes, **shard_scopes(self._catalog, self.order_selector)}

    def show_keys(self, shown: bool) -> None:
        """Open (a shard member became leader) or close (it stopped leading) the keys-only views of every order
        kind on every engaged cluster. Opened views list before ``keys_of`` answers from them; closed ones stop
        their watch and drop what they held, so a follower holds and decodes only its own orders."""
        with self.lock:
            if shown == self.keys_views:
                return
            self.keys_views = shown
            opened: list[Informer] = []
            closed: list[Informer] = []
            if shown:
                for name, (cluster, namespaces) in self._clusters.items():
                    for key in self._plan(name, namespaces):
                        if key[4] == KEYS_ONLY and key not in self._informers:
                            _, api_version, kind, namespace, label = key
                            informer = Informer(self, name, cluster, api_version, kind, [], [], namespace, label)
                            self._informers[key] = informer
                            opened.append(informer)
                if self._threads_running:
                    for informer in opened:
                        self._start(informer)
            else:
                closed = [self._informers.pop(k) for k in [k for k, i in self._informers.items() if i.keys_only]]
        for informer in closed:
            informer.halt()
            informer.drop()

    def keys_changed(self) -> None:
        """A keys-only view's order was added, removed or relabelled, or the view dropped (lock held)."""
        self.keys_changes += 1

    def keys_of(self, cluster: str, api_version: str, kind: str) -> list[Obj] | None:
        """Every order of a kind on a cluster as its keys-only informers hold them (a shard member's: ``keys``);
        None until each has listed (or when there is none)."""
        with self.lock:
            views = [i for i in self._informers.values() if i.keys_only and i.cluster_name == cluster
                     and i.api_version == api_version and i.kind == kind]
            if not views or not all(view.listed for view in views):
                return None
            return [obj for view in views for obj in view._cache.values()]

    @staticmethod
    def _informer_key(informer: Informer) -> InformerKey:
        return (informer.cluster_name, informer.api_version, informer.kind, informer.namespace, informer.label)

    def remove_cluster(self, name: str) -> None:
        """Stop and drop a cluster's informers and its orders' index entries."""
        with self.lock:
            gone = [k for k in self._informers if k[0] == name]
            informers = [self._informers.pop(k) for k in gone]
            if any(informer.keys_only for informer in informers):
                self.keys_changed()  # its orders leave what the leader places
            self._held_by = None
            self._clusters.pop(name, None)
            self.index.drop_cluster(name)
        for informer in informers:
            informer.halt()

    def pump(self, cluster: str | None = None) -> int:
        """Deterministic mode: drain every informer (or one cluster's) without blocking; events mapped."""
        return sum(informer.pump() for informer in self.informers(cluster))

    def start(self, *, watch_timeout: float = WATCH_TIMEOUT, recheck: float = RECHECK_INTERVAL) -> None:
        """Threaded mode: one thread per informer, now and for clusters added later."""
        with self.lock:
            self._threads_running = True
            self._watch_timeout = watch_timeout
            self._recheck = recheck
            for informer in self._informers.values():
                self._start(informer)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every informer thread; waits up to ``timeout`` seconds in all for them to end.

        A thread blocked in a watch call ends when that call returns (at the latest after the
        watch timeout); the threads are daemons, so one still blocked never holds the process.
        """
        with self.lock:
            self._threads_running = False
            informers = list(self._informers.values())
        for informer in informers:
            informer.halt()
        for informer in informers:
            if informer.thread is not None:
                informer.thread.join(timeout / max(len(informers), 1))

    def map_event(self, watch: Watch, cluster: str, old: Obj | None, new: Obj | None, obj: Obj, *,
                  echo: Request | None = None, hold: bool = True) -> None:
        """Queue the orders an event wakes, if the watch's update predicate lets it through; ``echo``: the
        order whose own write the event echoes, which it does not wake. An order whose pass runs now gets the
        event when that pass ends, and only if the pass did not see it (``Echoes.held_by_pass``); hold=False:
        it is queued regardless (the rules changed: what a pass saw says nothing)."""
        try:
            if not watch.passes(old, new):
                return
            requests = mapped(watch, cluster, old, new, obj, lambda key: self.index.lookup(watch.order_kind, key))
        except ExprError as err:
            self.event_error(watch.kind, cluster, obj, f"watch for {watch.order_kind}", watch.origin, err)
            return
        except Exception:
            if not self.recover:
                raise
            self.log.exception("a watch on %s.%s failed to map an event", watch.kind, watch.api_version)
            return
        echoes = self.echoes
        for request in requests:
            if request == echo:
                continue
            if self.order_selector is not None and not watch.is_order and not self._holds(request):
                continue  # another shard member's order
            if hold and echoes is not None and echoes.held_by_pass(request, cluster, watch.api_version, watch.kind, obj,
                                                          new is None):
                continue  # its pass runs now: it is woken again at the end unless it saw this event
            self._queue.add(request, Wake("event", watch.kind))

    def _holds(self, request: Request) -> bool:
        """Whether a shard member's order informers hold the order (as its admission would find it in the cache
        they keep): an event that maps to another member's order (a child of a kind cached whole) is not queued
        only to be skipped."""
        with self.lock:
            if self._held_by is None:
                self._held_by = {}
                for informer in self._informers.values():
                    if not informer.keys_only:
                        for order_kind in informer._indexes:
                            self._held_by.setdefault((informer.cluster_name, order_kind.key), []).append(informer)
            informers = self._held_by.get((request.cluster, request.kind))
            if informers is None:
                return True  # not an order kind known here: the pass says what is wrong
            key = (request.namespace, request.name)
            return any(key in informer._cache for informer in informers)

    def event_error(self, kind: str, cluster: str, obj: Obj, what: str, origin: object, err: ExprError) -> None:
        """An expression failed on an object's data: one error line and a count; the caller skips it."""
        namespace, name = _key(obj)
        where = f"cluster {cluster!r}" if cluster else "the management cluster"
        self.log.error(
            "skipping an event on %s %s on %s: the %s expression at %s failed: %s",
            kind, f"{namespace}/{name}" if namespace else name, where, what, origin, err,
            extra={"object": f"{namespace}/{name}" if namespace else name, "kind": kind, "cluster": cluster,
                   "expression": err.source, "rule": str(origin)},
        )
        if self._metrics is not None:
            self._metrics.record_watch_event_error(kind)

    def _start(self, informer: Informer) -> None:
        thread = threading.Thread(
            target=informer.run,
            kwargs={"watch_timeout": self._watch_timeout, "recheck": self._recheck},
            name=f"informer {informer.cluster_name or '(management)'} {informer.kind}.{informer.api_version}",
            daemon=True,
        )
        informer.thread = thread
        thread.start()
