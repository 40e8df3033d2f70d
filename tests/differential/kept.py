"""The differences between the real API server and the emulators kept on purpose, each with its reason and a case
that shows it. The differential runner does not count a difference one of these covers as a divergence, and
``test_kept`` checks that each one still happens (a fixed one must leave this list)."""

from __future__ import annotations

from tests.differential.harness import COMPACT, Call, Case, Kept, call
from tests.differential.objects import CM, EVENTS, configmap

CORE_EVENT = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "{ns}"},
              "reason": "Started", "message": "started", "type": "Normal", "count": 1,
              "source": {"component": "kubelet"}}


def _core_event_fields(request: Call, path: str) -> bool:
    return request.path.startswith("/api/v1/") and "/events" in request.path and ".managedFields" in path


def _gone_wording(request: Call, path: str) -> bool:
    return request.is_watch and "resourceVersion" in dict(request.query) and path == "events[0].object.message"


def _exact_list(request: Call, path: str) -> bool:
    return request.method == "GET" and dict(request.query).get("resourceVersionMatch") == "Exact" and (
        path.startswith("body.items"))


KEPT: list[Kept] = [
    Kept("core v1 Events are owned as events.k8s.io/v1 ones",
         "the emulator keeps Events in one events.k8s.io/v1 store and serves core v1 Events as a view of it (as the "
         "API server keeps one storage for both); a core v1 write's managedFields are recorded against the stored "
         "events.k8s.io/v1 fields (note, regarding, deprecated*) rather than the core ones. Nothing in the project "
         "reads an Event's managedFields, and converting field sets between versions is the API server's "
         "structured-merge-diff machinery",
         _core_event_fields,
         Case("a core v1 Event's managedFields", [call("POST", EVENTS, CORE_EVENT)])),
    Kept("a watch's 410 is worded as the watch cache words it",
         "the emulators answer a watch from a compacted resourceVersion as the API server's watch cache does "
         "(\"too old resource version: X (Y)\"), which is what a default server says; the real server of the "
         "compaction test runs without its watch cache (the only way to make a compaction reach a watch within a "
         "test), and there etcd's storage words it \"The resourceVersion for the provided watch is too old.\"",
         _gone_wording,
         Case("a watch from before a compaction", [
             call("POST", CM, configmap("a"), name="a"), call("PUT", CM + "/a", configmap("a", k="v")),
             call("POST", CM, configmap("b")), Call(COMPACT, ""),
             call("GET", CM, watch=1, resourceVersion="$rv(a)", timeoutSeconds=2)]),
         where="compaction"),
    Kept("a list at an exact past resourceVersion shows the present",
         "the emulators keep no history of objects, only an event log for watches: a list with "
         "resourceVersionMatch=Exact answers the objects as they are now, where the API server answers them as "
         "they were (from its watch cache). Nothing in the project lists at a past resourceVersion",
         _exact_list,
         Case("a list at an exact past resourceVersion", [
             call("POST", CM, configmap("a", k="old"), name="a"), call("PUT", CM + "/a", configmap("a", k="new")),
             call("GET", CM, resourceVersion="$rv(a)", resourceVersionMatch="Exact")])),
]
