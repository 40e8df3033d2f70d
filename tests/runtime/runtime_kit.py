"""Small fakes for runtime tests: kinds and watches that satisfy the runtime's protocols, a scripted pass."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from engine.clock import Clock
from engine.cluster.api import ApiError, Obj, WatchEvent
from engine.cluster.registry import ClusterSet
from engine.expr.errors import ExprError
from engine.outcome import Request, Result
from engine.runtime.kinds import Index, Log
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
API = "example.io/v1"
ORDER = f"{API}/Widget"
"""The order kind's key."""
OWNER_LABEL = "example.io/order"
"""Children carry ``<namespace>.<name>`` of their order here."""


def obj(kind: str, name: str, namespace: str | None = "ns", **fields: Any) -> Obj:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    labels = fields.pop("labels", None)
    if labels:
        meta["labels"] = labels
    return {"apiVersion": API, "kind": kind, "metadata": meta, **fields}


def request(name: str, namespace: str = "ns", cluster: str = "") -> Request:
    return Request(ORDER, cluster, namespace, name)


@dataclass(frozen=True)
class FakeWatch:
    """A compiled watch: maps an order to itself, a child to its order by label, or a hub through the index."""

    kind: str
    mapping: str = "order"
    clusters: str = "all"
    order_kind: str = ORDER
    api_version: str = API
    changed: Callable[[Obj], Any] | None = None
    """Updates pass only when this part of the object changed (None: every update passes)."""
    seen: list[tuple[Obj | None, Obj | None]] = field(default_factory=list, compare=False)

    @property
    def is_order(self) -> bool:
        return self.mapping == "order"

    @property
    def uses_index(self) -> bool:
        return self.mapping == "index"

    @property
    def origin(self) -> str:
        return f"rules/widget.yaml:9:3 ({self.kind} watch)"

    def passes(self, old: Obj | None, new: Obj | None) -> bool:
        self.seen.append((old, new))
        if old is None or new is None or self.changed is None:
            return True
        return bool(self.changed(old) != self.changed(new))

    def maps_alike(self, old: Obj, new: Obj) -> bool:
        return False

    def requests(self, obj: Obj, cluster: str, index: Index) -> list[Request]:
        meta = obj["metadata"]
        if self.mapping == "order":
            return [Request(self.order_kind, cluster, meta.get("namespace", ""), meta["name"])]
        if self.mapping == "labels":
            owner = (meta.get("labels") or {}).get(OWNER_LABEL, "")
            if "." not in owner:
                return []
            namespace, name = owner.split(".", 1)
            return [Request(self.order_kind, cluster, namespace, name)]
        return [Request(self.order_kind, *member) for member in index(meta["name"])]


@dataclass(frozen=True)
class FakeKind:
    """An order kind whose index key is ``spec.hub``."""

    watches: tuple[FakeWatch, ...]
    api_version: str = API
    kind: str = "Widget"
    label_scopes: tuple[tuple[str, str, str], ...] = ()
    """(apiVersion, kind, label key): kinds watched only when an object carries the label."""
    quiet_names: tuple[str, ...] = ()
    """Children whose removal after the order's own delete wakes nothing (``children.quietRemoval``)."""

    @property
    def key(self) -> str:
        return f"{self.api_version}/{self.kind}"

    @property
    def index_origin(self) -> str:
        return "rules/widget.yaml:7:11"

    def index_alike(self, old: Obj, new: Obj) -> bool:
        return False

    def quiet_removal(self, child: Obj) -> bool:
        return str(child["metadata"]["name"]) in self.quiet_names

    def index_keys(self, order: Obj, cluster: str) -> list[str]:
        """spec.hubs (a list of keys) or spec.hub; a hub that is a list fails as a compiled expression fails
        on data of the wrong type."""
        spec = order.get("spec") or {}
        if isinstance(spec.get("hubs"), list):
            return [h for h in spec["hubs"] if isinstance(h, str)]
        hub = spec.get("hub")
        if isinstance(hub, list):
            raise ExprError("spec.hub", "expected a string, got array")
        return [hub] if isinstance(hub, str) and hub else []


def widget_kind(*extra: FakeWatch) -> FakeKind:
    """Widgets (orders) watched on every cluster, plus the given watches."""
    return FakeKind(watches=(FakeWatch("Widget"), *extra))


Script = Callable[[Request, int], Result]
"""What the fake pass answers for a request on its n-th run (1-based)."""


class FakePass:
    """A run_pass stand-in: records each pass (request and clock time) and answers from a script."""

    def __init__(self, script: Script | None = None, *, delay: float = 0.0) -> None:
        self.script = script
        self.delay = delay
        self.runs: list[tuple[Request, dt.datetime]] = []
        self.clusters: list[str] = []
        self._lock = threading.Lock()
        self.running: dict[Request, int] = {}
        self.max_running: dict[Request, int] = {}
        self.changed = threading.Event()

    def __call__(self, kind: FakeKind, req: Request, *, clusters: ClusterSet, clock: Clock, log: Log) -> Result:
        with self._lock:
            self.runs.append((req, clock.now()))
            count = sum(1 for r, _ in self.runs if r == req)
            self.running[req] = self.running.get(req, 0) + 1
            self.max_running[req] = max(self.max_running.get(req, 0), self.running[req])
        try:
            if self.delay:
                threading.Event().wait(self.delay)
            return self.script(req, count) if self.script else Result()
        finally:
            with self._lock:
                self.running[req] -= 1
            self.changed.set()

    def names(self) -> list[str]:
        return [r.name for r, _ in self.runs]


def memory(name: str = "", clock: Clock | None = None) -> MemoryCluster:
    return MemoryCluster(name, clock=clock or SimulatedClock(START), permissive=True)


class FailingWatch:
    """Wraps a cluster so its next ``times`` watch calls raise ``error``; everything else passes through."""

    def __init__(self, inner: MemoryCluster, error: ApiError, times: int = 1) -> None:
        self._inner = inner
        self._error = error
        self.times = times
        self.name = inner.name

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[WatchEvent]:
        if self.times > 0:
            self.times -= 1
            raise self._error
        return self._inner.watch(*args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)
