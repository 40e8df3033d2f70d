"""The RBAC the rule files need, derived from the compiled rules: `engine rbac` prints it, deploy/ holds it.

Each verb is granted for a reason found in a rule file (an input reads, a template is applied, a
teardown deletes) or in the runtime (the Lease, Events, registration Secrets), and the output says
which, so a reviewer can check every right against the rules that need it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.rules.model import Action, ClusterScope, CompiledKind

CORE_PLURALS = {"Secret": "secrets", "ConfigMap": "configmaps", "Namespace": "namespaces", "Lease": "leases",
                "Event": "events", "Service": "services", "ServiceAccount": "serviceaccounts", "Pod": "pods"}
"""Plurals of the built-in kinds a rule file may name (CRDs name the others)."""
BUILTIN_PLURALS = {
    ("coordination.k8s.io", "Lease"): "leases", ("events.k8s.io", "Event"): "events",
    ("", "PersistentVolumeClaim"): "persistentvolumeclaims", ("", "ResourceQuota"): "resourcequotas",
    ("", "LimitRange"): "limitranges", ("networking.k8s.io", "NetworkPolicy"): "networkpolicies",
    ("rbac.authorization.k8s.io", "Role"): "roles", ("rbac.authorization.k8s.io", "RoleBinding"): "rolebindings",
}
"""Plurals of the built-in kinds outside the core table: other groups, and what a tenant's namespace holds."""


_TOP = {key: re.compile(rf"^{key}:\s*['\"]?([^'\"\s#]+)", re.M) for key in ("apiVersion", "kind")}
_VALUE_NAME = re.compile(r"^\{\{\s*(\w+)\s*\}\}$")
_QUOTED = re.compile(r"'([A-Z]\w*)'")
_LITERAL = re.compile(r"apiVersion:\s*'([^']+)'\s*,\s*kind:\s*'([^']+)'")


class RbacError(Exception):
    """The rules name a kind whose resource cannot be known (no CRD gives its plural, or a templated kind)."""


@dataclass
class Grant:
    """The verbs on one resource, each with the reasons that need it."""

    group: str
    resource: str
    reasons: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """verb -> what needs it -> where (the rule files)."""
    namespaces: set[str] = field(default_factory=set)

    def add(self, verbs: Iterable[str], reason: str, where: str = "") -> None:
        for verb in verbs:
            places = self.reasons.setdefault(verb, {}).setdefault(reason, [])
            if where and where not in places:
                places.append(where)

    def why(self, verb: str) -> str:
        return "; ".join(f"{reason} ({', '.join(places)})" if places else reason
                         for reason, places in self.reasons[verb].items())


READ = ("get", "list", "watch")


class Rights:
    """Collects grants per (group, resource), resolving kinds to plurals through the CRDs."""

    def __init__(self, plurals: Mapping[tuple[str, str], str]) -> None:
        self.plurals = plurals
        self.grants: dict[tuple[str, str], Grant] = {}

    def need(self, api_version: str, kind: str, verbs: Iterable[str], reason: str, where: str = "", *,
             subresource: str = "", namespace: str | None = None) -> None:
        group = api_version.rpartition("/")[0]
        plural = self.plurals.get((group, kind))
        if plural is None:
            raise RbacError(f"{kind}.{api_version} ({reason}): no CRD names its plural; "
                            "pass its CRD folder with --crds")
        resource = f"{plural}/{subresource}" if subresource else plural
        grant = self.grants.setdefault((group, resource), Grant(group, resource))
        grant.add(verbs, reason, where)
        if namespace is not None:
            grant.namespaces.add(namespace)


def crd_plurals(folders: Iterable[Path]) -> dict[tuple[str, str], str]:
    """(group, kind) -> plural, from the built-in table and every CRD under ``folders``."""
    found = {("", kind): plural for kind, plural in CORE_PLURALS.items()}
    found.update(BUILTIN_PLURALS)
    for folder in folders:
        paths = sorted(folder.rglob("*.yaml")) if folder.is_dir() else [folder]
        for path in paths:
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    spec = doc.get("spec") or {}
                    names = spec.get("names") or {}
                    found[(str(spec.get("group", "")), str(names.get("kind", "")))] = str(names.get("plural", ""))
    return found


