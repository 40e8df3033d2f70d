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

from engine.cluster.api import Obj, ResourceInfo
from engine.cluster.selectors import SUPPORTED_FIELDS
from offline.cluster import builtin

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

def is_core(info: ResourceInfo) -> bool:
    return (info.api_version, info.kind) == CORE


def is_event(info: ResourceInfo) -> bool:
    return (info.api_version, info.kind) in (CORE, STORED)


def to_core(event: Obj) -> Obj:
    """A stored events.k8s.io/v1 Event as a core v1 Event, encoded as its type encodes it."""
    out = _renamed(event, STORED_TO_CORE)
    out["apiVersion"], out["kind"] = CORE
    return builtin.encoded(out)


def to_stored(event: Obj) -> Obj:
    """A core v1 Event as the events.k8s.io/v1 Event to store."""
    out = _renamed(event, CORE_TO_STORED)
    out["apiVersion"], out["kind"] = STORED
    return out


def _renamed(event: Obj, names: dict[str, str]) -> Obj:
    out: dict[str, Any] = {}
    for key, value in event.items():
        out[names.get(key, key)] = value
    return out
