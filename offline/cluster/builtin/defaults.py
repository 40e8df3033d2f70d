"""The API server's defaults for the built-in kinds the memory cluster serves, as Kubernetes' ``SetDefaults_*``
functions set them (a Deployment's strategy and revisionHistoryLimit, a pod template's dnsPolicy and
schedulerName, a container's imagePullPolicy, a probe's thresholds, a Service's sessionAffinity...), plus the
declarative defaults the OpenAPI schema carries (a container port's protocol).

Defaults are set by walking the object with its schema: each struct is defaulted by the function named for its
Go type. Left out on purpose: what needs an allocator (a Service's clusterIP, clusterIPs, ipFamilies and
ipFamilyPolicy) and fields behind feature gates.
"""

from __future__ import annotations

import base64
import ipaddress
import random
from collections.abc import Callable
from typing import Any

from offline.cluster.builtin.schema import Schema

Obj = dict[str, Any]

RBAC = "rbac.authorization.k8s.io"


def prepare_for_create(obj: Obj) -> None:
    """What a kind's registry strategy sets on create, after the write's managed fields are recorded (so nobody
    owns it): a Namespace is Active and carries the ``kubernetes`` finalizer; a Service gets a cluster IP (from
    10.96.0.0/12, drawn at random: there is no allocator keeping them unique) and its IP family."""
    if (obj.get("apiVersion"), obj.get("kind")) == ("v1", "Service"):
        _allocate(obj.setdefault("spec", {}))
    if (obj.get("apiVersion"), obj.get("kind")) == ("v1", "Namespace"):
        obj["status"] = {"phase": "Active"}
        finalizers = obj.setdefault("spec", {}).setdefault("finalizers", [])
        if "kubernetes" not in finalizers:
            finalizers.append("kubernetes")


def _allocate(spec: Obj) -> None:
    if spec.get("type") == "ExternalName":
        return
    if not spec.get("clusterIP"):
        first = int(ipaddress.IPv4Address("10.96.0.0"))
        spec["clusterIP"] = str(ipaddress.IPv4Address(first + random.randint(1, 2 ** 20 - 2)))
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")


def prepare_for_update(new: Obj, old: Obj) -> None:
    """What a kind's registry strategy keeps on update: a Namespace's finalizers change only through /finalize; a
    Service keeps the cluster IP it was given when the write leaves it out."""
    if (new.get("apiVersion"), new.get("kind")) == ("v1", "Service"):
        spec, before = new.setdefault("spec", {}), old.get("spec") or {}
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if key not in spec and key in before:
                spec[key] = before[key]
    if (new.get("apiVersion"), new.get("kind")) == ("v1", "Namespace"):
        finalizers = (old.get("spec") or {}).get("finalizers")
        spec = new.setdefault("spec", {})
        if finalizers is None:
            spec.pop("finalizers", None)
        else:
            spec["finalizers"] = list(finalizers)


def set_defaults(obj: Obj, schema: Schema) -> None:
    """Set, in place, the defaults the API server sets on a decoded object of the schema's kind."""
    _walk(obj, schema)


def _walk(value: Any, schema: Schema | None) -> None:
    if schema is None or schema.open or schema.int_or_string:
        return
    if isinstance(value, list):
        items = schema.items
        for item in value:
            _walk(item, items)
        return
    if not isinstance(value, dict) or "properties" not in schema.node:
        if isinstance(value, dict) and schema.values is not None:
            for item in value.values():
                _walk(item, schema.values)
        return
    defaulter = _DEFAULTERS.get(schema.ref or "")
    if defaulter is not None:
        defaulter(value)
    for key, node in schema.fields.items():
        sub = Schema(node)
        default = sub.default
        if key not in value and default not in (None, {}, [], "", 0, False) and not isinstance(default, dict):
            value[key] = default
        if key in value:
            _walk(value[key], sub)


# ---------------------------------------------------------------------------------------------------------------
# SetDefaults_* of Kubernetes' pkg/apis/*/v1/defaults.go, by Go type.


def _deployment(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)