def _where(kind: CompiledKind, origin: Any) -> str:
    """The rule file that needs a right (no line: an edit elsewhere in the file leaves the manifest current)."""
    return Path(str(origin.file)).name if origin is not None else kind.name


def constant_address(source: str) -> tuple[str, str] | None:
    """A template's top-level apiVersion and kind when both are constants, else None."""
    found = {key: pattern.search(source) for key, pattern in _TOP.items()}
    values = {key: m.group(1) for key, m in found.items() if m is not None}
    if len(values) != 2 or any("{" in v for v in values.values()):
        return None
    return values["apiVersion"], values["kind"]


def template_address(source: str, path: str) -> tuple[str, str]:
    """A template's constant top-level apiVersion and kind (a templated one cannot be granted)."""
    address = constant_address(source)
    if address is None:
        raise RbacError(f"{path}: apiVersion and kind must be constant for `engine rbac` to grant their rights")
    return address


def _order_rights(rights: Rights, kind: CompiledKind) -> None:
    name = f"the {kind.kind} orders ({Path(str(kind.origin.file)).name})"
    rights.need(kind.api_version, kind.kind, (*READ, "update", "patch"), f"{name}: read, labelled, finalizer set")
    rights.need(kind.api_version, kind.kind, ("get", "update", "patch"), f"{name}: conditions", subresource="status")
    rights.need(kind.api_version, kind.kind, ("update",), f"{name}: the finalizer {kind.finalizer}",
                subresource="finalizers")


def templated_kinds(kind: CompiledKind, source: str, group: str,
                    plurals: Mapping[tuple[str, str], str]) -> tuple[str, ...]:
    """The kinds a templated `kind: "{{ value }}"` renders to: the kind names of ``group`` its value spells out.

    A kind the value takes from the cluster unchecked would escape this; the rules refuse such a
    kind before reading it (a gate), so the spelled-out names are all it reads."""
    match = _VALUE_NAME.match(source.strip())
    value = kind.values.get(match.group(1)) if match else None
    if value is None:
        return ()
    sources = [value.query.source] if value.query is not None else []
    sources += [row.value.source for row in value.rows]
    names = {name for text in sources for name in _QUOTED.findall(text)}
    return tuple(sorted(name for name in names if (group, name) in plurals))


def _reaches(scope: ClusterScope, target: bool) -> bool:
    """Whether a read or write of this cluster scope can land on the cluster the rights are for: on the
    management cluster everything can (its orders are served there too); on a target cluster, what reads
    or writes the order's cluster or a cluster the rules name."""
    return not target or scope != "management"


def _input_rights(rights: Rights, kind: CompiledKind, target: bool) -> None:
    for watch in kind.watches:
        if not target or watch.clusters == "all":
            rights.need(watch.api_version, watch.kind, READ, "watched", _where(kind, watch.origin))
    for item in kind.inputs.values():
        if item.verb == "served" or not _reaches(item.cluster, target):  # served: discovery only
            continue
        if not item.api_version.is_constant:
            raise RbacError(f"{_where(kind, item.origin)}: input {item.name}: a templated apiVersion cannot be granted")
        group = item.api_version.source.rpartition("/")[0]
        names = ((item.kind.source,) if item.kind.is_constant
                 else templated_kinds(kind, item.kind.source, group, rights.plurals))
        if not names:
            raise RbacError(f"{_where(kind, item.origin)}: input {item.name}: templated kind {item.kind.source!r}; "
                            "its value spells out no kind of that group")
        namespace = item.namespace.source if item.namespace is not None else None
        for input_kind in names:
            rights.need(item.api_version.source, input_kind, READ,
                        f"input {item.name}", _where(kind, item.origin), namespace=namespace)


