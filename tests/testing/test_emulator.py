"""The HTTP API emulator driven by the real kubernetes client (DynamicClient) and by raw HTTP."""

from __future__ import annotations

import datetime as dt
import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import config, dynamic, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import exceptions as dyn_errors

from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator, write_kubeconfig

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
WIDGETS = "example.com/v1"
MERGE = "application/merge-patch+json"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Ready')].status"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            ],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "minimum": 0},
                    "color": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                }},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            }}},
        }],
    },
}


def widget(name: str, *, namespace: str = "ns", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": WIDGETS, "kind": "Widget", "metadata": meta, "spec": spec}


@pytest.fixture
def clock() -> SimulatedClock:
    """The clock of the cluster and of the emulator's tables."""
    return SimulatedClock(START)


@pytest.fixture
def cluster(clock: SimulatedClock) -> MemoryCluster:
    """An empty in-memory cluster."""
    return MemoryCluster("", clock=clock)


@pytest.fixture
def emulator(cluster: MemoryCluster, clock: SimulatedClock) -> Iterator[Emulator]:
    """An emulator serving the cluster, stopped after the test."""
    with Emulator(cluster, clock=clock) as served:
        yield served


@pytest.fixture
def dc(emulator: Emulator, tmp_path: Path) -> dynamic.DynamicClient:
    """A DynamicClient for the emulator, with its own discovery cache file."""
    api = config.new_client_from_config_dict(emulator.kubeconfig())
    return dynamic.DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))


@pytest.fixture
def widgets(dc: dynamic.DynamicClient) -> Any:
    """The Widget resource, its CRD installed over HTTP."""
    crds = dc.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    crds.create(body=WIDGET_CRD)
    return dc.resources.get(api_version=WIDGETS, kind="Widget")


def raw(emulator: Emulator, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
        data: bytes | None = None) -> tuple[int, dict[str, str], Any]:
    """One plain HTTP request: the status, the headers and the decoded body."""
    host, port = emulator.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        payload = data if data is not None else None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=payload, headers=headers or {"Content-Type": "application/json"})
        resp = conn.getresponse()
        text = resp.read()
        content_type = resp.getheader("Content-Type") or ""
        lines = "watch=" in path
        decoded = json.loads(text) if content_type.startswith("application/json") and not lines else text.decode()
        return resp.status, dict(resp.getheaders()), decoded
    finally:
        conn.close()


# ---------------------------------------------------------------------------
# Discovery.