def _pod_spec(spec: Obj) -> None:
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    else:
        spec.pop("serviceAccount", None)
    _fill(spec, dnsPolicy="ClusterFirst", restartPolicy="Always", schedulerName="default-scheduler")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30


def _image_tag(image: str) -> str:
    """The tag of an image reference as ``parsers.ParseImageName`` finds it: ``latest`` when it has neither tag
    nor digest."""
    last = image.rsplit("/", 1)[-1]
    digest = "@" in last
    tag = last.split("@", 1)[0].partition(":")[2]
    if tag:
        return tag
    return "" if digest else "latest"


def _container(container: Obj) -> None:
    if not container.get("imagePullPolicy"):
        tag = _image_tag(str(container.get("image") or ""))
        container["imagePullPolicy"] = "Always" if tag == "latest" else "IfNotPresent"
    _fill(container, terminationMessagePath="/dev/termination-log", terminationMessagePolicy="File")


def _probe(probe: Obj) -> None:
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value


def _http_get(action: Obj) -> None:
    _fill(action, path="/", scheme="HTTP")


def _volume(volume: Obj) -> None:
    if not any(key not in ("name",) and value is not None for key, value in volume.items()):
        volume["emptyDir"] = {}


def _mode(value: int) -> Callable[[Obj], None]:
    def default(source: Obj) -> None:
        if source.get("defaultMode") is None:
            source["defaultMode"] = value
    return default


def _service(service: Obj) -> None:
    spec = service.setdefault("spec", {})
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    external = spec["type"] in ("NodePort", "LoadBalancer") or bool(spec.get("externalIPs"))
    if external and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


def _namespace(namespace: Obj) -> None:
    name = (namespace.get("metadata") or {}).get("name")
    if name:
        namespace["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name


def _secret(secret: Obj) -> None:
    """Also the conversion of ``stringData`` (write-only) into ``data``, as the API server converts it."""
    if not secret.get("type"):
        secret["type"] = "Opaque"
    plain = secret.pop("stringData", None)
    if isinstance(plain, dict) and plain:
        data = secret.setdefault("data", {})
        for key, value in plain.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def _network_policy(policy: Obj) -> None:
    spec = policy.setdefault("spec", {})
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])


def _network_policy_port(port: Obj) -> None:
    if port.get("protocol") is None:
        port["protocol"] = "TCP"


def _role_ref(binding: Obj) -> None:
    ref = binding.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = RBAC


def _subject(subject: Obj) -> None:
    if not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
        subject["apiGroup"] = RBAC


def _object_field_selector(selector: Obj) -> None:
    _fill(selector, apiVersion="v1")


def _fill(obj: Obj, **defaults: Any) -> None:
    for key, value in defaults.items():
        if not obj.get(key):
            obj[key] = value


CORE = "io.k8s.api.core.v1."
_DEFAULTERS: dict[str, Callable[[Obj], None]] = {
    "io.k8s.api.apps.v1.Deployment": _deployment,
    CORE + "PodSpec": _pod_spec,
    CORE + "Container": _container,
    CORE + "EphemeralContainer": _container,
    CORE + "Probe": _probe,
    CORE + "HTTPGetAction": _http_get,
    CORE + "Volume": _volume,
    CORE + "SecretVolumeSource": _mode(0o644),
    CORE + "ConfigMapVolumeSource": _mode(0o644),
    CORE + "DownwardAPIVolumeSource": _mode(0o644),
    CORE + "ProjectedVolumeSource": _mode(0o644),
    CORE + "Service": _service,
    CORE + "Namespace": _namespace,
    CORE + "Secret": _secret,
    CORE + "ObjectFieldSelector": _object_field_selector,
    "io.k8s.api.networking.v1.NetworkPolicy": _network_policy,
    "io.k8s.api.networking.v1.NetworkPolicyPort": _network_policy_port,
    "io.k8s.api.rbac.v1.RoleBinding": _role_ref,
    "io.k8s.api.rbac.v1.ClusterRoleBinding": _role_ref,
    "io.k8s.api.rbac.v1.Subject": _subject,
}