def _written(kind: CompiledKind) -> dict[str, tuple[str, str]]:
    """Bound name -> (apiVersion, kind) of every object an apply, ensure or patch returns, by its `as:`."""
    bound: dict[str, tuple[str, str]] = {}
    for step in kind.steps:
        for action in step.actions:
            if action.template is not None and action.bind:
                bound[action.bind] = template_address(action.template.source, action.template.path)
            elif action.op == "patch" and action.bind and action.target is not None:
                address = bound.get(action.target) or _input_address(kind, action.target)
                if address is not None:
                    bound[action.bind] = address
    return bound


def _action_rights(rights: Rights, kind: CompiledKind, action: Action, bound: Mapping[str, tuple[str, str]],
                   target: bool) -> None:
    if not _reaches(action.cluster, target):
        return
    where = _where(kind, action.origin)
    if action.op in ("apply", "ensure"):
        assert action.template is not None
        api_version, object_kind = template_address(action.template.source, action.template.path)
        label = f"{action.op} {Path(action.template.path).name}"
        if action.status_subresource:
            rights.need(api_version, object_kind, ("get", "patch"), label, where, subresource="status")
            rights.need(api_version, object_kind, ("get",), label, where)
        else:  # server-side apply creates an absent object: create and patch both
            rights.need(api_version, object_kind, ("get", "create", "patch"), label, where)
    elif action.op == "patch" and action.target is not None:
        address = bound.get(action.target) or _input_address(kind, action.target)
        if address is None:
            raise RbacError(f"{where}: patch {action.target}: not an input or an applied object of this kind")
        rights.need(*address, ("patch",), f"patch {action.target}", where,
                    subresource="status" if action.status_subresource else "")
    elif action.op == "delete" and action.query is not None:
        for api_version, object_kind in _deleted(kind, action, bound):
            rights.need(api_version, object_kind, ("delete",), "a step's delete (any child kind)", where)


def _input_address(kind: CompiledKind, name: str) -> tuple[str, str] | None:
    item = kind.inputs.get(name)
    if item is None or not item.kind.is_constant or not item.api_version.is_constant:
        return None
    return item.api_version.source, item.kind.source


def _deleted(kind: CompiledKind, action: Action, bound: Mapping[str, tuple[str, str]]) -> set[tuple[str, str]]:
    """What a step's `delete` may remove: an object it spells out, else the order's children.

    A step deletes objects it found among its inputs or built itself; the engine deletes only
    children there, so the kinds are those its templates write (a literal address adds its own)."""
    literal = set(_LITERAL.findall(action.query.source if action.query else ""))
    if literal:
        return literal
    written = {template_address(t.source, t.path) for t in kind.templates.values()}
    return written | set(bound.values())


def _teardown_rights(rights: Rights, kind: CompiledKind, target: bool) -> None:
    for action in kind.teardown.actions:
        if action.op not in ("patch", "delete") or not _reaches(action.cluster, target):
            continue
        finding = ("get",) if action.object_name is not None else ("list",)
        rights.need(action.api_version, action.kind, (*finding, action.op), f"teardown {action.op}",
                    _where(kind, action.origin))


def kind_rights(kinds: Iterable[CompiledKind], plurals: Mapping[tuple[str, str], str], *,
                target: bool = False) -> Rights:
    """Every right the rule files' kinds need on the management cluster (which serves orders too), or with
    ``target`` on a registered target cluster: its orders, and what the rules read and write on the order's
    cluster or a cluster they name (never what they address on the management cluster only)."""
    rights = Rights(plurals)
    for kind in kinds:
        _order_rights(rights, kind)
        _input_rights(rights, kind, target)
        bound = _written(kind)
        for step in kind.steps:
            for action in step.actions:
                _action_rights(rights, kind, action, bound, target)
        _teardown_rights(rights, kind, target)
    return rights
