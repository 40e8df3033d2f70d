"""Warning Events on orders, recorded beside the passes, as client-go's event broadcaster does.

A pass that refuses an order or fails hands the runtime an ``EventNote``; the recorder queues it and returns at
once. One background thread writes the queue out as ``events.k8s.io/v1`` Events:

- the same note on the same order again within ``SERIES_WINDOW`` is not a new Event: the first one becomes a
  series (``series.count``, ``series.lastObservedTime``), patched in place;
- each order has a token bucket (``BURST`` writes, then one per ``REFILL``): an order failing in a loop cannot
  flood the API server; notes beyond it are dropped and counted;
- a full queue drops the note; a write that fails is logged and counted, never raised.

So a pass's own API calls are what the rules make them, and an Event that cannot be written never fails a pass.
"""

from __future__ import annotations

import datetime as dt
import logging
import queue
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass

from engine.clock import Clock
from engine.cluster.api import ApiError, NotFound, Obj
from engine.cluster.registry import ClusterNotFound, ClusterSet
from engine.metrics import Metrics
from engine.outcome import EventNote, Request

EVENTS_API = "events.k8s.io/v1"
REPORTING_CONTROLLER = "c5c3.io/order-engine"
ACTION = "Reconcile"
NOTE_LIMIT = 1024
"""events.k8s.io/v1 refuses a longer note."""

QUEUE_SIZE = 1000
BURST = 25
REFILL = dt.timedelta(minutes=5)
SERIES_WINDOW = dt.timedelta(minutes=6)
"""How long after its last occurrence a note still joins the same Event's series (client-go's value)."""
REMEMBERED = 4096
"""Notes remembered for series and buckets; the oldest are forgotten first."""

LOG = logging.getLogger("engine.runtime.events")


@dataclass
class _Seen:
    """An Event written for a note: its name and series so far."""

    cluster: str
    namespace: str
    name: str
    count: int
    last: dt.datetime


@dataclass
class _Bucket:
    tokens: float
    at: dt.datetime


class EventRecorder:
    """Queues Event notes from the passes and writes them on its own thread (``run``)."""

    def __init__(self, clusters: ClusterSet, *, clock: Clock, instance: str, metrics: Metrics | None = None,
                 queue_size: int = QUEUE_SIZE, log: logging.Logger | None = None) -> None:
        """instance: this replica's name (``reportingInstance``)."""
        self.clusters = clusters
        self.clock = clock
        self.instance = instance[:128]
        self.metrics = metrics
        self.log = log or LOG
        self._queue: queue.Queue[tuple[Request, EventNote]] = queue.Queue(queue_size)
        self._seen: OrderedDict[tuple[str, str, str, str, str], _Seen] = OrderedDict()
        self._buckets: OrderedDict[tuple[str, str], _Bucket] = OrderedDict()

    def record(self, request: Request, note: EventNote) -> None:
        """Queue a Warning Event about the order of ``request``; never blocks, never raises."""
        if not note.uid:
            return  # no order to attach it to (the order was not read)
        try:
            self._queue.put_nowait((request, note))
        except queue.Full:
            self._count("dropped")

    def run(self, stop: threading.Event, *, poll: float = 0.5) -> None:
        """Write queued notes until ``stop`` is set, then what is still queued."""
        while not stop.is_set():
            try:
                item = self._queue.get(timeout=poll)
            except queue.Empty:
                continue
            self._write(*item)
        self.flush()

    def flush(self) -> None:
        """Write every queued note now (tests; and the last ones on a stop)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            self._write(*item)

    # -- writing ---------------------------------------------------------------

    def _write(self, request: Request, note: EventNote) -> None:
        try:
            self._write_or_raise(request, note)
        except (ApiError, ClusterNotFound) as err:
            self._count("failed")
            self.log.warning("could not record an Event on %s: %s", request, err,
                             extra={"order": f"{request.namespace}/{request.name}", "cluster": request.cluster})
        except Exception:  # an Event is never worth a dead recorder thread
            self._count("failed")
            self.log.exception("recording an Event on %s failed", request)

    def _write_or_raise(self, request: Request, note: EventNote) -> None:
        now = self.clock.now()
        if not self._take_token((request.cluster, note.uid), now):
            self._count("dropped")
            return
        key = (request.cluster, note.uid, request.kind, note.reason, note.message)
        seen = self._seen.get(key)
        cluster = self.clusters.resolve(request.cluster)
        if seen is not None and now - seen.last <= SERIES_WINDOW:
            seen.count += 1
            seen.last = now
            series = {"series": {"count": seen.count, "lastObservedTime": _micro(now)}}
            try:
                cluster.patch(EVENTS_API, "Event", seen.namespace, seen.name, series)
                self._seen.move_to_end(key)
                self._count("series")
                return
            except NotFound:
                pass  # the Event expired or was deleted: start afresh
        created = cluster.create(self._event(request, note, now))
        self._remember(key, _Seen(request.cluster, request.namespace, created["metadata"]["name"], 1, now))
        self._count("created")

    def _event(self, request: Request, note: EventNote, now: dt.datetime) -> Obj:
        api_version, _, kind = request.kind.rpartition("/")
        return {
            "apiVersion": EVENTS_API, "kind": "Event",
            "metadata": {"name": f"{request.name}.{uuid.uuid4().hex[:16]}", "namespace": request.namespace},
            "regarding": {"apiVersion": api_version, "kind": kind, "namespace": request.namespace,
                          "name": request.name, "uid": note.uid},
            "type": "Warning", "reason": note.reason, "note": note.message[:NOTE_LIMIT], "action": ACTION,
            "reportingController": REPORTING_CONTROLLER, "reportingInstance": self.instance,
            "eventTime": _micro(now),
        }

    def _take_token(self, key: tuple[str, str], now: dt.datetime) -> bool:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(BURST), now)
            while len(self._buckets) > REMEMBERED:
                self._buckets.popitem(last=False)
        bucket.tokens = min(float(BURST), bucket.tokens + (now - bucket.at) / REFILL)
        bucket.at = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    def _remember(self, key: tuple[str, str, str, str, str], seen: _Seen) -> None:
        self._seen[key] = seen
        self._seen.move_to_end(key)
        while len(self._seen) > REMEMBERED:
            self._seen.popitem(last=False)

    def _count(self, result: str) -> None:
        if self.metrics is not None:
            self.metrics.events.labels(result=result).inc()


def _micro(moment: dt.datetime) -> str:
    """A MicroTime as the API server writes it: ``2026-01-01T00:00:00.000000Z``."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
