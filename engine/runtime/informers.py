"""Informers: list-then-watch of one kind on one cluster, keeping the last-seen objects and the resourceVersion.

One informer per (cluster, apiVersion, kind, namespace, label key) is shared by every compiled watch on that kind; it
hands each event to its host (``watches.Sources``, seen through ``InformerHost``) to map to orders. Two modes share
the event handling: deterministic (``Sources.pump()`` drains every informer with a non-blocking watch, up to its end
or first bookmark), for scenarios and tests, and threaded (``Sources.start()``: one thread per informer on a long
watch, resuming from the last resourceVersion), for ``engine run``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from engine.cluster.api import ApiError, Cluster, Gone, NotFound, Obj, WatchEvent, WatchFeed
from engine.cluster.retry import Backoff, WarningLimiter
from engine.cluster.selectors import parse_labels
from engine.expr.errors import ExprError
from engine.metrics import Metrics
from engine.outcome import Request
from engine.runtime.echoes import Echoes
from engine.runtime.event_orders import OrderIndex
from engine.runtime.kinds import Log, OrderKind, Watch

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



def _labels(held: Obj) -> object:
    return (held.get("metadata") or {}).get("labels")


def _key(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _rv(obj: Obj) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv else None


class InformerHost(Protocol):
    """What an informer needs of the sources that own it (``watches.Sources``): their lock, order index, log and
    counters, and the mapping of an event to the orders it wakes."""

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def index(self) -> OrderIndex: ...

    @property
    def log(self) -> Log: ...

    @property
    def _metrics(self) -> Metrics | None: ...

    @property
    def warnings(self) -> WarningLimiter: ...

    @property
    def echoes(self) -> Echoes | None: ...

    def activate(self, order_kinds: Iterable[OrderKind]) -> None: ...

    def quiet_removal(self, child: Obj) -> Any: ...

    def keys_changed(self) -> None: ...

    def map_event(self, watch: Watch, cluster: str, old: Obj | None, new: Obj | None, obj: Obj, *,
                  echo: Request | None = None, hold: bool = True) -> None: ...

    def event_error(self, kind: str, cluster: str, obj: Obj, what: str, origin: object, err: ExprError) -> None: ...


class Informer:
    """List-then-watch of one kind on one cluster, feeding the watches on it.

    A kind the cluster does not serve is skipped and checked again later (every pump
    in deterministic mode, every ``recheck`` seconds in threaded mode), so a CRD that
    appears is watched without a restart. A Gone (410) re-lists; the re-list is
    compared with the cache, so objects that vanished meanwhile still map as deletes.
    In threaded mode retries are bounded (``engine.cluster.retry``): only the first Gone
    of a streak re-lists at once, further failures back off with jitter, and warnings
    about one cluster are written at most once a minute.
    """

    def __init__(
        self,
        sources: InformerHost,
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
            if self.keys_only:
                self._sources.keys_changed()

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
                changed = self._cache.pop(key, None) is not None
            else:
                before = self._cache.get(key)
                self._cache[key] = held = keys(obj)
                changed = before is None or _labels(before) != _labels(held)  # not a status or spec write
            if changed:
                self._sources.keys_changed()
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
