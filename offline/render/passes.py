"""Run an order's passes offline, in a scenario world, and keep what they wrote and why they stopped.

The world is the one `engine test` builds (in-memory clusters with the CRDs, a simulated clock
that does not move, no external controllers): the passes see exactly the objects given. A pass
that only installed the finalizer is followed by the next one, as the runtime does a second
later, unless a number of passes is asked for.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from engine.cluster.api import Call, NotFound, Obj
from engine.outcome import Request, Result
from engine.rules.model import CompiledKind
from offline.render.inputs import Inputs
from offline.scenario import model as m
from offline.scenario.resolve import resolve
from offline.scenario.world import Setup, World, open_world

__all__ = ["Rendered", "run_passes"]

WRITE_VERBS = frozenset({"create", "update", "patch", "apply", "delete"})
MAX_AUTOMATIC_PASSES = 2
"""The finalizer pass and the one after it."""


@dataclass
class Rendered:
    """What the passes left: the order before and after, the objects written, the last pass's result."""

    kind: CompiledKind
    request: Request
    order_before: Obj
    order_after: Obj | None
    """None: the order is gone (a teardown released its finalizer)."""
    result: Result
    passes: int
    finalizer_installed: bool
    """The last pass only installed the finalizer (``--passes`` stopped the render there)."""
    writes: list[tuple[int, Call]] = field(default_factory=list)
    """(pass number from 1, call) of every write that went through."""
    written: list[tuple[str, Obj]] = field(default_factory=list)
    """(cluster, object) of every object written and still there, in the order of its first write, the order aside."""
    redact: Any = None
    """Replaces every secret value the world knows in a text (``LeakWatch.redact``)."""
    logs: list[str] = field(default_factory=list)


def run_passes(inputs: Inputs, setup: Setup, *, now: dt.datetime, clusters: tuple[str, ...],
               passes: int | None) -> Rendered:
    """Run the passes (``passes`` of them, or the automatic number) and collect the rendering."""
    seeds = (*inputs.world, inputs.order)
    scenario = m.Scenario(path=inputs.order.pos.file, title="engine render", pos=inputs.order.pos, rules=None,
                          clusters=clusters, unserved=(), now=now, objects=seeds, steps=())
    resolved = resolve(scenario, setup.catalog)
    kind: CompiledKind = resolved.catalog[inputs.kind_key]
    meta = inputs.order.obj["metadata"]
    request = Request(inputs.kind_key, inputs.order.cluster, str(meta["namespace"]), str(meta["name"]))
    with open_world(scenario, resolved, setup) as world:
        before = _read(world, request, kind)
        assert before is not None
        calls: list[tuple[int, Call]] = []
        count, installed, result = 0, False, Result()
        while passes is None or count < passes:
            was = _read(world, request, kind)
            if was is None:
                break
            world.take_calls()
            own: list[Call] = []

            def pass_done(own: list[Call] = own) -> None:
                own.extend(world.take_calls())

            result = world.manager.reconcile(request, pass_done=pass_done)
            world.take_calls()
            count += 1
            calls.extend((count, call) for call in own)
            installed = _installed_finalizer(kind, was, _read(world, request, kind))
            if passes is None and (not installed or count >= MAX_AUTOMATIC_PASSES):
                break
        world.scan()
        writes = [(n, c) for n, c in calls if c.verb in WRITE_VERBS and not c.failed]
        return Rendered(kind, request, before, _read(world, request, kind), result, count, installed, writes,
                        _written(world, writes, request), world.leaks.redact, world.leaks.logs.texts())


def _read(world: World, request: Request, kind: CompiledKind) -> Obj | None:
    try:
        return world.memory[request.cluster].get(kind.api_version, kind.kind, request.namespace, request.name)
    except NotFound:
        return None


def _installed_finalizer(kind: CompiledKind, before: Obj, after: Obj | None) -> bool:
    def has(obj: Obj | None) -> bool:
        return obj is not None and kind.finalizer in (obj.get("metadata", {}).get("finalizers") or [])

    deleting = bool(before.get("metadata", {}).get("deletionTimestamp"))
    return bool(kind.finalizer) and not deleting and not has(before) and has(after)


def _written(world: World, writes: list[tuple[int, Call]], request: Request) -> list[tuple[str, Obj]]:
    seen: dict[tuple[str, str, str, str, str], None] = {}
    for _, call in writes:
        if not call.name or call.verb == "delete":
            continue
        key = (call.cluster, call.api_version, call.kind, call.namespace or "", call.name)
        if key[1:] != (request.kind.rpartition("/")[0], request.kind.rpartition("/")[2], request.namespace,
                       request.name) or call.cluster != request.cluster:
            seen.setdefault(key, None)
    out: list[tuple[str, Obj]] = []
    for cluster, api_version, kind, namespace, name in seen:
        try:
            out.append((cluster, world.memory[cluster].get(api_version, kind, namespace or None, name)))
        except (NotFound, KeyError):
            continue  # written, then deleted by a later action or pass: the writes list still names it
    return out
