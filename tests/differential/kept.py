"""The differences between the real API server and the emulators kept on purpose, each with its reason and a case
that shows it. The differential runner does not count a difference one of these covers as a divergence, and
``test_kept`` checks that each one still happens (a fixed one must leave this list)."""

from __future__ import annotations

from tests.differential.harness import Call, Case, Kept, call
from tests.differential.objects import EVENTS

CORE_EVENT = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "{ns}"},
              "reason": "Started", "message": "started", "type": "Normal", "count": 1,
              "source": {"component": "kubelet"}}


def _core_event_fields(request: Call, path: str) -> bool:
    return request.path.startswith("/api/v1/") and "/events" in request.path and ".managedFields" in path


KEPT: list[Kept] = [
    Kept("core v1 Events are owned as events.k8s.io/v1 ones",
         "the emulator keeps Events in one events.k8s.io/v1 store and serves core v1 Events as a view of it (as the "
         "API server keeps one storage for both); a core v1 write's managedFields are recorded against the stored "
         "events.k8s.io/v1 fields (note, regarding, deprecated*) rather than the core ones. Nothing in the project "
         "reads an Event's managedFields, and converting field sets between versions is the API server's "
         "structured-merge-diff machinery",
         _core_event_fields,
         Case("a core v1 Event's managedFields", [call("POST", EVENTS, CORE_EVENT)])),
]
