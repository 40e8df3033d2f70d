"""Objects the differential cases write: small builders for the built-in kinds the project uses, and a CRD with
status and scale subresources for the custom-resource cases."""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

CM = "/api/v1/namespaces/{ns}/configmaps"
SECRETS = "/api/v1/namespaces/{ns}/secrets"
DEPLOYMENTS = "/apis/apps/v1/namespaces/{ns}/deployments"
PDBS = "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
SERVICES = "/api/v1/namespaces/{ns}/services"
SERVICE_ACCOUNTS = "/api/v1/namespaces/{ns}/serviceaccounts"
NETWORK_POLICIES = "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
ROLES = "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"
ROLE_BINDINGS = "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"
CLUSTER_ROLES = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
CLUSTER_ROLE_BINDINGS = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
EVENTS = "/api/v1/namespaces/{ns}/events"
NEW_EVENTS = "/apis/events.k8s.io/v1/namespaces/{ns}/events"
NAMESPACES = "/api/v1/namespaces"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

GROUP = "diff.example.com"
GADGETS = f"/apis/{GROUP}/v1/namespaces/{{ns}}/gadgets"


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> Obj:
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


LABELS = {"app.kubernetes.io/name": "op"}

DEPLOYMENT: Obj = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "op", "labels": LABELS},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": LABELS},
        "template": {
            "metadata": {"labels": LABELS},
            "spec": {
                "serviceAccountName": "op",
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
                     "labelSelector": {"matchLabels": LABELS}}],
                "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "operator", "image": "c5c3/order-engine:0.1.0",
                    "args": ["run", "--leader-elect"],
                    "ports": [{"name": "metrics", "containerPort": 8080}, {"name": "probes", "containerPort": 8081}],
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "probes"}, "periodSeconds": 20},
                    "readinessProbe": {"httpGet": {"path": "/readyz", "port": "probes"}},
                    "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
                    "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                        "capabilities": {"drop": ["ALL"]}},
                    "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                    "env": [{"name": "A", "value": "1"},
                            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                }],
                "volumes": [{"name": "tmp", "emptyDir": {}},
                            {"name": "conf", "configMap": {"name": "conf"}},
                            {"name": "creds", "secret": {"secretName": "creds"}}],
            },
        },
    },
}


def deployment(name: str = "op", **spec: Any) -> Obj:
    made = copy.deepcopy(DEPLOYMENT)
    made["metadata"]["name"] = name
    made["spec"].update(spec)
    return made


def minimal_deployment(name: str, image: str = "nginx") -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": image}]}}}}


def gadget_crd() -> Obj:
    """A namespaced custom resource with status and scale subresources and a printer column."""
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "integer"}, "colour": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "parts": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                          "name": {"type": "string"}, "count": {"type": "integer"}}}}}},
        "status": {"type": "object", "properties": {
            "size": {"type": "integer"}, "phase": {"type": "string"}, "selector": {"type": "string"}}}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema},
                               "subresources": {"status": {}, "scale": {
                                   "specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size",
                                   "labelSelectorPath": ".status.selector"}},
                               "additionalPrinterColumns": [
                                   {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                                   {"name": "Phase", "type": "string", "jsonPath": ".status.phase"}]}]}}


def gadget(name: str, **spec: Any) -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}
