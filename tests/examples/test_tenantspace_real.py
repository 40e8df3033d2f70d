"""The TenantSpace example on real API servers (a management cluster and a target cluster edge-1, kube-apiserver
with etcd and no controller manager): passes of the engine, in the test process, provision the namespace and its
policies and group bindings on edge-1 and the assignment on the ControlPlane; a group removed loses its
RoleBinding; teardown holds while a Pod runs in the namespace, then removes the assignment and the children and
releases the order while the namespace terminates (no namespace controller empties it here, and a second delete
of a terminating namespace is a conflict on a real server)."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.clock import SystemClock
from engine.cluster.api import AlreadyExists, Cluster, NotFound, Obj
from engine.cluster.kube import kube_cluster_from_kubeconfig
from engine.cluster.patches import json_copy
from engine.cluster.registry import ClusterSet
from engine.outcome import Request
from engine.reconcile.run import run_pass
from engine.rules.catalog import load_catalog
from engine.rules.model import CompiledKind
from offline.realkube import KubeServer

pytestmark = pytest.mark.real_server

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tenantspace"
TS = "examples.c5c3.io/v1alpha1"
RBAC = "rbac.authorization.k8s.io/v1"
PASSES = 12
"""Passes an order gets to converge (each pass is a handful of requests; the finalizer gate ends the first)."""
SERVED_PATIENCE = 30.0


def _crds() -> list[Obj]:
    """The example's CRDs and the project's ControlPlane CRD (deploy/crds/external/)."""
    external = EXAMPLE.parents[1] / "deploy" / "crds" / "external" / "c5c3.io_external.yaml"
    controlplane = [doc for doc in yaml.safe_load_all(external.read_text(encoding="utf-8"))
                    if doc and doc["metadata"]["name"] == "controlplanes.c5c3.io"]
    return [doc for path in sorted((EXAMPLE / "crds").glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))] + controlplane


@pytest.fixture
def clusters(real_cluster: Callable[[str], KubeServer], tmp_path: Path) -> Iterator[tuple[Cluster, Cluster]]:
    """(the management cluster with both CRDs served, target cluster edge-1), as the admin."""
    management = kube_cluster_from_kubeconfig("", real_cluster("tenantspace-management").kubeconfig("m"), cache=False,
                                              discovery_cache_dir=tmp_path / "m")
    edge = kube_cluster_from_kubeconfig("edge-1", real_cluster("tenantspace-edge-1").kubeconfig("e"), cache=False,
                                        discovery_cache_dir=tmp_path / "e")
    try:
        for crd in _crds():
            with contextlib.suppress(AlreadyExists):
                management.create(crd)
        deadline = time.monotonic() + SERVED_PATIENCE
        while True:
            try:
                management.list(TS, "TenantSpace", "default")
                management.list("c5c3.io/v1alpha1", "ControlPlane", "default")
                break
            except NotFound:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield management, edge
    finally:
        management.stop()
        edge.stop()


def _converge(kind: CompiledKind, clusters: ClusterSet, namespace: str, name: str,
              done: Callable[[], bool]) -> None:
    for _ in range(PASSES):
        result = run_pass(kind, Request(kind.key, "", namespace, name), clusters=clusters, clock=SystemClock())
        assert result.error is None, result.error
        if done():
            return
    raise AssertionError(f"{namespace}/{name} did not get there in {PASSES} passes")


def _conditions(cluster: Cluster, namespace: str, name: str) -> dict[str, tuple[str, str]]:
    try:
        order = cluster.get(TS, "TenantSpace", namespace, name)
    except NotFound:
        return {}
    return {c["type"]: (c["status"], c["reason"]) for c in (order.get("status") or {}).get("conditions") or []}


def _names(cluster: Cluster, api_version: str, kind: str, namespace: str) -> set[str]:
    return {item["metadata"]["name"] for item in cluster.list(api_version, kind, namespace).items}


def test_tenantspace_on_real_api_servers(clusters: tuple[Cluster, Cluster]) -> None:
    management, edge = clusters
    kind = next(iter(load_catalog(EXAMPLE / "rules").values()))
    engine_clusters = ClusterSet(management)
    engine_clusters.engage("edge-1", edge)
    suffix = uuid.uuid4().hex[:6]
    platform, tenant = f"platform-{suffix}", f"team-{suffix}"
    management.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": platform}})
    other: dict[str, Any] = {"namespace": "team-z", "targetClusterRef": {"name": "edge-1"}}
    management.create({"apiVersion": "c5c3.io/v1alpha1", "kind": "ControlPlane",
                       "metadata": {"name": "cp", "namespace": platform}, "spec": {"namespaceAssignments": [other]}})
    management.create({"apiVersion": TS, "kind": "TenantSpace", "metadata": {"name": "team", "namespace": platform},
                       "spec": {"controlPlaneRef": {"name": "cp"}, "targetCluster": "edge-1", "namespace": tenant,
                                "groups": ["admins", "oidc:Devs"]}})

    _converge(kind, engine_clusters, platform, "team",
              lambda: _conditions(management, platform, "team").get("Ready") == ("True", "AllReady"))
    assert edge.get("v1", "Namespace", None, tenant)["metadata"]["labels"]["examples.c5c3.io/tenantspace-name"] == \
        "team"
    assert _names(edge, "v1", "ResourceQuota", tenant) == {"tenant-quota"}
    assert _names(edge, "v1", "LimitRange", tenant) == {"tenant-limits"}
    assert _names(edge, "networking.k8s.io/v1", "NetworkPolicy", tenant) == {"default-deny"}
    bindings = _names(edge, RBAC, "RoleBinding", tenant)
    assert len(bindings) == 2 and any(b.startswith("group-admins-") for b in bindings), bindings
    assigned = management.get("c5c3.io/v1alpha1", "ControlPlane", platform, "cp")["spec"]["namespaceAssignments"]
    assert assigned == [other, {"namespace": tenant, "targetClusterRef": {"name": "edge-1"},
                                "tenantSpace": f"{platform}/team"}]

    # A group removed: its RoleBinding goes, the other stays.
    order = json_copy(management.get(TS, "TenantSpace", platform, "team"))
    order["spec"]["groups"] = ["admins"]
    management.update(order)
    _converge(kind, engine_clusters, platform, "team",
              lambda: len(_names(edge, RBAC, "RoleBinding", tenant)) == 1)
    assert {b for b in _names(edge, RBAC, "RoleBinding", tenant)} < bindings

    # A Pod in the namespace (its ServiceAccount first: no controller makes it here) holds the teardown.
    edge.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": tenant}})
    edge.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": tenant},
                 "spec": {"containers": [{"name": "web", "image": "registry.example/web:1"}]}})
    management.delete(TS, "TenantSpace", platform, "team")
    _converge(kind, engine_clusters, platform, "team",
              lambda: _conditions(management, platform, "team").get("NamespaceReady") == ("False", "WorkloadsRemain"))
    assert len(_names(edge, RBAC, "RoleBinding", tenant)) == 1
    assert len(management.get("c5c3.io/v1alpha1", "ControlPlane", platform, "cp")["spec"]["namespaceAssignments"]) \
        == 2

    # The Pod goes (unscheduled: at once): everything goes in reverse; the order is released while the namespace
    # terminates.
    edge.delete("v1", "Pod", tenant, "web")
    _converge(kind, engine_clusters, platform, "team",
              lambda: not _exists(management, TS, "TenantSpace", platform, "team"))
    assert management.get("c5c3.io/v1alpha1", "ControlPlane", platform, "cp")["spec"]["namespaceAssignments"] == \
        [other]
    assert _names(edge, RBAC, "RoleBinding", tenant) == set()
    assert _names(edge, "v1", "ResourceQuota", tenant) == set()
    assert edge.get("v1", "Namespace", None, tenant)["metadata"].get("deletionTimestamp")


def _exists(cluster: Cluster, api_version: str, kind: str, namespace: str, name: str) -> bool:
    try:
        cluster.get(api_version, kind, namespace, name)
    except NotFound:
        return False
    return True

