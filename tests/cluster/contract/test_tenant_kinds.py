"""The built-in kinds a tenant's namespace holds are served: a ResourceQuota, a LimitRange, a NetworkPolicy and a
RoleBinding (what the TenantSpace example creates), and the Pods and PersistentVolumeClaims its teardown waits for.
Each is created, read back, listed by a label and deleted, as on a real API server."""

from __future__ import annotations

import contextlib
import uuid

from contract_kit import exists

from engine.cluster.api import AlreadyExists, Cluster, Obj


def _objects(suffix: str) -> list[Obj]:
    labels = {"tenant-kinds": suffix}
    meta = {"namespace": "default", "labels": labels}
    return [
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": f"quota-{suffix}", **meta},
         "spec": {"hard": {"pods": "10", "requests.cpu": "2"}}},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": f"limits-{suffix}", **meta},
         "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "100m"}}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": f"deny-{suffix}", **meta},
         "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": f"group-{suffix}", **meta},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team-a"}]},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": f"data-{suffix}", **meta},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"app-{suffix}", **meta},
         "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}},
    ]


def test_a_tenant_namespaces_kinds_are_served(cluster: Cluster) -> None:
    """Every kind is created, reads back, lists by its label and is gone after its delete."""
    suffix = uuid.uuid4().hex[:8]
    with contextlib.suppress(AlreadyExists):  # a real server's pods need the namespace's default ServiceAccount
        cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default",
                                                                                  "namespace": "default"}})
    for body in _objects(suffix):
        created = cluster.create(body)
        meta = created["metadata"]
        assert cluster.get(body["apiVersion"], body["kind"], "default", meta["name"]) == created
        listed = cluster.list(body["apiVersion"], body["kind"], "default", labels={"tenant-kinds": suffix}).items
        assert [item["metadata"]["name"] for item in listed] == [meta["name"]]
    for body in _objects(suffix):
        name = body["metadata"]["name"]
        if body["kind"] == "PersistentVolumeClaim":  # its protection finalizer is a controller's to lift
            cluster.patch("v1", body["kind"], "default", name, {"metadata": {"finalizers": None}})
        cluster.delete(body["apiVersion"], body["kind"], "default", name)
        assert not exists(cluster, body["apiVersion"], body["kind"], "default", name), body["kind"]