class TestDiscovery:
    def test_crd_created_at_run_time_is_discovered(self, dc: dynamic.DynamicClient) -> None:
        """A kind is unknown before its CRD exists and resolves, with its status subresource, right after."""
        with pytest.raises(dyn_errors.ResourceNotFoundError):
            dc.resources.get(api_version=WIDGETS, kind="Widget")
        dc.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition").create(
            body=WIDGET_CRD)
        found = dc.resources.get(api_version=WIDGETS, kind="Widget")
        assert (found.name, found.namespaced) == ("widgets", True)
        assert "status" in found.subresources

    def test_group_list_prefers_one_of_its_versions(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """/apis names each group's preferred version exactly as one entry of its versions."""
        two = json.loads(json.dumps(WIDGET_CRD))
        two["spec"]["versions"].append({**two["spec"]["versions"][0], "name": "v2", "storage": False})
        cluster.create(two)
        code, _, doc = raw(emulator, "GET", "/apis")
        assert code == 200 and doc["kind"] == "APIGroupList"
        group = next(g for g in doc["groups"] if g["name"] == "example.com")
        assert group["preferredVersion"] == {"groupVersion": "example.com/v2", "version": "v2"}
        assert group["preferredVersion"] in group["versions"]

    def test_resource_list_names_status_subresource(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """/apis/<g>/<v> lists the kind with its verbs and ``<plural>/status``."""
        cluster.create(WIDGET_CRD)
        code, _, doc = raw(emulator, "GET", "/apis/example.com/v1")
        assert code == 200 and doc["kind"] == "APIResourceList"
        names = {r["name"]: r for r in doc["resources"]}
        assert "watch" in names["widgets"]["verbs"] and names["widgets"]["kind"] == "Widget"
        assert names["widgets/status"]["verbs"] == ["get", "patch", "update"]

    def test_core_and_version_documents(self, emulator: Emulator) -> None:
        """/version, /api, /api/v1 and /apis/<g> answer what clients read first."""
        assert raw(emulator, "GET", "/version")[2]["major"] == "1"
        assert raw(emulator, "GET", "/api")[2]["versions"] == ["v1"]
        core = {r["name"] for r in raw(emulator, "GET", "/api/v1")[2]["resources"]}
        assert {"secrets", "configmaps", "namespaces"} <= core
        group = raw(emulator, "GET", "/apis/coordination.k8s.io")[2]
        assert group["kind"] == "APIGroup" and group["preferredVersion"]["version"] == "v1"

    def test_deleted_crd_stops_serving_its_kind(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """Deleting the CRD over HTTP takes its group version out of discovery and its paths away."""
        cluster.create(WIDGET_CRD)
        code, _, _ = raw(emulator, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                         "widgets.example.com")
        assert code == 200
        assert "example.com" not in [g["name"] for g in raw(emulator, "GET", "/apis")[2]["groups"]]
        assert raw(emulator, "GET", "/apis/example.com/v1/namespaces/ns/widgets")[0] == 404

    def test_permissive_cluster_serves_kinds_without_crds(self, clock: SimulatedClock) -> None:
        """On a permissive cluster an object of an unknown kind is created by its plural, then discovered."""
        with Emulator(MemoryCluster("", clock=clock, permissive=True)) as served:
            body = {"apiVersion": "example.io/v1", "kind": "Part", "metadata": {"name": "p"}}
            code, _, made = raw(served, "POST", "/apis/example.io/v1/namespaces/ns/parts", body)
            assert code == 201 and made["metadata"]["namespace"] == "ns"
            resources = raw(served, "GET", "/apis/example.io/v1")[2]["resources"]
            assert [r["name"] for r in resources] == ["parts", "parts/status"]

    def test_unserved_group_version_is_not_found(self, emulator: Emulator) -> None:
        """A group version nobody serves answers 404 with a Status."""
        code, _, doc = raw(emulator, "GET", "/apis/example.com/v1")
        assert code == 404 and doc["kind"] == "Status" and doc["reason"] == "NotFound"


# ---------------------------------------------------------------------------
# CRUD through the DynamicClient.


class TestCrud:
    def test_create_and_get(self, widgets: Any) -> None:
        """A created object comes back with server-set metadata, and reads back the same."""
        made = widgets.create(body=widget("w1", size=2), namespace="ns")
        assert made.metadata.uid and made.metadata.resourceVersion and made.metadata.generation == 1
        got = widgets.get(name="w1", namespace="ns")
        assert got.to_dict() == made.to_dict()

    def test_create_twice_is_already_exists(self, widgets: Any) -> None:
        """A second create of the same name is a 409 AlreadyExists."""
        widgets.create(body=widget("w1"), namespace="ns")
        with pytest.raises(dyn_errors.ConflictError) as caught:
            widgets.create(body=widget("w1"), namespace="ns")
        assert json.loads(caught.value.body)["reason"] == "AlreadyExists"

    def test_missing_object_is_not_found(self, widgets: Any) -> None:
        """Reading a missing object raises NotFoundError from the 404 Status."""
        with pytest.raises(dyn_errors.NotFoundError):
            widgets.get(name="nope", namespace="ns")

    def test_schema_violation_is_invalid(self, widgets: Any) -> None:
        """The CRD schema is enforced: a 422 naming the field."""
        with pytest.raises(dyn_errors.UnprocessibleEntityError) as caught:
            widgets.create(body=widget("w1", size=-1), namespace="ns")
        status = json.loads(caught.value.body)
        assert status["reason"] == "Invalid"
        assert [c["field"] for c in status["details"]["causes"]] == ["spec.size"]

    def test_ratcheting_serves_an_object_stored_before_a_schema_change(
            self, widgets: Any, cluster: MemoryCluster) -> None:
        """A status write or label patch that leaves an invalid field unchanged is a 200; changing it is a 422."""
        cluster.seed(widget("old", size=-1))
        status = widgets.status.patch(name="old", namespace="ns", content_type=MERGE,
                                      body={"status": {"phase": "Ready"}})
        assert status.status.phase == "Ready" and status.spec.size == -1
        labelled = widgets.patch(name="old", namespace="ns", content_type=MERGE,
                                 body={"metadata": {"labels": {"team": "a"}}})
        assert labelled.metadata.labels.team == "a"
        with pytest.raises(dyn_errors.UnprocessibleEntityError):
            widgets.patch(name="old", namespace="ns", content_type=MERGE, body={"spec": {"size": -2}})

    def test_list_with_label_selectors(self, widgets: Any) -> None:
        """Lists are typed ``WidgetList`` with kinded items, filtered by set-based selectors."""
        widgets.create(body=widget("a", labels={"app": "a"}), namespace="ns")
        widgets.create(body=widget("b", labels={"app": "b", "tier": "x"}), namespace="ns")
        widgets.create(body=widget("c", labels={"app": "c"}), namespace="ns")
        widgets.create(body=widget("d", namespace="other", labels={"app": "a"}), namespace="other")
        listed = widgets.get(namespace="ns", label_selector="app in (a,b),!tier")
        assert listed.kind == "WidgetList" and listed.metadata.resourceVersion
        assert [(i.kind, i.metadata.name) for i in listed.items] == [("Widget", "a")]
        everywhere = widgets.get(label_selector="app=a")
        assert sorted(i.metadata.namespace for i in everywhere.items) == ["ns", "other"]

    def test_list_with_field_selector(self, widgets: Any) -> None:
        """fieldSelector on metadata.name narrows a list."""
        for name in ("a", "b"):
            widgets.create(body=widget(name), namespace="ns")
        listed = widgets.get(namespace="ns", field_selector="metadata.name=b")
        assert [i.metadata.name for i in listed.items] == ["b"]

    def test_update_with_stale_resource_version_conflicts(self, widgets: Any) -> None:
        """A PUT carrying an old resourceVersion is a 409 Conflict; the current one succeeds."""
        made = widgets.create(body=widget("w1", size=1), namespace="ns").to_dict()
        fresh = dict(made, spec={"size": 2})
        updated = widgets.replace(body=fresh, namespace="ns")
        assert updated.spec.size == 2 and updated.metadata.generation == 2
        with pytest.raises(dyn_errors.ConflictError):
            widgets.replace(body=dict(made, spec={"size": 3}), namespace="ns")

    def test_merge_and_json_patch(self, widgets: Any) -> None:
        """Merge and JSON patches change spec (bumping generation); labels alone do not bump it."""
        widgets.create(body=widget("w1", size=1, color="red"), namespace="ns")
        merged = widgets.patch(name="w1", namespace="ns", body={"spec": {"color": None, "size": 5}},
                               content_type=MERGE)
        assert merged.spec.to_dict() == {"size": 5} and merged.metadata.generation == 2
        patched = widgets.patch(name="w1", namespace="ns", content_type="application/json-patch+json",
                                body=[{"op": "add", "path": "/metadata/labels", "value": {"k": "v"}}])
        assert patched.metadata.labels.k == "v" and patched.metadata.generation == 2

    def test_strategic_merge_patch_of_a_custom_resource_is_refused(self, widgets: Any) -> None:
        """The client's default strategic-merge patch is refused for a custom resource (415), as the API server
        refuses it: custom resources have no merge keys."""
        widgets.create(body=widget("w1", size=1), namespace="ns")
        with pytest.raises(dyn_errors.DynamicApiError) as refused:
            widgets.patch(name="w1", namespace="ns", body={"spec": {"size": 4}})
        assert refused.value.status == 415

    def test_status_subresource(self, widgets: Any) -> None:
        """Status is written only through /status, which leaves spec and generation alone."""
        widgets.create(body=widget("w1", size=1), namespace="ns")
        through_main = widgets.patch(name="w1", namespace="ns", content_type=MERGE,
                                     body={"status": {"phase": "ignored"}})
        assert "status" not in through_main.to_dict()
        status = {"conditions": [{"type": "Ready", "status": "True"}]}
        written = widgets.status.patch(name="w1", namespace="ns", body={"status": status, "spec": {"size": 9}},
                                       content_type=MERGE)
        assert written.status.to_dict() == status
        assert written.spec.size == 1 and written.metadata.generation == 1
        current = widgets.get(name="w1", namespace="ns").to_dict()
        current["status"] = {"phase": "replaced"}
        assert widgets.status.replace(body=current, namespace="ns").status.to_dict() == {"phase": "replaced"}

    def test_server_side_apply_owns_fields(self, dc: dynamic.DynamicClient, widgets: Any) -> None:
        """SSA creates, a second manager conflicts on a field it does not own, force takes it over."""
        made = dc.server_side_apply(widgets, body=widget("w1", size=1), namespace="ns", field_manager="first")
        assert made.spec.size == 1
        assert [m.manager for m in made.metadata.managedFields] == ["first"]
        with pytest.raises(dyn_errors.ConflictError) as caught:
            dc.server_side_apply(widgets, body=widget("w1", size=2), namespace="ns", field_manager="second")
        assert "first" in json.loads(caught.value.body)["message"]
        forced = dc.server_side_apply(widgets, body=widget("w1", size=2), namespace="ns", field_manager="second",
                                      force_conflicts=True)
        assert forced.spec.size == 2
        assert {m.manager for m in forced.metadata.managedFields} == {"second"}

    def test_apply_without_field_manager_is_refused(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """An apply patch needs a fieldManager: 422 otherwise, and nothing is created."""
        cluster.create(WIDGET_CRD)
        code, _, doc = raw(emulator, "PATCH", "/apis/example.com/v1/namespaces/ns/widgets/w1",
                           data=yaml.safe_dump(widget("w1")).encode(),
                           headers={"Content-Type": "application/apply-patch+yaml"})
        assert code == 422 and "fieldManager" in doc["message"]
        assert cluster.list(WIDGETS, "Widget", "ns").items == []

    def test_apply_body_may_be_yaml(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """An apply patch in YAML creates the object (201) with timestamps kept as strings."""
        cluster.create(WIDGET_CRD)
        body = yaml.safe_dump(widget("w1", size=3, color="2026-01-01T00:00:00Z"))
        code, _, doc = raw(emulator, "PATCH", "/apis/example.com/v1/namespaces/ns/widgets/w1?fieldManager=me",
                           data=body.encode(), headers={"Content-Type": "application/apply-patch+yaml"})
        assert code == 201 and doc["spec"] == {"size": 3, "color": "2026-01-01T00:00:00Z"}

    def test_a_json_apply_body_is_read_as_json(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """An apply patch sent as JSON (as client-go sends it) reads JSON's numbers as JSON does: ``1e3`` is 1000,
        not the string YAML 1.1 makes of it."""
        cluster.create(WIDGET_CRD)
        body = '{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 1e3}}'
        code, _, doc = raw(emulator, "PATCH", "/apis/example.com/v1/namespaces/ns/widgets/w1?fieldManager=me",
                           data=body.encode(), headers={"Content-Type": "application/apply-patch+yaml"})
        assert code == 201 and doc["spec"] == {"size": 1000}

    def test_delete_waits_for_finalizers(self, widgets: Any) -> None:
        """DELETE returns the object while a finalizer holds it; removing the finalizer removes it."""
        body = widget("w1")
        body["metadata"]["finalizers"] = ["example.com/hold"]
        widgets.create(body=body, namespace="ns")
        held = widgets.delete(name="w1", namespace="ns")
        assert held.kind == "Widget" and held.metadata.deletionTimestamp
        assert widgets.get(name="w1", namespace="ns").metadata.deletionTimestamp
        widgets.patch(name="w1", namespace="ns", body={"metadata": {"finalizers": None}}, content_type=MERGE)
        with pytest.raises(dyn_errors.NotFoundError):
            widgets.get(name="w1", namespace="ns")

    def test_delete_without_finalizers_answers_success(self, widgets: Any) -> None:
        """DELETE of an unheld object answers a Success Status naming it."""
        made = widgets.create(body=widget("w1"), namespace="ns")
        answer = widgets.delete(name="w1", namespace="ns")
        assert answer.kind == "Status" and answer.status == "Success"
        assert answer.details.uid == made.metadata.uid

    def test_delete_precondition_on_resource_version(self, widgets: Any) -> None:
        """A DELETE whose precondition names an old resourceVersion is a 409, and the object stays."""
        made = widgets.create(body=widget("w1"), namespace="ns")
        widgets.patch(name="w1", namespace="ns", body={"spec": {"size": 1}}, content_type=MERGE)
        with pytest.raises(dyn_errors.ConflictError):
            widgets.delete(name="w1", namespace="ns",
                           body={"preconditions": {"resourceVersion": made.metadata.resourceVersion}})
        assert widgets.get(name="w1", namespace="ns").metadata.name == "w1"

    def test_delete_collection_by_label(self, widgets: Any) -> None:
        """DELETE on a collection removes what its selector matches."""
        widgets.create(body=widget("a", labels={"app": "x"}), namespace="ns")
        widgets.create(body=widget("b", labels={"app": "y"}), namespace="ns")
        widgets.delete(namespace="ns", label_selector="app=x")
        assert [i.metadata.name for i in widgets.get(namespace="ns").items] == ["b"]

    def test_core_kinds(self, dc: dynamic.DynamicClient) -> None:
        """Built-in kinds are served too: a cluster-scoped Namespace and a namespaced Secret."""
        dc.resources.get(api_version="v1", kind="Namespace").create(
            body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
        secrets = dc.resources.get(api_version="v1", kind="Secret")
        secrets.create(body={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                             "stringData": {"a": "b"}}, namespace="ns")
        assert secrets.get(name="s", namespace="ns").metadata.namespace == "ns"


# ---------------------------------------------------------------------------
# Watch.


def events(dc: dynamic.DynamicClient, resource: Any, **kwargs: Any) -> list[tuple[str, str, Any]]:
    """(type, name, resourceVersion) of every event of one watch that ends by its timeout."""
    return [
        (ev["type"], ev["raw_object"]["metadata"].get("name", ""), ev["raw_object"]["metadata"]["resourceVersion"])
        for ev in dc.watch(resource, watcher=watch.Watch(), **kwargs)
    ]


class TestWatch:
    def test_watch_from_resource_version_with_bookmark(self, dc: dynamic.DynamicClient, widgets: Any) -> None:
        """Only events after the resourceVersion come, in order, then a bookmark at the end."""
        first = widgets.create(body=widget("a"), namespace="ns")
        widgets.create(body=widget("b"), namespace="ns")
        widgets.patch(name="a", namespace="ns", body={"spec": {"size": 1}}, content_type=MERGE)
        widgets.delete(name="b", namespace="ns")
        seen = events(dc, widgets, namespace="ns", resource_version=first.metadata.resourceVersion, timeout=1,
                      allow_watch_bookmarks=True)
        assert [(t, n) for t, n, _ in seen] == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b"), ("BOOKMARK", "")]
        assert seen[-1][2] == widgets.get(namespace="ns").metadata.resourceVersion

    def test_a_bookmark_follows_what_the_cluster_held_without_waiting_for_the_timeout(
            self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """With bookmarks, the events the cluster held come first, then a bookmark at its resourceVersion, while
        the watch goes on: a reader wanting only what is there now (the deterministic pump) stops there."""
        cluster.create(WIDGET_CRD)
        start = cluster.create(widget("a"))["metadata"]["resourceVersion"]
        held = cluster.create(widget("b"))["metadata"]["resourceVersion"]
        host, port = emulator.url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)  # the watch lasts 60 s: a late bookmark fails
        try:
            conn.request("GET", f"/apis/example.com/v1/namespaces/ns/widgets?watch=true&timeoutSeconds=60"
                         f"&allowWatchBookmarks=true&resourceVersion={start}")
            stream = conn.getresponse()
            first, mark = json.loads(stream.readline()), json.loads(stream.readline())
            later = cluster.create(widget("c"))["metadata"]["resourceVersion"]
            after = json.loads(stream.readline())
        finally:
            conn.close()
        assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "b")
        assert (mark["type"], mark["object"]["metadata"]["resourceVersion"]) == ("BOOKMARK", held)
        assert (after["type"], after["object"]["metadata"]["resourceVersion"]) == ("ADDED", later)

    def test_watch_without_resource_version_starts_with_current_objects(
            self, dc: dynamic.DynamicClient, widgets: Any) -> None:
        """No resourceVersion: every current object arrives as ADDED first; no bookmark unless asked."""
        widgets.create(body=widget("a"), namespace="ns")
        widgets.create(body=widget("b"), namespace="ns")
        seen = events(dc, widgets, namespace="ns", timeout=1)
        assert [(t, n) for t, n, _ in seen] == [("ADDED", "a"), ("ADDED", "b")]

    def test_a_finished_watch_says_its_connection_closes(self, emulator: Emulator) -> None:
        """A watch's connection ends with it, and the answer says so up front: a client that pooled it
        would send its next request into a socket the server is closing (RemoteDisconnected)."""
        host, port = emulator.url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("GET", "/api/v1/namespaces/ns/configmaps?watch=true&timeoutSeconds=1")
            watch_answer = conn.getresponse()
            watch_answer.read()
            assert watch_answer.getheader("Connection") == "close"
            assert watch_answer.will_close
            conn.request("GET", "/api/v1/namespaces/ns/configmaps")  # a fresh connection, not the closed one
            assert conn.getresponse().status == 200
        finally:
            conn.close()

    def test_watch_sees_live_changes(self, dc: dynamic.DynamicClient, widgets: Any) -> None:
        """A change made while the watch is open arrives on it."""
        rv = widgets.get(namespace="ns").metadata.resourceVersion
        stream = dc.watch(widgets, namespace="ns", resource_version=rv, timeout=5, watcher=watch.Watch())
        writer = threading.Timer(0.2, lambda: widgets.create(body=widget("late"), namespace="ns"))
        writer.start()
        try:
            event = next(iter(stream))
        finally:
            writer.join()
        assert (event["type"], event["raw_object"]["metadata"]["name"]) == ("ADDED", "late")

    def test_watch_filters_by_labels_and_fields(self, dc: dynamic.DynamicClient, widgets: Any) -> None:
        """Label and field selectors narrow a watch as they narrow a list."""
        rv = widgets.get(namespace="ns").metadata.resourceVersion
        widgets.create(body=widget("a", labels={"app": "x"}), namespace="ns")
        widgets.create(body=widget("b", labels={"app": "x"}), namespace="ns")
        widgets.create(body=widget("c", labels={"app": "y"}), namespace="ns")
        by_label = events(dc, widgets, namespace="ns", resource_version=rv, timeout=1, label_selector="app=x")
        assert [n for _, n, _ in by_label] == ["a", "b"]
        by_field = events(dc, widgets, namespace="ns", resource_version=rv, timeout=1,
                          field_selector="metadata.name=b")
        assert [n for _, n, _ in by_field] == ["b"]

    def test_watch_is_a_chunked_stream_of_json_lines(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """On the wire a watch is chunked, one JSON event per line."""
        cluster.create(WIDGET_CRD)
        cluster.create(widget("a"))
        code, headers, text = raw(emulator, "GET", "/apis/example.com/v1/namespaces/ns/widgets?watch=true"
                                  "&timeoutSeconds=1", headers={"Accept": "application/json;stream=watch"})
        assert code == 200 and headers["Transfer-Encoding"] == "chunked"
        lines = [json.loads(line) for line in text.splitlines()]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "a")]

    def test_watch_as_table(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """``kubectl get -w`` asks for tables: each event's object is a one-row Table."""
        cluster.create(WIDGET_CRD)
        cluster.create(widget("a", size=2))
        _, _, text = raw(emulator, "GET", "/apis/example.com/v1/namespaces/ns/widgets?watch=1&timeoutSeconds=1",
                         headers={"Accept": TABLE})
        (event,) = [json.loads(line) for line in text.splitlines()]
        assert event["object"]["kind"] == "Table" and event["object"]["rows"][0]["cells"][:2] == ["a", 2]

    def test_send_initial_events_ends_them_with_a_bookmark(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """sendInitialEvents: the current objects, then a bookmark annotated as their end."""
        cluster.create(WIDGET_CRD)
        cluster.create(widget("a"))
        _, _, text = raw(emulator, "GET", "/apis/example.com/v1/namespaces/ns/widgets?watch=true&timeoutSeconds=1"
                         "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
        seen = [json.loads(line) for line in text.splitlines()]
        assert [e["type"] for e in seen] == ["ADDED", "BOOKMARK", "BOOKMARK"]
        assert seen[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}

    def test_many_watchers_each_see_every_event(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """Concurrent watches are served side by side, each receiving every change."""
        cluster.create(WIDGET_CRD)
        rv = cluster.list(WIDGETS, "Widget", "ns").resource_version
        results: list[list[str]] = []

        def follow() -> None:
            _, _, text = raw(emulator, "GET", f"/apis/example.com/v1/namespaces/ns/widgets?watch=true"
                             f"&resourceVersion={rv}&timeoutSeconds=1")
            results.append([json.loads(line)["object"]["metadata"]["name"] for line in text.splitlines()])

        readers = [threading.Thread(target=follow) for _ in range(10)]
        for reader in readers:
            reader.start()
        for index in range(20):
            cluster.create(widget(f"w{index:02}"))
        for reader in readers:
            reader.join()
        assert results == [[f"w{index:02}" for index in range(20)]] * 10

    def test_too_old_resource_version_is_gone(self, clock: SimulatedClock, tmp_path: Path) -> None:
        """A resourceVersion older than the event log ends the watch with a 410 ERROR event."""
        small = MemoryCluster("", clock=clock, event_log_size=2)
        small.create(WIDGET_CRD)
        for name in ("a", "b", "c", "d"):
            small.create(widget(name))
        with Emulator(small) as served:
            dc = dynamic.DynamicClient(config.new_client_from_config_dict(served.kubeconfig()),
                                       cache_file=str(tmp_path / "cache.json"))
            widgets = dc.resources.get(api_version=WIDGETS, kind="Widget")
            with pytest.raises(ApiException) as caught:
                events(dc, widgets, namespace="ns", resource_version="1", timeout=1)
        assert caught.value.status == 410

    def test_stop_ends_open_watches(self, cluster: MemoryCluster, clock: SimulatedClock, tmp_path: Path) -> None:
        """Stopping the emulator closes a watch that has no timeout, promptly."""
        cluster.create(WIDGET_CRD)
        served = Emulator(cluster, clock=clock)
        served.start()
        dc = dynamic.DynamicClient(config.new_client_from_config_dict(served.kubeconfig()),
                                   cache_file=str(tmp_path / "cache.json"))
        widgets = dc.resources.get(api_version=WIDGETS, kind="Widget")
        ended = threading.Event()

        def consume() -> None:
            try:
                for _ in dc.watch(widgets, namespace="ns", resource_version="1", watcher=watch.Watch()):
                    pass
            except Exception:  # any end will do
                pass
            ended.set()

        threading.Thread(target=consume, daemon=True).start()
        time.sleep(0.2)
        assert not ended.is_set()
        served.stop()
        assert ended.wait(3)


# ---------------------------------------------------------------------------
# Tables, errors, tokens, kubeconfigs.


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


class TestTables:
    def test_list_as_table_shows_printer_columns(self, emulator: Emulator, cluster: MemoryCluster,
                                                 clock: SimulatedClock) -> None:
        """A Table has Name then the CRD's columns, each cell evaluated from the object."""
        cluster.create(WIDGET_CRD)
        cluster.create(widget("a", size=3))
        cluster.patch(WIDGETS, "Widget", "ns", "a", {"status": {"conditions": [
            {"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]}}, status=True)
        cluster.create(widget("b"))
        clock.advance(dt.timedelta(minutes=5, seconds=7))
        code, _, doc = raw(emulator, "GET", "/apis/example.com/v1/namespaces/ns/widgets", headers={"Accept": TABLE})
        assert code == 200 and (doc["kind"], doc["apiVersion"]) == ("Table", "meta.k8s.io/v1")
        assert [c["name"] for c in doc["columnDefinitions"]] == ["Name", "Size", "Ready", "Age"]
        assert [r["cells"] for r in doc["rows"]] == [["a", 3, "True", "5m7s"], ["b", None, None, "5m7s"]]
        assert doc["rows"][0]["object"]["kind"] == "PartialObjectMetadata"

    def test_get_without_table_accept_is_plain_json(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """Without the Table media type, a GET answers the object itself."""
        cluster.create(WIDGET_CRD)
        cluster.create(widget("a"))
        code, _, doc = raw(emulator, "GET", "/apis/example.com/v1/namespaces/ns/widgets/a",
                           headers={"Accept": "application/json"})
        assert code == 200 and doc["kind"] == "Widget"

    def test_a_built_in_kind_has_the_servers_columns(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """A built-in kind prints the API server's own columns: a ConfigMap its number of keys."""
        cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"},
                        "data": {"a": "1", "b": "2"}})
        _, _, doc = raw(emulator, "GET", "/api/v1/namespaces/ns/configmaps/c", headers={"Accept": TABLE})
        assert [c["name"] for c in doc["columnDefinitions"]] == ["Name", "Data", "Age"]
        assert doc["rows"][0]["cells"] == ["c", 2, "0s"]


class TestRobustness:
    def test_unknown_path_is_a_not_found_status(self, emulator: Emulator) -> None:
        """A path the API does not have answers 404 with a Status, not an HTML page."""
        code, headers, doc = raw(emulator, "GET", "/nowhere/at/all")
        assert code == 404 and headers["Content-Type"] == "application/json" and doc["kind"] == "Status"

    def test_malformed_body_is_bad_request(self, emulator: Emulator) -> None:
        """A body that is not JSON is a 400 Status."""
        code, _, doc = raw(emulator, "POST", "/api/v1/namespaces/ns/configmaps", data=b"{nope")
        assert code == 400 and doc["reason"] == "BadRequest"

    def test_body_namespace_must_match_the_url(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """A body naming another namespace than the URL is refused, and nothing is created."""
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "other"}}
        code, _, doc = raw(emulator, "POST", "/api/v1/namespaces/ns/configmaps", body)
        assert code == 400 and "namespace" in doc["message"]
        assert cluster.list("v1", "ConfigMap").items == []

    def test_oversized_body_is_refused(self, emulator: Emulator) -> None:
        """A body over the limit is a 413 Status, read no further."""
        big = b'{"a": "' + b"x" * (4 * 1024 * 1024) + b'"}'
        code, _, doc = raw(emulator, "POST", "/api/v1/namespaces/ns/configmaps", data=big)
        assert code == 413 and doc["kind"] == "Status"

    def test_unsupported_patch_type(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """A PATCH in an unknown media type is a 415 Status."""
        cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}})
        code, _, doc = raw(emulator, "PATCH", "/api/v1/namespaces/ns/configmaps/c", {"data": {}},
                           headers={"Content-Type": "text/plain"})
        assert code == 415 and doc["reason"] == "UnsupportedMediaType"

    def test_dry_run_answers_and_writes_nothing(self, emulator: Emulator, cluster: MemoryCluster) -> None:
        """dryRun=All answers as the write would (201 and the object), and stores nothing; other values: 422, as the
        API server refuses CreateOptions it does not support."""
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
        code, _, _ = raw(emulator, "POST", "/api/v1/namespaces/ns/configmaps?dryRun=All", body)
        assert code == 201 and cluster.list("v1", "ConfigMap").items == []
        code, _, _ = raw(emulator, "POST", "/api/v1/namespaces/ns/configmaps?dryRun=Some", body)
        assert code == 422 and cluster.list("v1", "ConfigMap").items == []

    def test_server_fault_is_a_500_status(self, emulator: Emulator, cluster: MemoryCluster,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
        """An unexpected exception answers a 500 Status, and the server keeps serving."""
        def explode(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("boom")

        monkeypatch.setattr(cluster, "get", explode)
        code, _, doc = raw(emulator, "GET", "/api/v1/namespaces/ns/configmaps/c")
        assert code == 500 and doc["reason"] == "InternalError" and "boom" not in json.dumps(doc)
        assert raw(emulator, "GET", "/version")[0] == 200

    def test_malformed_request_gets_a_status(self, emulator: Emulator) -> None:
        """Even a request the HTTP layer cannot parse is answered with a Status document."""
        host, port = emulator.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as conn:
            conn.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            answer = conn.recv(4096)
        status = json.loads(answer[answer.index(b"{"):])
        assert (status["kind"], status["code"]) == ("Status", 400)

    def test_method_not_allowed(self, emulator: Emulator) -> None:
        """POST on a named object is a 405 Status."""
        code, _, doc = raw(emulator, "POST", "/api/v1/namespaces/ns/configmaps/c", {})
        assert code == 405 and doc["kind"] == "Status"


class TestKubeconfig:
    def test_token_is_checked_when_configured(self, cluster: MemoryCluster, tmp_path: Path) -> None:
        """With a token, a request without it is a 401; the kubeconfig carries it, so the client works."""
        with Emulator(cluster, token="s3cret") as served:
            code, _, doc = raw(served, "GET", "/api/v1/namespaces")
            assert code == 401 and doc["reason"] == "Unauthorized"
            dc = dynamic.DynamicClient(config.new_client_from_config_dict(served.kubeconfig()),
                                       cache_file=str(tmp_path / "cache.json"))
            assert dc.resources.get(api_version="v1", kind="Namespace").get().items == []

    def test_kubeconfig_file_with_two_clusters(self, clock: SimulatedClock, tmp_path: Path) -> None:
        """A written kubeconfig has one context per emulator; each context reaches its own cluster."""
        one, two = MemoryCluster("", clock=clock), MemoryCluster("edge", clock=clock)
        two.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "only-on-edge"}})
        with Emulator(one) as first, Emulator(two) as second:
            path = tmp_path / "kubeconfig"
            write_kubeconfig(path, {"management": first, "edge": second}, "management")
            assert path.stat().st_mode & 0o777 == 0o600
            contexts, current = config.list_kube_config_contexts(config_file=str(path))
            assert sorted(c["name"] for c in contexts) == ["edge", "management"]
            assert current["name"] == "management"
            names = {}
            for context in ("management", "edge"):
                api = config.new_client_from_config(config_file=str(path), context=context, persist_config=False)
                dc = dynamic.DynamicClient(api, cache_file=str(tmp_path / f"{context}.json"))
                items = dc.resources.get(api_version="v1", kind="Namespace").get().items
                names[context] = [i.metadata.name for i in items]
        assert names == {"management": [], "edge": ["only-on-edge"]}

    def test_kubeconfig_context_namespace(self, emulator: Emulator) -> None:
        """A namespace given to kubeconfig() becomes the context's default namespace."""
        doc = emulator.kubeconfig("dev", namespace="tenant-a")
        assert doc["contexts"] == [{"name": "dev", "context": {"cluster": "dev", "user": "dev",
                                                               "namespace": "tenant-a"}}]
        assert doc["clusters"][0]["cluster"]["server"] == emulator.url

    def test_written_contexts_share_a_default_namespace(self, emulator: Emulator, tmp_path: Path) -> None:
        """A namespace given to write_kubeconfig is every context's default namespace."""
        path = tmp_path / "kubeconfig"
        write_kubeconfig(path, {"a": emulator, "b": emulator}, "b", namespace="tenant-a")
        contexts, _ = config.list_kube_config_contexts(config_file=str(path))
        assert {c["name"]: c["context"]["namespace"] for c in contexts} == {"a": "tenant-a", "b": "tenant-a"}

    def test_write_kubeconfig_needs_a_known_current_context(self, emulator: Emulator, tmp_path: Path) -> None:
        """Naming a current context that is not among the emulators is a ValueError."""
        with pytest.raises(ValueError, match="current context"):
            write_kubeconfig(tmp_path / "k", {"a": emulator}, "b")


# ---------------------------------------------------------------------------
# Input limits: answers with a message, never a 500.


class TestInputLimits:
    PATH = "/apis/example.com/v1/namespaces/ns/widgets"

    def test_an_integer_beyond_int64_is_invalid_not_a_server_error(self, emulator: Emulator, widgets: Any) -> None:
        """10^30 in an integer field reads as a number, as the API server's decoder reads it: 422."""
        body = json.dumps(widget("big", size=1)).replace('"size": 1', '"size": ' + "1" + "0" * 30).encode()
        status, _, answer = raw(emulator, "POST", self.PATH, data=body)
        assert status == 422, answer
        assert answer["reason"] == "Invalid"
        assert "spec.size in body must be of type integer" in answer["message"]

    @pytest.mark.parametrize("depth", [500, 5000])
    def test_a_deeply_nested_body_is_a_bad_request(self, emulator: Emulator, widgets: Any, depth: int) -> None:
        """A body nested thousands of levels deep is refused with 400 and a message."""
        nested = '{"a":' * depth + "1" + "}" * depth
        body = json.dumps(widget("deep")).replace('"spec": {}', '"spec": {"x": ' + nested + "}").encode()
        status, _, answer = raw(emulator, "POST", self.PATH, data=body)
        assert status == 400, answer
        assert answer["reason"] == "BadRequest"
        assert "nests objects and lists" in answer["message"]
        assert raw(emulator, "GET", self.PATH + "/deep")[0] == 404
