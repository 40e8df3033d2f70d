"""The world a scenario runs in: clusters, clock, metrics, the operator, and what it leaves behind.

Each declared cluster is an in-memory API server (permissive: kinds without a CRD behave as
custom resources with a status subresource). The operator reaches each through a
FaultyCluster that records and fails its calls; the scenario's own steps and assertions use
the memory cluster directly, so ``fail`` never hits them and ``calls`` counts only the
operator's.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from engine.cluster.api import MANAGEMENT_CLUSTER, ApiError, Call, Obj
from engine.cluster.registry import ClusterSet
from engine.expr.functions import SecretSink, use_sink
from engine.metrics import Metrics
from engine.outcome import Result
from engine.runtime.manager import Manager
from offline.clock import SimulatedClock
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster
from offline.scenario import model as m
from offline.scenario.leaks import LeakWatch, LogCapture
from offline.scenario.model import ScenarioError
from offline.scenario.resolve import CORE_KINDS, Resolved

__all__ = ["Setup", "World", "open_world"]

ENGINE_LOGGER = "engine"


@dataclass(frozen=True)
class Setup:
    """What every scenario of a run shares: the compiled rules and the CRDs to install."""

    catalog: Mapping[str, Any]
    crds: tuple[Obj, ...] = ()
    run_pass: Any = None
    """None: the engine's pass; tests inject a fake (``engine.runtime.kinds.RunPass``)."""
    broken: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Rule files that did not compile (by rule-file name) -> their errors: left out of ``catalog``."""


@dataclass
class World:
    """One scenario's world while it runs."""

    scenario: m.Scenario
    resolved: Resolved
    clock: SimulatedClock
    registry: CollectorRegistry
    memory: dict[str, MemoryCluster]
    faulty: dict[str, FaultyCluster]
    manager: Manager[Any]
    leaks: LeakWatch
    last_result: Result | None = None
    """The Result of the last ``reconcile`` step."""
    last_calls: list[Call] | None = None
    """The operator's calls during the last ``reconcile`` step."""
    kinds: set[tuple[str, str]] = field(default_factory=set)
    """Every (apiVersion, kind) the scenario or the operator touched: what the leak scan reads."""

    def api_version(self, ref: m.Ref) -> str:
        return self.resolved.api_version(ref)

    def cluster(self, name: str) -> MemoryCluster:
        return self.memory[name]

    def take_calls(self) -> list[Call]:
        """The operator's calls since the last take, now forgotten (their kinds are remembered)."""
        calls = [call for faulty in self.faulty.values() for call in faulty.calls]
        for faulty in self.faulty.values():
            faulty.calls.clear()
        self.kinds.update((c.api_version, c.kind) for c in calls if c.api_version and c.kind)
        return calls

    def scan(self) -> None:
        """Feed the leak watch with what changed since the last scan."""
        self.take_calls()
        self.leaks.scan(sorted(self.memory.items()), self.kinds)


@contextlib.contextmanager
def open_world(scenario: m.Scenario, resolved: Resolved, setup: Setup) -> Iterator[World]:
    """Build the world, start the operator (every order present is queued), and clean up after."""
    logs = LogCapture()
    engine_log = logging.getLogger(ENGINE_LOGGER)
    previous_level = engine_log.level
    engine_log.addHandler(logs)
    engine_log.setLevel(logging.DEBUG)
    sink = SecretSink()
    try:
        with use_sink(sink):
            world = _build(scenario, resolved, setup, LeakWatch(sink, logs))
            world.manager.start()
            world.scan()
            yield world
    finally:
        engine_log.removeHandler(logs)
        engine_log.setLevel(previous_level)


def _seeded_uids(cluster: str) -> Callable[[], str]:
    """Uids that are the same on every run of a file: the contract wants the same passes every time."""
    rng = random.Random(f"uids/{cluster}")
    return lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _build(scenario: m.Scenario, resolved: Resolved, setup: Setup, leaks: LeakWatch) -> World:
    clock = SimulatedClock(scenario.now)
    names = [MANAGEMENT_CLUSTER, *scenario.clusters]
    memory = {name: MemoryCluster(name, clock=clock, permissive=True, uids=_seeded_uids(name)) for name in names}
    for cluster in memory.values():
        for crd in setup.crds:
            cluster.create(crd)
    for unserved in scenario.unserved:
        memory[unserved.cluster].unserve(unserved.api_version, unserved.kind)
    for seed in scenario.objects:
        try:
            memory[seed.cluster].seed(_with_uid(seed))
        except ApiError as exc:
            raise ScenarioError(seed.pos, f"cannot store this object: {exc}") from None
    faulty = {name: FaultyCluster(cluster, cluster_name=name) for name, cluster in memory.items()}
    clusters = ClusterSet(faulty[MANAGEMENT_CLUSTER])
    for name in scenario.clusters:
        clusters.engage(name, faulty[name])
    registry = CollectorRegistry()
    manager: Manager[Any] = Manager(
        resolved.catalog, clusters, clock=clock, metrics=Metrics(registry),
        log=logging.getLogger(f"{ENGINE_LOGGER}.runtime"), run_pass=setup.run_pass,
    )
    world = World(scenario, resolved, clock, registry, memory, faulty, manager, leaks)
    world.kinds.update(_known_kinds(scenario, resolved))
    world.kinds.update(kind for crd in setup.crds for kind in crd_kinds(crd))
    return world


def _with_uid(seed: m.Seed) -> Obj:
    """The object with a uid derived from where it is seeded, when it brings none: the same file
    gives the same uids every run, so nothing that hashes a uid makes a scenario flaky."""
    meta = seed.obj.get("metadata") or {}
    if meta.get("uid"):
        return seed.obj
    key = "/".join([seed.cluster, str(seed.obj.get("apiVersion")), str(seed.obj.get("kind")),
                    str(meta.get("namespace") or ""), str(meta.get("name"))])
    uid = str(uuid.UUID(bytes=hashlib.sha256(key.encode()).digest()[:16], version=4))
    return {**seed.obj, "metadata": {**meta, "uid": uid}}


def crd_kinds(crd: Obj) -> list[tuple[str, str]]:
    """The (apiVersion, kind) pairs a CRD serves."""
    spec = crd.get("spec") or {}
    group, kind = spec.get("group", ""), (spec.get("names") or {}).get("kind", "")
    return [(f"{group}/{v['name']}", kind) for v in spec.get("versions") or () if v.get("served", True)]


def _known_kinds(scenario: m.Scenario, resolved: Resolved) -> set[tuple[str, str]]:
    kinds = {(api_version, kind) for kind, api_version in CORE_KINDS.items()}
    for compiled in resolved.catalog.values():
        kinds.add((compiled.api_version, compiled.kind))
        kinds.update((w.api_version, w.kind) for w in getattr(compiled, "watches", ()))
    kinds.update((str(s.obj["apiVersion"]), str(s.obj["kind"])) for s in scenario.objects)
    for step in scenario.steps:
        kinds.update((resolved.api_version(ref), ref.kind) for ref in step.refs())
    return kinds
