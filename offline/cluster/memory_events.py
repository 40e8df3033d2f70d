"""The memory cluster's event log and the watches that read it.

Every write appends one event under the cluster's lock; the log keeps the last ``size`` events, as etcd keeps a
window of revisions, so a watch from an older resourceVersion is Gone. A watch with a label selector sees an
object that leaves its selection as a deletion and one that enters it as an addition, as the API server's watch
cache shows them.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from engine.cluster.api import Gone, Obj, WatchEvent
from engine.cluster.readonly import handed_out
from engine.cluster.selectors import Selector
from offline.cluster.served_kinds import ServedKind


@dataclass(frozen=True)
class Event:
    """One entry of the event log; ``old`` lets label-filtered watches see objects leave."""

    rv: int
    type: str
    store: tuple[str, str]
    namespace: str | None
    obj: Obj
    old: Obj | None


class EventLog:
    """The bounded log of one cluster's events; every method but ``stream``'s waiting runs under the cluster's lock."""

    def __init__(self, changed: threading.Condition, size: int) -> None:
        """changed: the cluster's condition (on its lock), notified on every event."""
        self._changed = changed
        self.size = size
        self._events: deque[Event] = deque()
        self.compacted = 0
        """The newest resourceVersion a watch can no longer start from."""

    def record(self, event: Event) -> None:
        """Append one event, forget the oldest beyond the size, wake the watches."""
        self._events.append(event)
        while len(self._events) > self.size:
            self.compacted = self._events.popleft().rv
        self._changed.notify_all()

    def compact(self, until: int) -> None:
        """Forget the events up to ``until``, as etcd's compaction does."""
        while self._events and self._events[0].rv <= until:
            self._events.popleft()
        self.compacted = max(self.compacted, until)

    def stream(self, k: ServedKind, scope: str | None, selector: Selector, cursor: int, initial: list[WatchEvent], *,
               timeout: float | None, bookmarks: bool, view: Callable[[ServedKind, Obj], Obj],
               revision: Callable[[], int]) -> Iterator[WatchEvent]:
        """The watch's events: ``initial`` first, then every later event of ``k`` in ``scope`` its selector
        sees, until ``timeout``; ``view`` is what a watcher is shown of a stored object, ``revision`` the
        cluster's resourceVersion now (called under its lock)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        yield from initial
        while True:
            with self._changed:
                batch, cursor = self._after(k, scope, selector, cursor, view, revision)
                while not batch:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        break
                    self._changed.wait(remaining)
                    batch, cursor = self._after(k, scope, selector, cursor, view, revision)
            if not batch:
                break
            yield from batch
        if bookmarks:
            meta = {"resourceVersion": str(cursor)}
            yield {"type": "BOOKMARK", "object": {"apiVersion": k.info.api_version, "kind": k.info.kind,
                                                  "metadata": meta}}

    def _after(self, k: ServedKind, scope: str | None, selector: Selector, cursor: int,
               view: Callable[[ServedKind, Obj], Obj], revision: Callable[[], int]) -> tuple[list[WatchEvent], int]:
        """The events a watcher sees after cursor, and the resourceVersion it has now seen up to."""
        self.check_not_compacted(cursor)
        newer: list[Event] = []
        for event in reversed(self._events):
            if event.rv <= cursor:
                break
            newer.append(event)
        out: list[WatchEvent] = []
        for event in reversed(newer):
            if event.store != k.store or (scope and event.namespace != scope):
                continue
            kind, obj = event.type, event.obj
            now_in = selector.matches_object(obj)
            if kind == "MODIFIED" and event.old is not None and not now_in:
                # Leaving the selection reads as a deletion of the object as it was, as the watch cache does.
                kind, obj = ("DELETED", event.old) if selector.matches_object(event.old) else ("", obj)
            elif kind == "MODIFIED" and event.old is not None and not selector.matches_object(event.old):
                kind = "ADDED"
            elif not now_in:
                kind = ""
            if kind:
                shown = view(k, obj)
                shown["metadata"]["resourceVersion"] = str(event.rv)
                out.append({"type": kind, "object": handed_out(shown)})
        return out, max(cursor, revision())

    def check_not_compacted(self, cursor: int) -> None:
        """Gone, as etcd answers, for a watch from a resourceVersion the log no longer holds."""
        if cursor < self.compacted:
            raise Gone(f"too old resource version: {cursor} ({self.compacted + 1})")
