"""Event sources: list-then-watch each watched kind on each cluster, and map events to requests.

One informer per (cluster, apiVersion, kind), shared by every compiled watch on
that kind, keeps the last-seen object of each key (so a watch's update predicate
sees old and new) and the resourceVersion to resume from. Events become requests
through the compiled watch's own mapper, never by event type; the queue
de-duplicates them; an update is mapped through the old object and the new one (a
reference dropped wakes the order it named). The informer of an order kind on every
cluster also maintains the fan-out index (index key -> orders, with their cluster)
that index-mapped watches read.

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

With ``defer_unused`` (``engine run``, decision 0045), an informer that only order kinds without an order need (their
children, the kinds their watches name, the label scopes they declared) is not opened until one of those kinds has an
order: an order kind's own informer always runs, and the event that shows a kind's first order opens the kind's other
informers on every engaged cluster before it queues the order (their reads wait for their first list, as at start).

A kind the cluster does not serve is skipped and checked again later (every pump
in deterministic mode, every ``recheck`` seconds in threaded mode), so a CRD that
appears is watched without a restart. A Gone (410) re-lists; the re-list is
compared with the cache, so objects that vanished meanwhile still map as deletes.
In threaded mode retries are bounded (``engine.cluster.retry``): only the first Gone
of a streak re-lists at once, further failures back off with jitter, and warnings
about one cluster are written at most once a minute.

Deterministic mode: ``Sources.pump()`` drains every informer with a non-blocking
watch (timeout 0), up to its end or its first bookmark (``Informer.pump``).
Threaded mode: ``Sources.start()`` runs one thread per informer, blocking on a
long watch and resuming from the last resourceVersion (bookmarks included). Both
share the same event handling.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from engine.cluster.api import MANAGEMENT_CLUSTER, ApiError, Cluster, Gone, NotFound, Obj, WatchEvent, WatchFeed
from engine.cluster.retry import CLUSTER_WARNINGS, Backoff, WarningLimiter
from engine.cluster.selectors import parse_labels
from engine.expr.errors import ExprError
from engine.metrics import Metrics
from engine.outcome import Request
from engine.runtime.echoes import Echoes
from engine.runtime.kinds import (
    Catalog,
    Index,
    LabelScopes,
    Log,
    OrderKind,
    Watch,
    declared_scopes,
    label_scopes,
    shard_scopes,
)
from engine.runtime.queue import Wake, WorkQueue

Key = tuple[str, str]
"""(namespace or "", name) of an object."""

InformerKey = tuple[str, str, str, str | None, str | None]
"""(cluster, apiVersion, kind, namespace or None, label key or None) of an informer."""

WATCH_TIMEOUT = 300.0
"""Threaded mode: seconds one watch call lasts before it is renewed from the last resourceVersion."""

RECHECK_INTERVAL = 30.0
"""Threaded mode: seconds between checks whether an unserved kind is served now."""

KEYS_ONLY = ""
"""The label of an order kind's keys-only informer, beside a shard member's selected one: every order of the kind,
each held as its name, resourceVersion and labels only (what the shard leader places them by); it wakes nothing.
Open only while the member leads (``Sources.keys_views``, decision 0039)."""


def keys(obj: Obj) -> Obj:
    """What a keys-only informer holds of an object: its identity, version and labels."""
    meta = obj.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("namespace", "name", "uid", "resourceVersion", "labels") if k in meta}}



def _key(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _rv(obj: Obj) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv else None


Member = tuple[str, str, str]
"""(cluster, namespace, name) of an order."""


@dataclass
class OrderIndex:
    """Per order kind: index key -> the orders carrying that key, on every engaged cluster."""

    _keys: dict[str, dict[str, set[Member]]] = field(default_factory=dict)
    _of: dict[tuple[str, Member], tuple[str, ...]] = field(default_factory=dict)

    def put(self, kind: str, order: Member, keys: Sequence[str]) -> None:
        """Record ``order``'s index keys (none: drop it)."""
        for previous in self._of.pop((kind, order), ()):
            members = self._keys[kind][previous]
            members.discard(order)
            if not members:
                del self._keys[kind][previous]
        if keys:
            self._of[(kind, order)] = tuple(keys)
            for key in keys:
                self._keys.setdefault(kind, {}).setdefault(key, set()).add(order)

    def has(self, kind: str, order: Member) -> bool:
        """Whether ``order`` has keys in the index (its expression gave some, without failing)."""
        return (kind, order) in self._of

    def drop_cluster(self, cluster: str) -> None:
        """Forget every order of a cluster (it was disengaged)."""
        for kind, order in [k for k in self._of if k[1][0] == cluster]:
            self.put(kind, order, ())

    def lookup(self, kind: str, key: str) -> list[Member]:
        """(cluster, namespace, name) of the orders of ``kind`` whose index keys hold ``key``, sorted."""
        return sorted(self._keys.get(kind, {}).get(key, ()))


