"""Written cases: strategic merge patch (merge keys, ``$patch``, ``$setElementOrder``, ``$retainKeys``,
``$deleteFromPrimitiveList``), JSON merge patch and JSON patch, on built-in kinds, on all three legs."""

from __future__ import annotations

import pytest

from tests.differential.harness import JSON_PATCH, MERGE, STRATEGIC, Case, Runner, call, report
from tests.differential.objects import CM, DEPLOYMENTS, configmap, deployment, minimal_deployment

OP = DEPLOYMENTS + "/op"


def smp(path: str, body: object, **query: str) -> object:
    return call("PATCH", path, body, content_type=STRATEGIC, **query)


CONTAINER = "spec.template.spec.containers"

CASES = [
    Case("a Deployment is stored with the server's defaults", [
        call("POST", DEPLOYMENTS, deployment()),
        call("POST", DEPLOYMENTS, minimal_deployment("m", "nginx:1.27")),
        call("POST", DEPLOYMENTS, minimal_deployment("latest", "example.com:5000/x")),
        call("GET", DEPLOYMENTS),
    ]),
    Case("quantities are stored in canonical form", [
        call("POST", DEPLOYMENTS, deployment("q", template={"metadata": {"labels": {"app.kubernetes.io/name": "op"}},
                                                            "spec": {"containers": [{"name": "c", "image": "x:1",
                                                                                     "resources": {
            "requests": {"cpu": "0.5", "memory": "1024Mi", "ephemeral-storage": "1e3"},
            "limits": {"cpu": "1500m", "memory": "2G"}}}]}})),
    ]),
    Case("strategic merge: containers and volumes merge by name", [
        call("POST", DEPLOYMENTS, deployment()),
        smp(OP, {"spec": {"template": {"spec": {
            "containers": [{"name": "sidecar", "image": "busybox"}, {"name": "operator", "image": "c5c3/x:2"}],
            "volumes": [{"name": "extra", "emptyDir": {}}]}}}}),
        smp(OP, {"spec": {"template": {"spec": {"containers": [
            {"name": "operator", "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "3"}],
             "ports": [{"containerPort": 9090, "name": "other"}]}]}}}}),
    ]),
    Case("strategic merge: $setElementOrder, as kubectl apply sends it", [
        call("POST", DEPLOYMENTS, deployment()),
        smp(OP, {"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "operator"}],
            "$setElementOrder/volumes": [{"name": "tmp"}, {"name": "rules"}, {"name": "conf"}, {"name": "creds"}],
            "containers": [{"name": "operator", "$setElementOrder/volumeMounts": [
                {"mountPath": "/tmp"}, {"mountPath": "/etc/c5c3"}],
                "volumeMounts": [{"mountPath": "/etc/c5c3", "name": "rules", "readOnly": True}],
                "args": ["run", "--leader-elect", "--rules=/etc/c5c3/rules"]}],
            "volumes": [{"name": "rules", "configMap": {"name": "c5c3-rules"}}]}}}}),
        smp(OP, {"spec": {"template": {"spec": {"$setElementOrder/volumes": [
            {"name": "creds"}, {"name": "tmp"}]}}}}),
        smp(OP, {"spec": {"template": {"spec": {"$setElementOrder/volumes": [{"name": "nope"}],
                                                 "volumes": [{"name": "tmp"}, {"name": "x", "emptyDir": {}}]}}}}),
    ]),
    Case("strategic merge: $patch delete and replace, in lists and maps", [
        call("POST", DEPLOYMENTS, deployment()),
        smp(OP, {"spec": {"template": {"spec": {"volumes": [{"name": "conf", "$patch": "delete"}]}}}}),
        smp(OP, {"spec": {"template": {"spec": {"containers": [
            {"name": "operator", "env": [{"$patch": "replace"}, {"name": "ONLY", "value": "x"}]}]}}}}),
        smp(OP, {"spec": {"template": {"spec": {"securityContext": {"$patch": "replace", "runAsUser": 1000}}}}}),
        smp(OP, {"spec": {"template": {"spec": {"containers": [
            {"name": "operator", "resources": {"$patch": "delete"}}]}}}}),
        smp(OP, {"spec": {"template": {"spec": {"volumes": [{"$patch": "merge"}]}}}}),
        smp(OP, {"spec": {"template": {"spec": {"volumes": [{"$patch": "bogus", "name": "x"}]}}}}),
        smp(OP, {"spec": {"template": {"spec": {"volumes": [{"$patch": "delete"}]}}}}),
    ]),
    Case("strategic merge: $retainKeys on the strategy, nulls and non-merge lists", [
        call("POST", DEPLOYMENTS, deployment()),
        smp(OP, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        smp(OP, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": None}}}),
        smp(OP, {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 1}}}}),
        smp(OP, {"spec": {"template": {"spec": {"containers": [
            {"name": "operator", "args": ["only"], "livenessProbe": None}]}}}}),
        smp(OP, {"metadata": {"labels": {"extra": "x", "app.kubernetes.io/name": None}}}),
    ]),
    Case("strategic merge: finalizers merge, $deleteFromPrimitiveList removes", [
        call("POST", CM, {**configmap("f", k="v"), "metadata": {"name": "f", "finalizers": ["a.io/x", "b.io/y"]}}),
        smp(CM + "/f", {"metadata": {"finalizers": ["c.io/z", "a.io/x"]}}),
        smp(CM + "/f", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.io/x", "nope.io/n"]}}),
        smp(CM + "/f", {"metadata": {"$setElementOrder/finalizers": ["c.io/z", "b.io/y"],
                                     "finalizers": ["c.io/z"]}}),
        smp(CM + "/f", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b.io/y", "c.io/z"]}}),
        smp(CM + "/f", {"data": {"k": None, "n": "1"}}),
    ]),
    Case("strategic merge: malformed directives", [
        call("POST", DEPLOYMENTS, deployment()),
        smp(OP, {"spec": {"template": {"spec": {"$setElementOrder/volumes": "x"}}}}),
        smp(OP, {"spec": {"strategy": {"$retainKeys": "type"}}}),
        smp(OP, {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
        smp(OP, {"spec": {"template": {"spec": {"containers": [{"image": "no-name"}]}}}}),
        smp(OP, {"metadata": {"$deleteFromPrimitiveList": ["x"]}}),
        smp(OP, [{"op": "add"}]),
    ]),
    Case("JSON merge patch replaces lists", [
        call("POST", DEPLOYMENTS, deployment()),
        call("PATCH", OP, {"spec": {"template": {"spec": {"volumes": [{"name": "tmp", "emptyDir": {}}]}}}},
             content_type=MERGE),
        call("PATCH", OP, {"metadata": {"labels": None}, "spec": {"replicas": 5}}, content_type=MERGE),
        call("PATCH", OP, {"spec": {"template": {"spec": {"containers": [{"name": "x", "image": "y:1"}]}}}},
             content_type=MERGE),
        call("PATCH", OP, ["x"], content_type=MERGE),
    ]),
    Case("JSON patch: every operation, and the failures", [
        call("POST", CM, configmap("j", k="v", l="w")),
        call("PATCH", CM + "/j", [{"op": "add", "path": "/data/n", "value": "1"},
                                  {"op": "replace", "path": "/data/k", "value": "2"},
                                  {"op": "remove", "path": "/data/l"},
                                  {"op": "copy", "from": "/data/n", "path": "/data/m"},
                                  {"op": "move", "from": "/data/m", "path": "/data/o"},
                                  {"op": "test", "path": "/data/o", "value": "1"}], content_type=JSON_PATCH),
        call("PATCH", CM + "/j", [{"op": "test", "path": "/data/o", "value": "2"}], content_type=JSON_PATCH),
        call("PATCH", CM + "/j", [{"op": "remove", "path": "/data/missing"}], content_type=JSON_PATCH),
        call("PATCH", CM + "/j", [{"op": "replace", "path": "/nope/x", "value": 1}], content_type=JSON_PATCH),
        call("PATCH", CM + "/j", [{"op": "jump", "path": "/data"}], content_type=JSON_PATCH),
        call("PATCH", CM + "/j", {"op": "add"}, content_type=JSON_PATCH),
        call("PATCH", CM + "/j", [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}],
             content_type=JSON_PATCH),
        call("PATCH", CM + "/j", [{"op": "add", "path": "/metadata/name", "value": "other"}],
             content_type=JSON_PATCH),
    ]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_legs_agree(runner: Runner, case: Case) -> None:
    found = runner.run(case)
    assert not found, report(found)
