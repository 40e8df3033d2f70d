"""Written cases: server-side apply (conflicts, force, field removal), status and scale subresources, finalizers
and deletion, generation, resourceVersion conflicts and preconditions, field validation (Strict, Warn, Ignore),
dry-run, watches (label-selected, bookmarks, initial events) and 410 after compaction."""

from __future__ import annotations

import pytest

from tests.differential.harness import APPLY, JSON_PATCH, MERGE, STRATEGIC, Case, Runner, call, report
from tests.differential.objects import CM, DEPLOYMENTS, PDBS, SECRETS, configmap, deployment

OP = DEPLOYMENTS + "/op"


def apply(path: str, body: object, manager: str, **query: str) -> object:
    return call("PATCH", path, body, content_type=APPLY, fieldManager=manager, **query)


def cm_apply(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, object]:
    return configmap(name, labels, **data)


CASES = [
    Case("server-side apply: create, conflict, force, field removal", [
        apply(CM + "/a", cm_apply("a", {"x": "1"}, k="v", l="w"), "alice"),
        apply(CM + "/a", cm_apply("a", k="other"), "bob"),
        apply(CM + "/a", cm_apply("a", k="other"), "bob", force="true"),
        apply(CM + "/a", cm_apply("a", {"x": "1"}, l="w"), "alice"),
        apply(CM + "/a", cm_apply("a", l="w"), "alice"),
        apply(CM + "/a", cm_apply("a"), "bob"),
        call("GET", CM + "/a"),
        apply(CM + "/a", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "bogus": 1}, "carol"),
        call("PATCH", CM + "/a", cm_apply("a", k="v"), content_type=APPLY),
        apply(CM + "/b", cm_apply("a"), "alice"),
    ]),
    Case("server-side apply of a Deployment: list keys, defaulted key fields, atomic selector", [
        apply(OP, deployment(), "kubectl"),
        apply(OP, deployment(), "kubectl"),
        apply(OP, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "op"},
                   "spec": {"template": {"spec": {"containers": [{"name": "operator", "image": "c5c3/x:2"}]}}}},
              "other"),
        apply(OP, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "op"}, "spec": {
            "replicas": 3}}, "scaler"),
        call("GET", OP),
    ]),
    Case("status subresource", [
        call("POST", DEPLOYMENTS, deployment()),
        call("PUT", OP + "/status", {**deployment(), "status": {"replicas": 2, "readyReplicas": 1}}),
        call("PATCH", OP + "/status", {"status": {"availableReplicas": 1}}, content_type=MERGE),
        call("PATCH", OP + "/status", {"status": {"conditions": [{"type": "Available", "status": "True"}]}},
             content_type=STRATEGIC),
        call("PATCH", OP, {"status": {"replicas": 9}}, content_type=MERGE),
        call("GET", OP + "/status"),
        call("PUT", CM + "/x/status", configmap("x")),
    ]),
    Case("scale subresource of a Deployment", [
        call("POST", DEPLOYMENTS, deployment(), name="d"),
        call("GET", OP + "/scale"),
        call("PUT", OP + "/scale", {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "op"},
                                    "spec": {"replicas": 3}}),
        call("PATCH", OP + "/scale", {"spec": {"replicas": 4}}, content_type=MERGE),
        call("PATCH", OP + "/scale", [{"op": "replace", "path": "/spec/replicas", "value": 5}],
             content_type="application/json-patch+json"),
        call("PUT", OP + "/scale", {"apiVersion": "autoscaling/v1", "kind": "Scale",
                                    "metadata": {"name": "op", "resourceVersion": "$rv(d)"}, "spec": {"replicas": 1}}),
        call("GET", OP),
        call("GET", CM + "/x/scale"),
    ]),
    Case("finalizers and deletion", [
        call("POST", CM, {**configmap("f", k="v"), "metadata": {"name": "f", "finalizers": ["a.io/x"]}}),
        call("DELETE", CM + "/f"),
        call("DELETE", CM + "/f"),
        call("GET", CM + "/f"),
        call("POST", CM, configmap("f", k="again")),
        call("PATCH", CM + "/f", {"metadata": {"finalizers": ["a.io/x", "b.io/y"]}}, content_type=MERGE),
        call("PATCH", CM + "/f", {"data": {"k": "w"}}, content_type=MERGE),
        call("PATCH", CM + "/f", {"metadata": {"finalizers": None}}, content_type=MERGE),
        call("GET", CM + "/f"),
        call("POST", DEPLOYMENTS, {**deployment(), "metadata": {"name": "op", "finalizers": ["a.io/x"]}}),
        call("DELETE", OP),
        call("PATCH", OP, {"metadata": {"finalizers": []}}, content_type=MERGE),
    ]),
    Case("generation follows the spec", [
        call("POST", DEPLOYMENTS, deployment()),
        call("PATCH", OP, {"metadata": {"labels": {"x": "y"}}}, content_type=MERGE),
        call("PATCH", OP, {"spec": {"replicas": 4}}, content_type=MERGE),
        call("PATCH", OP, {"spec": {"replicas": 4}}, content_type=MERGE),
        call("POST", PDBS, {"metadata": {"name": "p"}, "spec": {"minAvailable": 1, "selector": {}}}),
        call("PATCH", PDBS + "/p", {"spec": {"minAvailable": 2}}, content_type=MERGE),
        call("POST", CM, configmap("g", k="v")),
        call("PATCH", CM + "/g", {"data": {"k": "w"}}, content_type=MERGE),
    ]),
    Case("resourceVersion conflicts and delete preconditions", [
        call("POST", CM, configmap("c", k="v"), name="c"),
        call("PATCH", CM + "/c", {"data": {"k": "w"}}, content_type=MERGE, name="c2"),
        call("PUT", CM + "/c", {**configmap("c", k="x"), "metadata": {"name": "c", "resourceVersion": "$rv(c)"}}),
        call("PATCH", CM + "/c", {"metadata": {"resourceVersion": "$rv(c)"}, "data": {"k": "y"}},
             content_type=MERGE),
        call("PATCH", CM + "/c", {"metadata": {"resourceVersion": "$rv(c2)"}, "data": {"k": "y"}},
             content_type=MERGE),
        call("DELETE", CM + "/c", {"preconditions": {"resourceVersion": "$rv(c)"}}),
        call("DELETE", CM + "/c", {"preconditions": {"uid": "not-the-uid"}}),
        call("PUT", CM + "/missing", {**configmap("missing"), "metadata": {"name": "missing",
                                                                           "resourceVersion": "1"}}),
        call("PUT", CM + "/c", {**configmap("other")}),
    ]),
    Case("field validation: Strict, Warn, Ignore", [
        call("POST", CM, {**configmap("s"), "bogus": 1, "metadata": {"name": "s", "colour": "red"}},
             fieldValidation="Strict"),
        call("POST", CM, {**configmap("w"), "bogus": 1}, fieldValidation="Warn"),
        call("POST", CM, {**configmap("i"), "bogus": 1}, fieldValidation="Ignore"),
        call("POST", CM, {**configmap("d"), "bogus": 1}),
        call("POST", DEPLOYMENTS, {**deployment(), "spec": {**deployment()["spec"], "colour": "red"}},
             fieldValidation="Strict"),
        call("POST", DEPLOYMENTS, {**deployment(), "spec": {**deployment()["spec"], "colour": "red"}}),
        call("PATCH", CM + "/w", {"bogus": 2}, content_type=MERGE, fieldValidation="Strict"),
        call("PATCH", CM + "/w", {"bogus": 2, "data": {"a": "b"}}, content_type=MERGE),
        call("PATCH", CM + "/w", {"bogus": 2}, content_type=STRATEGIC, fieldValidation="Strict"),
        call("PATCH", CM + "/w", {"bogus": 2}, content_type=STRATEGIC),
        call("POST", CM, configmap("x"), fieldValidation="Sometimes"),
        call("PATCH", CM + "/w", [{"op": "add", "path": "/bogus", "value": 1}], content_type=JSON_PATCH,
             fieldValidation="Strict"),
        call("PATCH", CM + "/w", [{"op": "add", "path": "/data/b", "value": "c"}, {"op": "add", "path": "/bogus",
                                                                                   "value": 1}],
             content_type=JSON_PATCH),
    ]),
    Case("dry-run", [
        call("POST", CM, configmap("d", k="v"), dryRun="All"),
        call("GET", CM + "/d"),
        call("POST", CM, configmap("d", k="v")),
        call("PATCH", CM + "/d", {"data": {"k": "w"}}, content_type=MERGE, dryRun="All"),
        call("GET", CM + "/d"),
        call("DELETE", CM + "/d", dryRun="All"),
        call("GET", CM + "/d"),
        call("POST", CM, configmap("e"), dryRun="Sometimes"),
        call("POST", SECRETS, {"metadata": {"name": "s"}, "stringData": {"a": "b"}}, dryRun="All"),
    ]),
    Case("watch: initial events with a bookmark, label selectors, field selectors", [
        call("POST", CM, configmap("a", {"w": "1"}), name="a"),
        call("POST", CM, configmap("b", {"w": "2"})),
        call("GET", CM, watch=1, sendInitialEvents="true", resourceVersionMatch="NotOlderThan",
             allowWatchBookmarks="true", labelSelector="w=1", timeoutSeconds=5,
             sentinel=configmap("zz-sentinel", {"w": "1"})),
        call("PATCH", CM + "/b", {"metadata": {"labels": {"w": "1"}}}, content_type=MERGE),
        call("PATCH", CM + "/a", {"metadata": {"labels": {"w": "3"}}}, content_type=MERGE),
        call("GET", CM, watch=1, resourceVersion="$rv(a)", labelSelector="w=1", timeoutSeconds=5,
             sentinel=configmap("zz-sentinel-2", {"w": "1"})),
        call("GET", CM, watch=1, resourceVersion="$rv(a)", fieldSelector="metadata.name=b", timeoutSeconds=2),
        call("GET", CM, watch=1, resourceVersion="$rv(a)", fieldSelector="spec.x=1", timeoutSeconds=5),
        call("GET", CM, watch=1, resourceVersion="x", timeoutSeconds=5),
    ]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_legs_agree(runner: Runner, case: Case) -> None:
    found = runner.run(case)
    assert not found, report(found)
