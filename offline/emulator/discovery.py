"""Discovery documents built from what a cluster serves now, in the legacy (non-aggregated) format.

Clients resolve kinds through these: the kubernetes DynamicClient compares ``preferredVersion``
with the entries of ``versions`` by dict equality, and kubectl falls back to this format when
the answer's Content-Type is plain ``application/json``. The OpenAPI v3 documents tell kubectl
that the server validates fields itself, and carry the CRDs' schemas for ``kubectl explain``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence

from engine.cluster.api import Obj, ResourceInfo

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
STATUS_VERBS = ["get", "patch", "update"]

VERSION: Obj = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.0-emulator", "gitCommit": "", "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23", "compiler": "gc", "platform": "linux/amd64",
}

_KUBE_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")


def version_key(version: str) -> tuple[int, int, int, str]:
    """Sorts versions as Kubernetes prefers them: v2, v1, v1beta2, v1beta1, v1alpha1, then others by name."""
    match = _KUBE_VERSION.fullmatch(version)
    if match is None:
        return (3, 0, 0, version)
    major, level, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[level]
    return (rank, -int(major), -int(minor or 0), version)


def _groups(resources: Iterable[ResourceInfo]) -> dict[str, list[str]]:
    """Named groups and their versions, preferred first."""
    found: dict[str, set[str]] = {}
    for info in resources:
        if info.group:
            found.setdefault(info.group, set()).add(info.version)
    return {group: sorted(versions, key=version_key) for group, versions in sorted(found.items())}


def api_versions() -> Obj:
    """``/api``: the core group's versions."""
    return {"kind": "APIVersions", "apiVersion": "v1", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def _group_doc(group: str, versions: Sequence[str]) -> Obj:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": dict(entries[0])}


def api_group_list(resources: Iterable[ResourceInfo]) -> Obj:
    """``/apis``: every named group with its versions and preferred version."""
    groups = [_group_doc(g, versions) for g, versions in _groups(resources).items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(resources: Iterable[ResourceInfo], group: str) -> Obj | None:
    """``/apis/<group>``, or None when the group is not served."""
    versions = _groups(resources).get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)}


def api_resource_list(resources: Iterable[ResourceInfo], api_version: str) -> Obj | None:
    """``/api/v1`` or ``/apis/<g>/<v>``: the kinds of one group version, each with its status
    subresource; None when the group version is not served."""
    entries: list[Obj] = []
    for info in resources:
        if info.api_version != api_version:
            continue
        entry: Obj = {"name": info.plural, "singularName": info.singular or info.kind.lower(),
                      "namespaced": info.namespaced, "kind": info.kind, "verbs": list(VERBS)}
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        entries.append(entry)
        if info.status_subresource:
            entries.append({"name": f"{info.plural}/status", "singularName": "", "namespaced": info.namespaced,
                            "kind": info.kind, "verbs": list(STATUS_VERBS)})
    if not entries:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api_version, "resources": entries}


def _gv_path(api_version: str) -> str:
    return "api/v1" if api_version == "v1" else f"apis/{api_version}"


Schemas = Mapping[tuple[str, str], Obj]
"""The openAPIV3Schema of each (apiVersion, kind) that has one (the served versions of CRDs)."""


def openapi_root(resources: Sequence[ResourceInfo], schemas: Schemas | None = None) -> Obj:
    """``/openapi/v3``: one document per served group version, addressed with a content hash."""
    paths: Obj = {}
    for api_version in sorted({info.api_version for info in resources}):
        digest = hashlib.sha256(json.dumps(openapi_group_version(resources, api_version, schemas), sort_keys=True)
                                .encode()).hexdigest()[:32].upper()
        paths[_gv_path(api_version)] = {"serverRelativeURL": f"/openapi/v3/{_gv_path(api_version)}?hash={digest}"}
    return {"paths": paths}


def schema_name(info: ResourceInfo) -> str:
    """The OpenAPI component name of a kind, as the API server names CRD schemas: ``io.example.v1.Widget``."""
    group = ".".join(reversed(info.group.split("."))) if info.group else "io.k8s.api.core"
    return f"{group}.{info.version}.{info.kind}"


def openapi_group_version(resources: Sequence[ResourceInfo], api_version: str,
                          schemas: Schemas | None = None) -> Obj | None:
    """``/openapi/v3/apis/<g>/<v>``: an OpenAPI document whose PATCH operations declare the
    ``fieldValidation`` parameter and the kind they serve (kubectl then leaves field validation to the
    server), and whose components hold each kind's schema tagged with its group, version and kind
    (what ``kubectl explain`` reads)."""
    paths: Obj = {}
    components: Obj = {}
    for info in resources:
        if info.api_version != api_version:
            continue
        schema = (schemas or {}).get((info.api_version, info.kind))
        if schema is not None:
            tag = [{"group": info.group, "version": info.version, "kind": info.kind}]
            components[schema_name(info)] = {**schema, "x-kubernetes-group-version-kind": tag}
        gvk = {"group": info.group, "version": info.version, "kind": info.kind}
        scope = "namespaces/{namespace}/" if info.namespaced else ""
        parameters = [{"name": p, "in": "query", "schema": {"type": "string"}}
                      for p in ("dryRun", "fieldManager", "fieldValidation", "force")]
        operation = {"operationId": f"patch{info.kind}", "x-kubernetes-action": "patch",
                     "x-kubernetes-group-version-kind": gvk, "parameters": parameters,
                     "responses": {"200": {"description": "OK"}}}
        paths[f"/{_gv_path(api_version)}/{scope}{info.plural}/{{name}}"] = {"patch": operation}
    if not paths:
        return None
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": components}}
