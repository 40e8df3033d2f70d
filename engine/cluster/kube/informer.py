"""List, then watch from the list's resourceVersion in a daemon thread, keeping a Store current.

The DynamicClient's own watch neither tracks the resourceVersion nor reconnects (see the
library notes), so this loop does: it resumes from the last resourceVersion seen (bookmarks
included) whenever the server ends a stream, re-lists on Gone (410) (at once the first time in
a row, then backing off: ``engine.cluster.retry``), and backs off on any other failure (a stream
that ended before its first event is one) while the store keeps answering from what it has; its
warnings share the per-cluster limit. When
the kind stops being served (NotFound), the informer ends and says so (``dead``); its owner
starts a new one on the next read. A ``FedInformer`` is the same store kept by a watch the
cluster does not own (the runtime's, through ``KubeCluster.share_watch``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

from engine.cluster.api import Gone, NotFound, Obj, ObjectList, WatchEvent
from engine.cluster.kube.store import Store, rv_of
from engine.cluster.retry import CLUSTER_WARNINGS, Backoff, WarningLimiter

Lister = Callable[[], ObjectList]
Watcher = Callable[[str], Iterator[WatchEvent]]
"""Opens a watch from a resourceVersion (bookmarks on, bounded by the server's timeout)."""


class Informer:
    """One kind in one namespace scope on one cluster."""

    def __init__(self, name: str, list_all: Lister, watch_from: Watcher, *, log: logging.Logger, cluster: str = "",
                 warnings: WarningLimiter | None = None, store: Store | None = None,
                 timeout: float | None = None) -> None:
        """cluster: the name its warnings are limited by (one a minute per cluster); store: where it keeps the
        objects (a projecting one, decision 0040), a whole-object store by default; timeout: how long each of
        ``watch_from``'s watches lasts (a quiet one that lasted it is no failure)."""
        self._timeout = timeout
        self.name = name
        self.cluster = cluster
        self._warnings = warnings if warnings is not None else CLUSTER_WARNINGS
        self.store = store if store is not None else Store()
        self._list = list_all
        self._watch = watch_from
        self._log = log
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._lock = threading.Lock()
        self._stream: Iterator[WatchEvent] | None = None
        self._thread: threading.Thread | None = None
        self.dead = False
        """True once the kind is no longer served (or the informer was stopped): it answers nothing more."""
        self.relists = 0
        """How many times the informer listed again after its first list (after Gone)."""
        self.backoff = Backoff()
        """The watch's failures in a row and the waits they call for (``failing``: too many)."""

    def __repr__(self) -> str:
        return f"<Informer {self.name}>"

    def start(self) -> None:
        """List now (its errors raise to the caller), then watch in a daemon thread."""
        self._relist()
        self._synced.set()
        self._thread = threading.Thread(target=self._run, name=f"informer {self.name}", daemon=True)
        self._thread.start()

    def has_synced(self) -> bool:
        return self._synced.is_set() and not self.dead

    def stop(self, *, wait: float = 5.0) -> None:
        """Stop the thread, interrupting a watch it is blocked in."""
        self._stop.set()
        self.dead = True
        with self._lock:
            stream = self._stream
        _close(stream)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(wait)

    def _relist(self) -> None:
        answer = self._list()
        self.store.replace(answer.items, answer.resource_version)

    def _run(self) -> None:
        backoff = self.backoff
        need_list = False
        while not self._stop.is_set():
            try:
                if need_list:
                    self._relist()
                    self.relists += 1
                    need_list = False
                opened = time.monotonic()
                received = self._follow()
                if self._stop.is_set():
                    break
                delay = backoff.ended(received, lasted=time.monotonic() - opened, timeout=self._timeout)
                if delay:  # cut before its first event: a failure like any other, not a re-open at once
                    self._warn(f"the watch ended before its first event ({backoff.streak} failure(s) in a row); "
                               f"watching again in {delay:.1f}s")
                    self._stop.wait(delay)
            except Gone:
                need_list = True
                delay = backoff.after_gone()
                if not delay:
                    self._log.info("%r: resourceVersion expired, listing again", self)
                else:
                    self._warn(f"the watch answered Gone (410) {backoff.streak} times in a row; "
                               f"listing again in {delay:.1f}s")
                    self._stop.wait(delay)
            except NotFound:
                if self._stop.is_set():
                    break
                self._log.info("%r: the kind is no longer served; the informer ends", self)
                self.dead = True
                break
            except Exception as exc:  # the thread must outlive any one failure
                if self._stop.is_set():
                    break
                delay = backoff.after_failure()
                self._warn(f"{exc}; trying again in {delay:.1f}s")
                self._stop.wait(delay)
        self.dead = True

    def _warn(self, text: str) -> None:
        held = self._warnings.allow(self.cluster)
        if held is not None:
            self._log.warning("%r: %s%s", self, text, WarningLimiter.suffix(held))

    def _follow(self) -> int:
        """One watch from the store's position to its end, every event into the store; how many events came (the
        first ends the backoff's streak of failures)."""
        stream = self._watch(self.store.position)
        with self._lock:
            self._stream = stream
        if self._stop.is_set():
            _close(stream)
            return 0
        received = 0
        try:
            for event in stream:
                if self._stop.is_set():
                    break
                received += 1
                self.backoff.reset()
                if event["type"] in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK") and rv_of(event["object"]):
                    self.store.apply(event)
        finally:
            with self._lock:
                self._stream = None
            _close(stream)
        return received


def _close(stream: Iterator[WatchEvent] | None) -> None:
    close = getattr(stream, "close", None)
    if close is not None:
        close()


class FedInformer:
    """A Store kept current by a watch the cluster does not own (``KubeCluster.share_watch``): the runtime's
    informer of the same kind, scope and label lists and watches once and feeds it here, so the kind is
    watched once, decoded once, and (objects shared with the runtime's cache) held once.

    Until its first list arrives a read waits for it (at most the cluster's settle timeout); once the
    kind is lost (unserved) reads go to the server; once released the cluster starts a watch of its own."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.store = Store()
        self._listed = threading.Event()
        self._was_listed = False
        """``_listed`` as a plain flag, read by every cached read without the event's lock."""
        self._lost = False
        self.dead = False
        """True once released: the cluster's next read replaces it with an informer of its own."""

    def __repr__(self) -> str:
        return f"<FedInformer {self.name}>"

    # -- the feed (WatchFeed) ---------------------------------------------------

    def replace(self, items: list[Obj], resource_version: str) -> None:
        self.store.replace(items, resource_version)
        self._lost = False
        self._was_listed = True
        self._listed.set()

    def apply(self, event: WatchEvent, key: tuple[str, str] | None = None) -> None:
        self.store.apply(event, key)

    def lost(self) -> None:
        self._lost = True

    def release(self) -> None:
        self.dead = True
        self._listed.set()  # a read waiting for the first list goes on (and reads live)

    # -- as the cluster reads it --------------------------------------------------

    def wait_listed(self, timeout: float) -> bool:
        """Whether reads can use the store: listed (waiting up to ``timeout`` for the first list), served, fed.
        Every cached read asks: once usable, the answer costs no wait on the list's event."""
        if self._was_listed:
            return not self._lost and not self.dead
        return self._listed.wait(timeout) and not self._lost and not self.dead

    def has_synced(self) -> bool:
        """Readiness of the feeding watch is its owner's (the runtime's informers): never held back here."""
        return True

    def stop(self, *, wait: float = 5.0) -> None:
        self.release()
