"""The files `engine render` reads: the order and its world, in the scenario fixture format.

Every file holds one or more YAML documents, each an object (apiVersion, kind, metadata.name).
The order file holds exactly one order (an object of a kind the rules serve); its other
documents join the world beside it. The order is admitted as ``kubectl apply`` would create it
(CRD defaults and validation), keeping what the file says of its status and server-set metadata;
the world is stored as written, as scenario objects are. A mistake is a ``file:line:col`` line.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.cluster.api import ApiError, Obj
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster
from offline.scenario import model as m
from offline.scenario.model import ScenarioError, ScenarioErrors
from offline.scenario.yamlnode import Node, load_documents

__all__ = ["Inputs", "load_inputs"]

_KEPT_META = ("uid", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")
"""Server-set metadata the order file may carry (an order already seen, or being deleted): kept as written."""


@dataclass(frozen=True)
class Inputs:
    order: m.Seed
    kind_key: str
    """The order kind's catalog key, ``<apiVersion>/<Kind>``."""
    world: tuple[m.Seed, ...]


def load_inputs(order_file: Path, world_files: Sequence[Path], catalog: Mapping[str, Any], *,
                cluster: str, crds: Sequence[Obj], now: dt.datetime) -> Inputs:
    """The order (admitted) and the world; ScenarioErrors naming file:line:col for every mistake found."""
    errors: list[ScenarioError] = []
    order_docs = _objects(order_file, errors)
    world = [m.Seed(doc.plain(), "", doc.pos) for path in world_files for doc in _objects(path, errors)]
    orders = [doc for doc in order_docs if _key(doc) in catalog]
    if not errors and not orders:
        served = ", ".join(sorted(catalog)) or "none: the rules are empty"
        errors.append(ScenarioError(m.Pos(str(order_file), 1, 1),
                                    f"no order in this file: none of its documents is of a kind the rules serve "
                                    f"({served})"))
    for extra in orders[1:]:
        errors.append(extra.error("one order per render: this file holds another one before this"))
    if errors:
        raise ScenarioErrors(errors)
    order = orders[0]
    if not isinstance(order.value["metadata"].get("namespace"), str) or not order.value["metadata"]["namespace"]:
        raise ScenarioErrors([order.child("metadata").error("the order needs metadata.namespace (orders are "
                                                            "namespaced)")])
    beside = [m.Seed(doc.plain(), cluster, doc.pos) for doc in order_docs if doc is not order]
    admitted = _admit(order, crds, now)
    return Inputs(m.Seed(admitted, cluster, order.pos), _key(order), (*world, *beside))


def _objects(path: Path, errors: list[ScenarioError]) -> list[Node]:
    """The objects of one file; what is not an object is an error at its position."""
    display = str(path)
    if not path.is_file():
        errors.append(ScenarioError(m.Pos(display, 1, 1), "no such file"))
        return []
    try:
        docs = [doc for doc in load_documents(path, display) if doc.value is not None]
    except ScenarioError as exc:
        errors.append(exc)
        return []
    found = []
    for doc in docs:
        problem = _identity_problem(doc)
        if problem is None:
            found.append(doc)
        else:
            errors.append(problem)
    return found


def _identity_problem(doc: Node) -> ScenarioError | None:
    if not doc.is_map:
        return doc.error("a document must be an object (a mapping with apiVersion, kind and metadata.name)")
    for key in ("apiVersion", "kind"):
        if not isinstance(doc.value.get(key), str) or not doc.value[key]:
            return doc.error(f"the object needs `{key}` (a string)")
    meta = doc.child("metadata") if doc.has("metadata") else None
    if meta is None or not meta.is_map:
        return (meta or doc).error("the object needs `metadata` (a mapping with `name`)")
    if not isinstance(meta.value.get("name"), str) or not meta.value["name"]:
        return meta.error("the object needs `metadata.name` (a string)")
    if "namespace" in meta.value and not isinstance(meta.value["namespace"], str):
        return meta.child("namespace").error("`metadata.namespace` must be a string")
    return None


def _position(doc: Node, path: str) -> m.Pos:
    """Where the field at a dotted path (``spec.items[0].name``) is written: its key, else its nearest parent."""
    node, pos = doc, doc.pos
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("[") and node.is_seq and int(part[1:-1]) < len(node.value):
            node = list(node.elements())[int(part[1:-1])]
            pos = node.pos
        elif node.has(part):
            pos = node.key_pos(part)
            node = node.child(part)
        else:
            break
    return pos


def _key(doc: Node) -> str:
    return f"{doc.value['apiVersion']}/{doc.value['kind']}"


def _admit(order: Node, crds: Sequence[Obj], now: dt.datetime) -> Obj:
    """The order as the API server would store it on create (defaults, validation), with the status and the
    server-set metadata the file gives; an order it would refuse is an error at the order."""
    written: Obj = order.plain()
    scratch = MemoryCluster(clock=SimulatedClock(now), permissive=True)
    for crd in crds:
        scratch.create(crd)
    body = {key: value for key, value in written.items() if key != "status"}
    unknown = scratch.unknown_fields(body)
    if unknown:  # kubectl's default, strict field validation, refuses them
        raise ScenarioErrors([ScenarioError(_position(order, path), f"unknown field {path!r}: the API server "
                                            "refuses it under kubectl's strict field validation") for path in unknown])
    try:
        created = scratch.create(body)
    except ApiError as exc:
        raise ScenarioErrors([order.error(f"the API server would refuse this order: {exc}")]) from None
    meta = created["metadata"]
    for key in ("uid", "resourceVersion", "managedFields"):
        meta.pop(key, None)
    meta.update({key: value for key, value in written["metadata"].items() if key in _KEPT_META})
    if "status" in written:
        created["status"] = written["status"]
    return created
