"""What the runtime's handling of one watch event costs stays bounded (issue 11: CPU per order), counted in Python
calls with cProfile (load-independent, not timed): the informer's own work after the event is decoded (the
cluster's cache, the read barrier, the echo ledger, the mapping and the queue), for a child's status change, an
echo of a pass's own write, and an event held for the order's running pass."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_kit import API, OWNER_LABEL, obj, request
from test_echoes import passing, run_pass
from test_echoes_kube import built, pumped

from engine.cluster.api import Obj
from engine.cluster.kube import KubeCluster
from engine.runtime.queue import WorkQueue
from engine.runtime.watches import Informer, Sources
from offline.cluster.memory import MemoryCluster
from tests.call_count import calls

EVENTS = 40


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[MemoryCluster, KubeCluster, Sources, WorkQueue]]:
    yield from built(tmp_path)


def gadget_informer(sources: Sources) -> Informer:
    return next(i for i in sources.informers() if i.kind == "Gadget")


def status_events(gadget: Obj, first_version: int) -> list[dict[str, Any]]:
    """MODIFIED events of ``gadget``, each a status change with the next resourceVersion."""
    return [{"type": "MODIFIED",
             "object": {**gadget, "metadata": {**gadget["metadata"], "resourceVersion": str(first_version + i)},
                        "status": {"observedGeneration": i, "phase": "Ready" if i % 2 else "Pending"}}}
            for i in range(EVENTS)]


CALLS_PER_EVENT = 95
"""Python calls the runtime's informer spends on one MODIFIED event of a labelled child that wakes its order
(the cluster's cache, the read barrier, the ledger, the mapping, the queue): 124 while the informer, the cache and
the ledger each read the event's key and resourceVersion again, 109 after (107.8 measured); 100.4 once a Request
was a named tuple (hashed and compared in C), 94.4 once the store's lock was taken without its Condition's
Python calls, 90.4 once the store parsed its position inline and checked label values by ``map``."""

CALLS_PER_ECHO = 88
"""The same for an event that echoes a pass's own write (it wakes nothing): 113 before, 98 after, 94, 88 and 84
after the same three changes."""

CALLS_PER_HELD = 98
"""The same for an event held for the order's running pass: 128 before, 113 after, 103.1, 97.1 and 93.1 after the
same three changes."""


def test_a_watch_event_costs_the_runtime_a_bounded_number_of_calls(world: Any) -> None:
    memory, kube, sources, queue = world
    gadget = memory.create(obj("Gadget", "g", labels={OWNER_LABEL: "ns.a"}, spec={"size": 1}))
    pumped(sources, queue)
    informer = gadget_informer(sources)
    version = int(memory.get(API, "Gadget", "ns", "g")["metadata"]["resourceVersion"]) + 1

    events = status_events(gadget, version)
    per_event = calls(lambda: [informer._event(e) for e in events]) / EVENTS
    assert kube.get(API, "Gadget", "ns", "g")["status"] == events[-1]["object"]["status"]
    assert pumped(sources, queue) == ["a"], "each event woke the order (queued once)"

    echoes = status_events(gadget, version + EVENTS)
    ledger = sources.echoes
    assert ledger is not None
    per_echo = 0.0
    for echo in echoes:
        with passing(request("a")):
            ticket = ledger.sending("", API, "Gadget", "ns", "g")
        assert ticket is not None
        ledger.answered(ticket, echo["object"])
        per_echo += calls(lambda echo=echo: informer._event(echo)) / EVENTS  # type: ignore[misc]
    assert pumped(sources, queue) == [], "an echo of the pass's own write wakes nothing"

    held = status_events(gadget, version + 2 * EVENTS)
    queue.add(request("a"))
    with run_pass(queue, sources, request("a")):
        per_held = calls(lambda: [informer._event(e) for e in held]) / EVENTS
    assert pumped(sources, queue) == ["a"], "the pass never read the gadget: the held events wake it after the pass"

    assert per_event <= CALLS_PER_EVENT, per_event
    assert per_echo <= CALLS_PER_ECHO, per_echo
    assert per_held <= CALLS_PER_HELD, per_held
