"""Events, served as the API server serves them: one store, two API versions.

The API server keeps core ``v1`` Events and ``events.k8s.io/v1`` Events in one storage, so an
Event a controller records through events.k8s.io/v1 is what ``kubectl get events`` and
``kubectl describe`` (core v1, field selector ``involvedObject.*``) show. Here the store is the
cluster's events.k8s.io/v1 one and core v1 requests are answered through a field mapping (the
API server's conversion): ``regarding`` is ``involvedObject``, ``note`` is ``message``, the
``deprecated*`` fields are the core ones.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.api import Obj, PrinterColumn, ResourceInfo
from engine.cluster.selectors import SUPPORTED_FIELDS

CORE = ("v1", "Event")
STORED = ("events.k8s.io/v1", "Event")

CORE_TO_STORED = {
    "involvedObject": "regarding",
    "message": "note",
    "reportingComponent": "reportingController",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
}
"""Core v1 field -> events.k8s.io/v1 field; every other field has one name in both."""
STORED_TO_CORE = {stored: core for core, stored in CORE_TO_STORED.items()}

_OBJECT_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
CORE_FIELDS = (*SUPPORTED_FIELDS, *(f"involvedObject.{f}" for f in _OBJECT_FIELDS),
               "reason", "reportingComponent", "source", "type")
"""The field selectors the API server supports on core v1 Events."""
STORED_FIELDS = (*SUPPORTED_FIELDS, *(f"regarding.{f}" for f in _OBJECT_FIELDS),
                 "reason", "reportingController", "type")
"""... and on events.k8s.io/v1 Events."""

COLUMNS = (
    PrinterColumn("Last Seen", "date", ".lastSeen", "When the event last happened."),
    PrinterColumn("Type", "string", ".type", "Normal or Warning."),
    PrinterColumn("Reason", "string", ".reason", "Why the event happened, in CamelCase."),
    PrinterColumn("Object", "string", ".object", "The object the event is about."),
    PrinterColumn("Message", "string", ".message", "What happened."),
)
"""The columns of ``kubectl get events`` (computed per row by ``for_table``)."""


def is_core(info: ResourceInfo) -> bool:
    return (info.api_version, info.kind) == CORE


def is_event(info: ResourceInfo) -> bool:
    return (info.api_version, info.kind) in (CORE, STORED)


def supported_fields(info: ResourceInfo) -> tuple[str, ...]:
    """The field selectors a kind's list and watch accept."""
    if is_core(info):
        return CORE_FIELDS
    return STORED_FIELDS if is_event(info) else SUPPORTED_FIELDS


def to_core(event: Obj) -> Obj:
    """A stored events.k8s.io/v1 Event as a core v1 Event."""
    out = _renamed(event, STORED_TO_CORE)
    out["apiVersion"], out["kind"] = CORE
    return out


def to_stored(event: Obj) -> Obj:
    """A core v1 Event as the events.k8s.io/v1 Event to store."""
    out = _renamed(event, CORE_TO_STORED)
    out["apiVersion"], out["kind"] = STORED
    return out


def for_table(event: Obj) -> Obj:
    """An Event (either version) with the computed cells of ``kubectl get events``: when it was last
    seen (its last timestamp, else its series' last observation, else its time) and ``kind/name``."""
    core = to_core(event) if event.get("apiVersion") == STORED[0] else dict(event)
    series: Obj = core["series"] if isinstance(core.get("series"), dict) else {}
    regarding: Obj = core["involvedObject"] if isinstance(core.get("involvedObject"), dict) else {}
    kind, name = str(regarding.get("kind") or "").lower(), str(regarding.get("name") or "")
    core["lastSeen"] = core.get("lastTimestamp") or series.get("lastObservedTime") or core.get("eventTime")
    core["object"] = f"{kind}/{name}" if kind else name
    return core


def _renamed(event: Obj, names: dict[str, str]) -> Obj:
    out: dict[str, Any] = {}
    for key, value in event.items():
        out[names.get(key, key)] = value
    return out
