"""A watch request turned into the event stream the API server sends.

The cluster's watch blocks until its timeout, so the stream watches in short spans, resuming from the
resourceVersion each span reached: between spans it notices a client that hung up or a server that stops. A
too-old resourceVersion is an ``ERROR`` event carrying the 410 Status (HTTP 200, as the watch cache answers);
``sendInitialEvents`` starts with the current objects and a bookmark marking their end.

With bookmarks allowed, the stream sends one as soon as it has sent every event the cluster held when it began: a
reader that only wants what is there now (``Informer.pump``, deterministic mode) can stop at it instead of waiting
out the watch's timeout. The bookmark that ends the stream is left out when nothing came after that one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from engine.cluster.api import ApiError, Gone, Obj, ResourceInfo, WatchEvent
from engine.cluster.selectors import FieldSelector
from offline.cluster.memory import MemoryCluster

Alive = Callable[[], bool]
"""Whether the client still listens and the server still runs."""

EventSource = Callable[[Alive], Iterator[Obj]]

SPAN = 0.5
"""Seconds of one span: how late a hung-up client or a stopping server is noticed."""

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True)
class WatchSpec:
    """A watch request as the query string gave it, selectors parsed."""

    info: ResourceInfo
    namespace: str | None
    resource_version: str | None
    labels: str | None
    fields: FieldSelector
    timeout: float | None
    bookmarks: bool
    send_initial_events: bool = False


def open_watch(cluster: MemoryCluster, spec: WatchSpec) -> EventSource:
    """Check the request now (NotFound and BadRequest raise); the events come once the source runs."""
    deadline = None if spec.timeout is None else time.monotonic() + spec.timeout
    prelude: list[Obj] = []
    cursor = spec.resource_version
    if spec.send_initial_events:
        listed = cluster.list(spec.info.api_version, spec.info.kind, spec.namespace, labels=spec.labels)
        prelude = [{"type": "ADDED", "object": obj} for obj in listed.items if spec.fields.matches(obj)]
        prelude.append(_bookmark(spec.info, listed.resource_version, initial_end=True))
        cursor = listed.resource_version
    try:
        first = _span(cluster, spec, cursor, deadline, wait=0.0)  # what the cluster holds now, then its bookmark
    except Gone as err:
        expired: Obj = {"type": "ERROR", "object": err.status()}
        return lambda alive: iter([expired])
    caught_up = spec.bookmarks and not spec.send_initial_events  # (initial events end with their own bookmark)

    def source(alive: Alive) -> Iterator[Obj]:
        yield from prelude
        reached = cursor
        marked = None  # the resourceVersion of the caught-up bookmark, while nothing came after it
        events = first
        while True:
            try:
                for event in events:
                    obj = event["object"]
                    reached = str(obj.get("metadata", {}).get("resourceVersion") or reached)
                    if event["type"] != "BOOKMARK" and spec.fields.matches(obj):
                        marked = None
                        yield dict(event)
                    elif event["type"] == "BOOKMARK" and caught_up and events is first and reached:
                        marked = reached
                        yield _bookmark(spec.info, reached)
                    if not alive():
                        return
                if not alive() or (deadline is not None and time.monotonic() >= deadline):
                    break
                events = _span(cluster, spec, reached, deadline)
            except ApiError as err:
                yield {"type": "ERROR", "object": err.status()}
                return
        if spec.bookmarks and reached and reached != marked:
            yield _bookmark(spec.info, reached)

    return source


def _span(cluster: MemoryCluster, spec: WatchSpec, cursor: str | None, deadline: float | None, *,
          wait: float | None = None) -> Iterator[WatchEvent]:
    if wait is None:
        wait = SPAN if deadline is None else max(0.0, min(SPAN, deadline - time.monotonic()))
    return cluster.watch(spec.info.api_version, spec.info.kind, spec.namespace, resource_version=cursor,
                         labels=spec.labels, timeout=wait, bookmarks=True)


def _bookmark(info: ResourceInfo, resource_version: str, *, initial_end: bool = False) -> Obj:
    meta: Obj = {"resourceVersion": resource_version}
    if initial_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {"type": "BOOKMARK", "object": {"kind": info.kind, "apiVersion": info.api_version, "metadata": meta}}
