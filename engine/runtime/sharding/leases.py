"""Every Lease of the shard namespace as one watch shows them, so the Lease readers need no request each round.

Each retry period a follower reads the leader Lease and the leader lists the membership Leases. With a watch of the
namespace's Leases (a list, then one long request) a shard member reads them from here instead. What is read here
only ever confirms what the live reads would: a record older than one the reader saw already (a watch that lags or
stalled) is not used, and every decision that writes (acquiring the leader Lease) or gives a member's orders on
(a member no longer live) is taken on a live read, as before (``LeaderElector``, ``Assigner``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator

from engine.cluster.api import ApiError, Cluster, Forbidden, Gone, Obj, WatchEvent
from engine.cluster.retry import Backoff
from engine.cluster.selectors import parse_labels
from engine.runtime.kinds import Log
from engine.runtime.leader import LEASE_API_VERSION, LEASE_KIND

WATCH_TIMEOUT = 300.0
"""The watch's timeoutSeconds: it is opened again from where it was then (a stalled stream ends by then)."""


class NotWatched(LookupError):
    """The watch cannot say: not listed yet, or failing since its last list."""


class LeaseWatch:
    """The Leases of one namespace, kept by a list and a watch on the thread ``run`` runs on."""

    def __init__(self, cluster: Cluster, namespace: str, *, log: Log | None = None,
                 timeout: float = WATCH_TIMEOUT, backoff: Backoff | None = None) -> None:
        """backoff: the waits after failures (default: the informers')."""
        self._cluster = cluster
        self.namespace = namespace
        self._log: Log = log if log is not None else logging.getLogger("engine.runtime.sharding")
        self._timeout = timeout
        self._backoff = backoff if backoff is not None else Backoff()
        self._lock = threading.Lock()
        self._leases: dict[str, Obj] = {}
        self._synced = False
        self._stream: Iterator[WatchEvent] | None = None
        self._refused = False
        """Whether a list or watch was refused since the watch last brought an event (said once until one does: a
        Role with list but without watch lists fine and is refused the watch each time)."""

    def lease(self, name: str) -> Obj | None:
        """The Lease of that name as last watched (None: there is none); NotWatched when the watch cannot say."""
        with self._lock:
            if not self._synced:
                raise NotWatched(self.namespace)
            return self._leases.get(name)

    def leases(self, labels: str) -> list[Obj]:
        """The Leases carrying the selector's labels as last watched; NotWatched when the watch cannot say."""
        selector = parse_labels(labels)
        with self._lock:
            if not self._synced:
                raise NotWatched(self.namespace)
            return [lease for lease in self._leases.values() if selector.matches_object(lease)]

    def run(self, stop: threading.Event) -> None:
        """List, then watch from the list's resourceVersion, again and again, until ``stop`` is set."""
        backoff = self._backoff
        version: str | None = None
        halting = threading.Thread(target=self._halt_on, args=(stop,), name="shard Lease watch stop", daemon=True)
        halting.start()
        while not stop.is_set():
            try:
                if version is None:
                    listed = self._cluster.list(LEASE_API_VERSION, LEASE_KIND, self.namespace, live=True)
                    with self._lock:
                        self._leases = {str(item["metadata"]["name"]): item for item in listed.items}
                        self._synced = True
                    version = listed.resource_version
                opened, events = time.monotonic(), 0
                self._stream = self._cluster.watch(LEASE_API_VERSION, LEASE_KIND, self.namespace,
                                                   resource_version=version, timeout=self._timeout, bookmarks=True)
                if stop.is_set():
                    break
                for event in self._stream:
                    version = self._apply(event) or version
                    events += 1
                    backoff.reset()
                    self._refused = False
                # one cut before its first event is a failure: watched again after a wait, as an informer is
                stop.wait(backoff.ended(events, lasted=time.monotonic() - opened, timeout=self._timeout))
            except Gone:
                self._unsynced()
                version = None
                stop.wait(backoff.after_gone())
            except ApiError as exc:
                self._unsynced()
                version = None
                delay = backoff.after_failure()
                if isinstance(exc, Forbidden):
                    self._say_refused(exc, delay)
                else:
                    self._log.debug("the watch of the Leases in %s failed (%s); listing again in %.1fs",
                                    self.namespace, exc, delay)
                stop.wait(delay)
            except Exception as exc:  # the watch must outlive any one failure; readers read live meanwhile
                self._unsynced()
                version = None
                delay = backoff.after_failure()
                self._log.warning("the watch of the Leases in %s failed (%s: %s); listing again in %.1fs",
                                  self.namespace, type(exc).__name__, exc, delay)
                stop.wait(delay)
        self._unsynced()

    def _say_refused(self, exc: Forbidden, delay: float) -> None:
        """A refusal is a Role without list or watch on leases: a warning the first time, so that an operator
        deployed with an older Role says why it reads the Leases live; debug while it repeats."""
        if self._refused:
            self._log.debug("the watch of the Leases in %s is still refused (%s); trying again in %.1fs",
                            self.namespace, exc, delay)
            return
        self._refused = True
        self._log.warning("the Leases in %s may not be listed and watched (%s): the shard members read them live "
                          "each retry period instead; give the Role list and watch on leases (engine rbac prints "
                          "it); trying again in %.1fs", self.namespace, exc, delay)

    def _apply(self, event: WatchEvent) -> str | None:
        """One event into the store; the resourceVersion it brings."""
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        version = meta.get("resourceVersion")
        if event.get("type") == "BOOKMARK":
            return str(version) if version else None
        name = str(meta.get("name") or "")
        with self._lock:
            if event.get("type") == "DELETED":
                self._leases.pop(name, None)
            elif name:
                self._leases[name] = obj
        return str(version) if version else None

    def _unsynced(self) -> None:
        with self._lock:
            self._synced = False
            self._leases = {}

    def _halt_on(self, stop: threading.Event) -> None:
        """Close the open watch once ``stop`` is set, so ``run`` ends without waiting for its timeout."""
        stop.wait()
        close = getattr(self._stream, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()
