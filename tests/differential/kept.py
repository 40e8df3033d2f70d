"""The differences between the real API server and the emulators kept on purpose, each with its reason and a case
that shows it. The differential runner does not count a difference one of these covers as a divergence, and
``test_kept`` checks that each one still happens (a fixed one must leave this list)."""

from __future__ import annotations

import json

from tests.differential.harness import COMPACT, Call, Case, Kept, call
from tests.differential.objects import CM, DEPLOYMENTS, EVENTS, configmap, minimal_deployment

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


def _pod_template_warnings(request: Call, path: str) -> bool:
    return "/deployments" in request.path and path.startswith("warnings")


UNVALIDATED = "kept-unvalidated"
"""A label that marks a built-in object the emulators accept and the real server refuses on purpose."""


def _unvalidated(request: Call, path: str) -> bool:
    return UNVALIDATED in json.dumps(request.body)


def _invalid_deployment() -> dict[str, object]:
    made = minimal_deployment("bad")
    made["metadata"]["labels"] = {UNVALIDATED: "yes"}
    made["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    return made


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
    Kept("no warnings about pod templates",
         "the API server warns about questionable pod templates (duplicate ports or port names, deprecated fields); "
         "the emulators store the Deployment alike but do not warn: those checks are many and kubelet's business",
         _pod_template_warnings,
         Case("a pod template with a port name used twice", [call("POST", DEPLOYMENTS, {
             **minimal_deployment("w"), "spec": {**minimal_deployment("w")["spec"], "template": {
                 "metadata": {"labels": {"app": "w"}}, "spec": {"containers": [
                     {"name": "a", "image": "x", "ports": [{"containerPort": 80, "name": "http"}]},
                     {"name": "b", "image": "x", "ports": [{"containerPort": 81, "name": "http"}]}]}}}})])),
    Kept("built-in kinds' specs are not validated",
         "the emulators check a built-in object's metadata, but not its spec (a Deployment whose selector does not "
         "select its template, a container without image...): the API server's validation of workloads is "
         "thousands of lines, the project writes built-in objects it renders from reviewed templates, and a real "
         "server judges them in the real-server tier",
         _unvalidated,
         Case("a Deployment whose selector misses its template", [call("POST", DEPLOYMENTS, _invalid_deployment())])),
]
