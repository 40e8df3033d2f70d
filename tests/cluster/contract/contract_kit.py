"""Objects and CRDs the contract suite writes: a namespaced Widget with a status subresource and a
schema, a cluster-scoped Gadget without one, and builders for them and for core kinds."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from engine.clock import parse_time
from engine.cluster.api import Cluster, NotFound

Obj = dict[str, Any]
Settled = Callable[[str, Callable[[], bool], str], None]
"""``settled(difference, check, what)`` (the conftest's fixture): ``check()`` holds at once where the
implementation keeps the named difference, within a bounded wait elsewhere."""

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
WIDGET = "example.com/v1"
GADGET = "example.com/v1"


class Clock:
    """A clock that only moves when told, so timestamps are predictable."""

    def __init__(self, moment: dt.datetime = START) -> None:
        self.moment = moment

    def now(self) -> dt.datetime:
        return self.moment

    def advance(self, seconds: float) -> None:
        self.moment += dt.timedelta(seconds=seconds)

    @contextlib.contextmanager
    def span(self) -> Iterator[Span]:
        """The time a block of calls took: a timestamp the server set in it lies inside."""
        span = Span(self.now())
        yield span
        span.end = self.now()


class RealClock(Clock):
    """The wall clock a real server reads; an advance waits a second, enough for timestamps (whole seconds)
    taken before and after it to differ."""

    def __init__(self) -> None:
        super().__init__(dt.datetime.now(dt.UTC))

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    def advance(self, seconds: float) -> None:
        time.sleep(min(seconds, 1.0))


STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@dataclass
class Span:
    """From ``start`` to ``end`` on a test's clock: on the fake clock one moment, on a real server's a while."""

    start: dt.datetime
    end: dt.datetime | None = None

    def holds(self, stamp: str) -> bool:
        """Whether a server timestamp (RFC 3339, whole seconds, Z) was taken within the span."""
        assert STAMP.match(stamp), f"not a whole-second UTC timestamp: {stamp!r}"
        assert self.end is not None, "the span has not ended"
        return bool(self.start.replace(microsecond=0) <= parse_time(stamp) <= self.end)


WIDGET_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                     "priority": 1},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                                "properties": {
                                    "size": {"type": "integer", "minimum": 0},
                                    "mode": {"type": "string", "enum": ["fast", "slow"]},
                                    "tags": {"type": "array", "items": {"type": "string"}},
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}

GADGET_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Cluster",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


def widget(name: str, namespace: str = "default", *, spec: Obj | None = None, status: Obj | None = None,
           **metadata: Any) -> Obj:
    """A Widget body; extra keywords go into metadata (labels, finalizers, ownerReferences...)."""
    obj: Obj = {"apiVersion": WIDGET, "kind": "Widget", "metadata": {"name": name, "namespace": namespace, **metadata},
                "spec": dict(spec if spec is not None else {"size": 1})}
    if status is not None:
        obj["status"] = status
    return obj


def gadget(name: str, **fields: Any) -> Obj:
    """A cluster-scoped Gadget body; keywords become top-level fields."""
    return {"apiVersion": GADGET, "kind": "Gadget", "metadata": {"name": name}, **fields}


def secret(name: str, namespace: str = "default", data: dict[str, str] | None = None, **metadata: Any) -> Obj:
    """A core Secret body with base64 data."""
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace, **metadata},
            "type": "Opaque", "data": dict(data or {"k": "dg=="})}


def owner_ref(owner: Obj) -> Obj:
    """An ownerReference naming a stored object."""
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"]}


def exists(cluster: Cluster, api_version: str, kind: str, namespace: str | None, name: str) -> bool:
    """Whether the object reads back (NotFound: it does not)."""
    try:
        cluster.get(api_version, kind, namespace, name)
    except NotFound:
        return False
    return True


def eventually(check: Callable[[], bool], what: str, patience: float) -> None:
    """Wait until ``check()`` holds, polling; fail naming ``what`` after ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {patience:.0f} s: {what}")
        time.sleep(0.05)


def rv(obj: Obj) -> int:
    """An object's resourceVersion as a number (the contract only promises it grows)."""
    return int(obj["metadata"]["resourceVersion"])
