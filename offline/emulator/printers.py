"""The rows ``kubectl get`` prints for built-in kinds, as the API server's printers make them (Kubernetes'
``pkg/printers/internalversion``, the CRD table convertor and the default one for kinds without a printer).

The columns (names, types, priorities) are the real server's, from ``offline.cluster.builtin``; the server fills
the wide columns too (kubectl shows them with ``-o wide``). Counts are integers even in ``string`` columns, as the
server sends them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from engine.clock import parse_time
from engine.cluster.api import Obj
from offline.cluster.builtin import schema
from offline.emulator import events
from offline.emulator.table import human_duration

Cells = list[Any]
Printer = Callable[[Obj, dt.datetime], Cells]


def _age(obj: Obj, now: dt.datetime, key: str = "creationTimestamp") -> str:
    stamp = (obj.get("metadata") or {}).get(key) if key == "creationTimestamp" else obj.get(key)
    return _since(stamp, now)


def _since(stamp: Any, now: dt.datetime) -> str:
    if not isinstance(stamp, str) or not stamp:
        return "<unknown>"
    try:
        return human_duration(now - parse_time(stamp))
    except ValueError:
        return "<unknown>"


def _created_at(obj: Obj) -> str:
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    if not isinstance(stamp, str):
        return "0001-01-01T00:00:00Z"
    return parse_time(stamp).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _spec(obj: Obj) -> Obj:
    return obj["spec"] if isinstance(obj.get("spec"), dict) else {}


def _status(obj: Obj) -> Obj:
    return obj["status"] if isinstance(obj.get("status"), dict) else {}


def selector_text(selector: Any) -> str:
    """A LabelSelector as ``metav1.LabelSelectorAsSelector(...).String()``: requirements sorted by key."""
    if not isinstance(selector, dict):
        return ""
    parts: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        parts.append((str(key), f"{key}={value}"))
    for expression in selector.get("matchExpressions") or []:
        key, operator = str(expression.get("key")), expression.get("operator")
        values = ",".join(sorted(str(v) for v in expression.get("values") or []))
        text = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                "DoesNotExist": f"!{key}"}.get(str(operator), "")
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts, key=lambda part: part[0]))


def _int_or_string(value: Any) -> str:
    return "N/A" if value is None else str(value)


def _secret(obj: Obj, now: dt.datetime) -> Cells:
    return [_name(obj), str(obj.get("type") or ""), len(obj.get("data") or {}), _age(obj, now)]


def _configmap(obj: Obj, now: dt.datetime) -> Cells:
    return [_name(obj), len(obj.get("data") or {}) + len(obj.get("binaryData") or {}), _age(obj, now)]


def _deployment(obj: Obj, now: dt.datetime) -> Cells:
    spec, status = _spec(obj), _status(obj)
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [_name(obj), f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
            int(status.get("updatedReplicas") or 0), int(status.get("availableReplicas") or 0), _age(obj, now),
            ",".join(str(c.get("name") or "") for c in containers),
            ",".join(str(c.get("image") or "") for c in containers), selector_text(spec.get("selector"))]


def _namespace(obj: Obj, now: dt.datetime) -> Cells:
    return [_name(obj), str(_status(obj).get("phase") or ""), _age(obj, now)]


def _service_account(obj: Obj, now: dt.datetime) -> Cells:
    return [_name(obj), _age(obj, now)]


def _binding(obj: Obj, now: dt.datetime) -> Cells:
    ref = obj.get("roleRef") or {}
    users, groups, accounts = [], [], []
    for subject in obj.get("subjects") or []:
        kind, name = subject.get("kind"), str(subject.get("name") or "")
        if kind == "ServiceAccount":
            accounts.append(f"{subject.get('namespace') or ''}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return [_name(obj), f"{ref.get('kind') or ''}/{ref.get('name') or ''}", _age(obj, now), ", ".join(users),
            ", ".join(groups), ", ".join(accounts)]


def _created(obj: Obj, now: dt.datetime) -> Cells:
    return [_name(obj), _created_at(obj)]


def _lease(obj: Obj, now: dt.datetime) -> Cells:
    return [_name(obj), str(_spec(obj).get("holderIdentity") or ""), _age(obj, now)]


def _pdb(obj: Obj, now: dt.datetime) -> Cells:
    spec = _spec(obj)
    return [_name(obj), _int_or_string(spec.get("minAvailable")), _int_or_string(spec.get("maxUnavailable")),
            int(_status(obj).get("disruptionsAllowed") or 0), _age(obj, now)]


def _service(obj: Obj, now: dt.datetime) -> Cells:
    spec = _spec(obj)
    kind = str(spec.get("type") or "")
    cluster_ips = spec.get("clusterIPs") or []
    external = spec.get("externalIPs") or []
    if kind in ("ClusterIP", "NodePort"):
        external_ip = ",".join(external) if external else "<none>"
    elif kind == "LoadBalancer":
        ingress = ((_status(obj).get("loadBalancer") or {}).get("ingress")) or []
        found = sorted({str(i.get("ip") or i.get("hostname")) for i in ingress if i.get("ip") or i.get("hostname")})
        external_ip = ",".join([*found, *external]) or "<pending>"
    elif kind == "ExternalName":
        external_ip = str(spec.get("externalName") or "")
    else:
        external_ip = "<unknown>"
    ports = ",".join(f"{p.get('port')}:{p['nodePort']}/{p.get('protocol')}" if p.get("nodePort")
                     else f"{p.get('port')}/{p.get('protocol')}" for p in spec.get("ports") or [])
    selector = spec.get("selector") or {}
    return [_name(obj), kind, cluster_ips[0] if cluster_ips else "<none>", external_ip, ports or "<none>",
            _age(obj, now), ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"]


def _network_policy(obj: Obj, now: dt.datetime) -> Cells:
    return [_name(obj), selector_text(_spec(obj).get("podSelector")) or "<none>", _age(obj, now)]


def _crd(obj: Obj, now: dt.datetime) -> Cells:
    spec = _spec(obj)
    versions = sorted(str(v.get("name")) + ("(storage)" if v.get("storage") else "")
                      for v in spec.get("versions") or [] if v.get("served"))
    names = spec.get("names") or {}
    established = any(c.get("type") == "Established" and c.get("status") == "True"
                      for c in _status(obj).get("conditions") or [])
    return [_name(obj), str(spec.get("scope") or ""), ",".join(versions), _created_at(obj),
            str(spec.get("group") or ""), str(names.get("kind") or ""), ",".join(names.get("shortNames") or []),
            established]


def _event(obj: Obj, now: dt.datetime) -> Cells:
    core = events.to_core(obj) if obj.get("apiVersion") == events.STORED[0] else obj
    first = _since(core.get("firstTimestamp"), now) if core.get("firstTimestamp") else _since(core.get("eventTime"),
                                                                                              now)
    last = _since(core.get("lastTimestamp"), now) if core.get("lastTimestamp") else first
    count = int(core.get("count") or 0)
    series = core.get("series")
    if isinstance(series, dict):
        last, count = _since(series.get("lastObservedTime"), now), int(series.get("count") or 0)
    elif count == 0:
        count = 1
    regarding = core.get("involvedObject") or {}
    kind, name = str(regarding.get("kind") or "").lower(), str(regarding.get("name") or "")
    source = core.get("source") or {}
    component = source.get("component") or core.get("reportingComponent") or ""
    host = source.get("host") or core.get("reportingInstance") or ""
    return [last, str(core.get("type") or ""), str(core.get("reason") or ""), f"{kind}/{name}" if name else kind,
            str(regarding.get("fieldPath") or ""), f"{component}, {host}" if host else component,
            str(core.get("message") or "").strip(), first, count, _name(obj)]


PRINTERS: dict[tuple[str, str], Printer] = {
    ("v1", "Secret"): _secret,
    ("v1", "ConfigMap"): _configmap,
    ("v1", "Namespace"): _namespace,
    ("v1", "ServiceAccount"): _service_account,
    ("v1", "Service"): _service,
    ("v1", "Event"): _event,
    ("events.k8s.io/v1", "Event"): _event,
    ("apps/v1", "Deployment"): _deployment,
    ("coordination.k8s.io/v1", "Lease"): _lease,
    ("policy/v1", "PodDisruptionBudget"): _pdb,
    ("networking.k8s.io/v1", "NetworkPolicy"): _network_policy,
    ("rbac.authorization.k8s.io/v1", "Role"): _created,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): _created,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): _binding,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): _binding,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): _crd,
}
"""Each built-in kind's printer: its cells, in the order of the columns the real server declares."""


def builtin_table(api_version: str, kind: str, objects: list[Obj], *, table_version: str, now: dt.datetime,
                  resource_version: str | None, include_object: str) -> Obj | None:
    """The Table of built-in objects as the API server prints it, or None for a kind with no printer here."""
    printer = PRINTERS.get((api_version, kind))
    columns = schema.columns(api_version, kind)
    if printer is None or columns is None:
        return None
    definitions = [{**column, "description": ""} for column in columns]
    rows = []
    for obj in objects:
        row: Obj = {"cells": printer(obj, now)}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": table_version,
                             "metadata": obj.get("metadata", {})}
        rows.append(row)
    meta: Obj = {} if resource_version is None else {"resourceVersion": resource_version}
    return {"kind": "Table", "apiVersion": table_version, "metadata": meta, "columnDefinitions": definitions,
            "rows": rows}