class Informer:
    """List-then-watch of one kind on one cluster, feeding the watches on it."""

    def __init__(
        self,
        sources: Sources,
        cluster_name: str,
        cluster: Cluster,
        api_version: str,
        kind: str,
        watches: list[Watch],
        indexes: list[OrderKind],
        namespace: str | None = None,
        label: str | None = None,
    ) -> None:
        """namespace: list and watch that namespace only (a registration's namespaces); None: all.
        label: list and watch only objects carrying this label key; None: every object."""
        self._sources = sources
        self.cluster_name = cluster_name
        self._cluster = cluster
        self.api_version = api_version
        self.kind = kind
        self.namespace = namespace
        self.label = label
        self.watches = watches
        self._indexes = indexes
        self._cache: dict[Key, Obj] = {}
        self._rv: str | None = None
        self.listed = False
        """True once listed and while the watch can resume; False while unserved or after a Gone."""
        self.stop = threading.Event()
        self._stream: Iterator[WatchEvent] | None = None
        self.keys_only = label == KEYS_ONLY
        self.on_demand = False
        """Opened for an order kind's first order (``Sources.defer_unused``), not at start: no readiness condition."""
        """Holds keys (``keys``), maps no event and keeps no read cache: the shard leader's view of the orders."""
        self._expect_seen = None if self.keys_only else getattr(cluster, "expect_seen", None)
        """A cached cluster's read barrier (KubeCluster.expect_seen), or None."""
        share = None if self.keys_only else getattr(cluster, "share_watch", None)
        self._feed: WatchFeed | None = share(api_version, kind, namespace, label) if callable(share) else None
        """The cluster's read cache of this kind and scope, kept by this informer's watch (one watch per kind),
        or None (a cluster without a cache of its own, or one that does not cover this scope as such)."""
        self.thread: threading.Thread | None = None
        self.backoff = Backoff()
        """Threaded mode: the watch's failures in a row and the waits they call for (``failing``: too many)."""
        self.received = 0
        """Watch events received (bookmarks too; not ERROR events)."""

    def __repr__(self) -> str:
        where = f"cluster {self.cluster_name!r}" if self.cluster_name else "the management cluster"
        scope = f" in {self.namespace}" if self.namespace else ""
        labelled = f" labelled {self.label}" if self.label else " (keys only)" if self.keys_only else ""
        return f"<Informer {self.kind}.{self.api_version}{scope}{labelled} on {where}>"

    def cached(self) -> dict[Key, Obj]:
        """The last-seen objects (a copy of the mapping)."""
        with self._sources.lock:
            return dict(self._cache)

    def retarget(self, watches: list[Watch], indexes: list[OrderKind]) -> None:
        """Feed a reloaded rule set's watches; its index expressions are applied to every held order (lock held)."""
        self.forget_index()
        self.watches, self._indexes = watches, indexes
        for key, obj in self._cache.items():
            for order_kind in indexes:
                self._sources.index.put(order_kind.key, (self.cluster_name, *key), self._index_keys(order_kind, obj))
        if self._cache and indexes:
            self._sources.activate(indexes)

    def forget_index(self) -> None:
        """Drop the index entries of the orders this informer holds (lock held)."""
        for key in self._cache:
            for order_kind in self._indexes:
                self._sources.index.put(order_kind.key, (self.cluster_name, *key), ())

    # -- deterministic --------------------------------------------------------

    def pump(self) -> int:
        """List if not listed yet (and served), then drain what the watch has now; events mapped.

        The drain ends when the watch does (its timeout, 0, rounded up by the server to a second) or at
        its first bookmark, which says the server has sent every event up to the bookmark's
        resourceVersion: the emulator sends one once it has sent what its cluster held when the watch
        began, the memory cluster one as the stream's last event. The threaded watches read on past
        bookmarks."""
        mapped = 0
        if not self.listed:
            if not self._cluster.serves(self.api_version, self.kind):
                return 0
            try:
                mapped += self._list()
            except NotFound:
                self._lose()
                return 0
            except ApiError as exc:
                self._sources.log.warning("%r: list failed, trying again at the next pump: %s", self, exc)
                return 0
        try:
            mapped += self._drain(self._open(timeout=0), until_bookmark=True)
        except Gone:
            self.listed = False
            try:
                mapped += self._list()
            except ApiError as exc:
                self._sources.log.warning("%r: re-list failed, trying again at the next pump: %s", self, exc)
        except NotFound:
            self._lose()
        except ApiError as exc:
            self._sources.log.warning("%r: watch failed, trying again at the next pump: %s", self, exc)
        return mapped

    # -- threaded -------------------------------------------------------------

    def run(self, *, watch_timeout: float, recheck: float) -> None:
        """The informer thread's loop, until ``stop`` is set."""
        backoff = self.backoff
        while not self.stop.is_set():
            try:
                if not self.listed:
                    if not self._cluster.serves(self.api_version, self.kind):
                        self.stop.wait(recheck)
                        continue
                    self._list()
                received, opened = self.received, time.monotonic()
                self._drain(self._open(timeout=watch_timeout), backoff=backoff)
                if self.stop.is_set():
                    break
                delay = backoff.ended(self.received - received, lasted=time.monotonic() - opened,
                                      timeout=watch_timeout)
                if delay:  # cut before its first event: a failure like any other, not a re-open at once
                    self._failed("ended", f"the watch ended before its first event; watching again in {delay:.1f}s")
                    self.stop.wait(delay)
            except Gone:
                self.listed = False
                delay = backoff.after_gone()
                if delay:
                    self._failed("gone", f"the watch answered Gone (410); listing again in {delay:.1f}s")
                    self.stop.wait(delay)
                else:
                    self._failed("gone", None)
            except NotFound:
                self._lose()
                self.stop.wait(recheck)
            except Exception as exc:  # an informer thread must outlive any one failure
                delay = backoff.after_failure()
                self._failed("error", f"{exc}; retrying in {delay:.1f}s")
                self.stop.wait(delay)

    def _failed(self, reason: str, text: str | None) -> None:
        """A failure of this informer's watch: counted (``reason``), and a warning (``text``, with the streak) unless
        one was written about the cluster within the minute."""
        metrics = self._sources._metrics
        if metrics is not None:
            metrics.record_watch_failure(self.cluster_name, self.kind, reason)
        if text is not None:
            streak = self.backoff.streak
            failing = "; failing: /readyz fails until it delivers an event" if self.backoff.failing else ""
            self._warn(f"{text} ({streak} failure(s) in a row{failing})")

    def _warn(self, text: str) -> None:
        """A warning about this informer's cluster, unless one was written for it within the minute."""
        held = self._sources.warnings.allow(self.cluster_name)
        if held is not None:
            self._sources.log.warning("%r: %s%s", self, text, WarningLimiter.suffix(held),
                                      extra={"cluster": self.cluster_name})

    # -- shared ---------------------------------------------------------------

    def halt(self) -> None:
        """Stop the thread's loop and close its watch, so a thread blocked in a long watch ends now; the
        cluster's cache this watch kept goes back to a watch of the cluster's own."""
        self.stop.set()
        self._close(self._stream)
        if self._feed is not None:
            self._feed.release()

    def drop(self) -> None:
        """Forget what it holds (a closed keys-only view: its store goes with it)."""
        with self._sources.lock:
            self._cache = {}
            self.listed = False

    def _lose(self) -> None:
        """The kind is not served (any more): list again once it is; the cluster reads it live meanwhile."""
        self.listed = False
        if self._feed is not None:
            self._feed.lost()

    def _open(self, *, timeout: float) -> Iterator[WatchEvent]:
        self._stream = self._cluster.watch(
            self.api_version, self.kind, self.namespace, resource_version=self._rv, labels=self.label or None,
            timeout=timeout, bookmarks=True,
        )
        if self.stop.is_set():  # halted while opening: end at once
            self._close(self._stream)
        return self._stream

    @staticmethod
    def _close(stream: Iterator[WatchEvent] | None) -> None:
        close = getattr(stream, "close", None)
        if callable(close):
            # A generator running on the informer's thread cannot be closed from another: it ends at its timeout.
            with contextlib.suppress(Exception):
                close()

    def _drain(self, events: Iterator[WatchEvent], *, until_bookmark: bool = False,
               backoff: Backoff | None = None) -> int:
        """Map a watch's events until it ends (or, until_bookmark: until its first bookmark, the stream then closed).
        Each event (a bookmark too) counts in ``received``; the first one ends ``backoff``'s streak of failures."""
        mapped = 0
        for event in events:
            if self.stop.is_set():
                break
            mapped += self._event(event)
            self.received += 1
            if backoff is not None and backoff.streak:
                if backoff.failing:
                    self._sources.log.info("%r: the watch delivers events again after %d failure(s) in a row", self,
                                           backoff.streak, extra={"cluster": self.cluster_name})
                backoff.reset()
            if until_bookmark and event["type"] == "BOOKMARK":
                self._close(events)
                break
        return mapped

    def _list(self) -> int:
        """List, and reconcile the cache with the answer as a stream of events (an initial list adds all).

        A shared watch lists from the server (the cluster's cache is what it keeps) and hands the answer
        to the cluster's cache before mapping anything, so the passes it wakes read what it listed."""
        if self._feed is not None or self.keys_only:
            answer = self._cluster.list(self.api_version, self.kind, self.namespace, labels=self.label or None,
                                        live=True)
        else:
            answer = self._cluster.list(self.api_version, self.kind, self.namespace, labels=self.label)
        mapped = 0
        with self._sources.lock:
            if self._feed is not None:
                self._feed.replace(answer.items, answer.resource_version)
            seen: set[Key] = set()
            for obj in answer.items:
                key = _key(obj)
                seen.add(key)
                old = self._cache.get(key)
                if old is not None and _rv(old) is not None and _rv(old) == _rv(obj):
                    continue
                mapped += self._apply("MODIFIED" if old is not None else "ADDED", obj, fed=True)
            known = set(self._cache)  # what the list holds, and what the cache held (its removals map below)
            for key in [k for k in self._cache if k not in seen]:
                mapped += self._apply("DELETED", self._cache[key], fed=True)
            if self._sources.echoes is not None and not self.keys_only:
                self._sources.echoes.listed(self.cluster_name, self.api_version, self.kind, self.namespace,
                                            parse_labels(self.label or None).matches, known, answer.resource_version)
            self._rv = answer.resource_version or None
            self.listed = True
        return mapped

    def _event(self, event: WatchEvent) -> int:
        kind, obj = event["type"], event["object"]
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone(str(obj.get("message") or "watch expired"))
            raise ApiError(str(obj.get("message") or "watch error"))
        meta = obj.get("metadata") or {}
        rv = meta.get("resourceVersion")
        rv = str(rv) if rv else None
        with self._sources.lock:
            if kind == "BOOKMARK":
                if self._feed is not None and rv:
                    self._feed.apply(event)
                self._rv = rv or self._rv
                return 0
            mapped = self._apply(kind, obj, key=(meta.get("namespace") or "", meta.get("name") or ""), rv=rv,
                                 event=event)
            self._rv = rv or self._rv
            return mapped

    def _apply(self, kind: str, obj: Obj, *, fed: bool = False, key: Key | None = None, rv: str | None = None,
               event: WatchEvent | None = None) -> int:
        """Update the cache and the index, then map the event through every watch (lock held).

        The cluster's cache this watch keeps gets the event first (fed: it has it already, from the list),
        and a cluster reading from caches of its own is told what this event showed, so the passes the event
        wakes never read an older state than the one that woke them. key, rv and event: the object's key and
        resourceVersion and the watch event itself, read once by the caller (a watch event: issue 11, each event
        costs what every step reads of it); without them they are read here (a list's reconciliation)."""
        if key is None:
            key, rv = _key(obj), _rv(obj)
        if self.keys_only:
            if kind == "DELETED":
                self._cache.pop(key, None)
            else:
                self._cache[key] = keys(obj)
            return 0
        if self._feed is not None and not fed and rv is not None:
            self._feed.apply(event if event is not None else {"type": kind, "object": obj}, key)
        if rv is not None and callable(self._expect_seen):
            self._expect_seen(self.api_version, self.kind, key[0] or None, rv, obj)
        if kind == "DELETED":
            old = self._cache.pop(key, None)
            new: Obj | None = None
        else:
            old = self._cache.get(key)
            self._cache[key] = new = obj
            if self._indexes and old is None:
                self._sources.activate(self._indexes)  # an order kind's first order: its watches open first
        for order_kind in self._indexes:
            member = (self.cluster_name, *key)
            if new is not None and old is not None and order_kind.index_alike(old, new) \
                    and self._sources.index.has(order_kind.key, member):
                continue  # the same keys as before (a status write): nothing to compute or move
            self._sources.index.put(order_kind.key, member, () if new is None else self._index_keys(order_kind, new))
        echo = self._sources.echoes.echo_of(self.cluster_name, self.api_version, self.kind, obj,
                                            quiet=self._sources.quiet_removal(obj) if new is None else None,
                                            at=(key, rv or "")) \
            if self._sources.echoes is not None and rv is not None else None
        for watch in self.watches:
            self._sources.map_event(watch, self.cluster_name, old, new, obj, echo=echo)
        return 1

    def _index_keys(self, order_kind: OrderKind, order: Obj) -> Sequence[str]:
        """The order's index keys; none (out of the index) when the expression fails on its data."""
        try:
            return order_kind.index_keys(order, self.cluster_name)
        except ExprError as err:
            self._sources.event_error(self.kind, self.cluster_name, order, "index", order_kind.index_origin, err)
            return ()


Feeds = tuple[list[Watch], list[OrderKind]]
"""What one informer feeds: the watches mapping its events, the order kinds whose index it keeps."""


class Sources:
    """Every informer of every engaged cluster, the order index, and the queue they feed."""

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


def mapped(watch: Watch, cluster: str, old: Obj | None, new: Obj | None, obj: Obj, index: Index) -> list[Request]:
    """The orders an event wakes: those the new object maps to, then those the old one did (each once)."""
    if new is not None and old is not None and watch.maps_alike(old, new):
        return list(dict.fromkeys(watch.requests(new, cluster, index)))
    seen: dict[Request, None] = {}
    for source in [o for o in (new, old) if o is not None] or [obj]:
        seen.update(dict.fromkeys(watch.requests(source, cluster, index)))
    return list(seen)
