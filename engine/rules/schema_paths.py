"""Paths read from the order and from inputs, checked against their kinds' CRD schemas (lint).

``order.spec.regoin`` reads a field the order's CRD does not declare: always null, a typo. For
the order and every ``get``/``list`` input whose apiVersion and kind are constants and have a CRD
in the CRD folder, each path an expression or template reads is walked down the CRD's OpenAPI
schema; the first unknown field is an error with the closest declared field. A kind without a
CRD is not checked; checking stops below ``x-kubernetes-preserve-unknown-fields``, below an
object without declared properties, and inside maps (``additionalProperties``). ``metadata`` is
checked against ObjectMeta's fields (the API server keeps no other), whatever the CRD says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.expr.jinja import ObjectTemplate, Text
from engine.expr.jmes import Query
from engine.expr.paths import ELEMENT, query_paths, template_paths
from engine.expr.suggest import did_you_mean
from engine.rules import model
from engine.rules.errors import Position, RuleError
from engine.rules.limits import MAX_CRD_FILE_BYTES, FileTooLarge, read_limited, refusal
from engine.rules.source import SourceFile

__all__ = ["Schemas", "Site", "UnknownField", "check_paths", "check_watch_paths", "crd_files", "crd_folders",
           "load_schemas", "unknown_field", "word_position"]

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # a safe loader; libyaml's when built with it
_ANY: Mapping[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}
_MAP: Mapping[str, Any] = {"type": "object", "additionalProperties": _ANY}
_STRING_MAP: Mapping[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
_OWNER_REFERENCE: Mapping[str, Any] = {"type": "object", "properties": {
    name: {} for name in ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")}}
OBJECT_META: Mapping[str, Any] = {"type": "object", "properties": {
    "name": {"type": "string"}, "generateName": {"type": "string"}, "namespace": {"type": "string"},
    "uid": {"type": "string"}, "resourceVersion": {"type": "string"}, "generation": {"type": "integer"},
    "creationTimestamp": {"type": "string"}, "deletionTimestamp": {"type": "string"},
    "deletionGracePeriodSeconds": {"type": "integer"}, "labels": _STRING_MAP, "annotations": _STRING_MAP,
    "ownerReferences": {"type": "array", "items": _OWNER_REFERENCE},
    "finalizers": {"type": "array", "items": {"type": "string"}}, "managedFields": {"type": "array", "items": _ANY},
    "selfLink": {"type": "string"},
}}
"""The fields of a Kubernetes ObjectMeta, as a schema (labels and annotations: any key)."""


@dataclass(frozen=True)
class UnknownField:
    """The first field of a path that the schema does not declare."""

    path: tuple[str, ...]
    field: str
    message: str


class Schemas:
    """The top-level OpenAPI schema of each kind the CRD folder declares, by (apiVersion, kind); ``refused``: a
    lint error for each CRD file over the size limit, which was not read."""

    def __init__(self, schemas: Mapping[tuple[str, str], Mapping[str, Any]],
                 refused: Iterable[RuleError] = ()) -> None:
        self._schemas = dict(schemas)
        self.refused = tuple(refused)

    def get(self, api_version: str, kind: str) -> Mapping[str, Any] | None:
        return self._schemas.get((api_version, kind))

    def __len__(self) -> int:
        return len(self._schemas)

    def kinds(self) -> frozenset[tuple[str, str]]:
        """(group, kind) of every CRD read, however many versions each serves."""
        return frozenset((api_version.rpartition("/")[0], kind) for api_version, kind in self._schemas)


def crd_folders(rules_dir: Path) -> list[Path]:
    """The default CRD folder of a rules folder: ``crds/`` beside it, else ``deploy/crds/`` (with external/)."""
    for candidate in (rules_dir.parent / "crds", rules_dir.parent / "deploy" / "crds"):
        if candidate.is_dir():
            return [candidate]
    return []


def _crd_schemas(doc: Mapping[str, Any]) -> Iterable[tuple[tuple[str, str], Mapping[str, Any]]]:
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        return
    group, kind = spec.get("group"), (spec.get("names") or {}).get("kind")
    for version in spec.get("versions") or []:
        schema = ((version or {}).get("schema") or {}).get("openAPIV3Schema")
        if isinstance(group, str) and isinstance(kind, str) and isinstance(schema, Mapping):
            yield (f"{group}/{version.get('name')}", kind), schema


def crd_files(folders: Iterable[Path]) -> list[Path]:
    """The CRD files of the CRD folders: every ``*.yaml`` below each folder, or the file itself."""
    return [file for folder in folders
            for file in ([folder] if folder.is_file() else sorted(folder.rglob("*.yaml")) if folder.is_dir() else [])]


def load_schemas(folders: Iterable[Path]) -> Schemas:
    """The CRDs in the folders (every ``*.yaml`` below them); unreadable files are skipped (lint reports them),
    a file over the size limit is not read (``Schemas.refused`` says so)."""
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    refused: list[RuleError] = []
    for file in crd_files(folders):
        try:
            docs = list(yaml.load_all(read_limited(file, MAX_CRD_FILE_BYTES).decode("utf-8"), Loader=_LOADER))
        except FileTooLarge as err:
            refused.append(RuleError(Position(str(file), 1, 1), refusal("CRD file", err)))
            continue
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        for doc in docs:
            if isinstance(doc, Mapping) and doc.get("kind") == "CustomResourceDefinition":
                found.update(_crd_schemas(doc))
    return Schemas(found, refused)


def _child(schema: Mapping[str, Any], segment: str, top: bool) -> Mapping[str, Any] | str | None:
    """The schema of ``segment`` below ``schema``: a schema, None (stop checking), or "unknown"."""
    if top and segment == "metadata":
        return OBJECT_META
    if top and segment in ("apiVersion", "kind"):
        return {"type": "string"}
    if schema.get("x-kubernetes-preserve-unknown-fields") is True:
        return None
    if segment == ELEMENT:
        items = schema.get("items")
        return items if isinstance(items, Mapping) else None
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and segment in properties:
        sub = properties[segment]
        return sub if isinstance(sub, Mapping) else None
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return extra
    if extra is True or not isinstance(properties, Mapping) or schema.get("type") not in (None, "object"):
        return None
    return "unknown"


def unknown_field(schema: Mapping[str, Any], path: tuple[str, ...], what: str) -> UnknownField | None:
    """The first segment of ``path`` (below the object) that ``schema`` does not declare, or None."""
    node: Mapping[str, Any] | None = schema
    for depth, segment in enumerate(path):
        if node is None:
            return None
        child = _child(node, segment, depth == 0)
        if child == "unknown":
            known = [*node.get("properties", {})] + (["apiVersion", "kind", "metadata"] if depth == 0 else [])
            where = ".".join((what, *path[:depth]))
            message = f"{where} has no field {segment!r}{did_you_mean(segment, known)}"
            return UnknownField(path[: depth + 1], segment, message)
        node = child if isinstance(child, Mapping) else None
    return None


@dataclass(frozen=True)
class Site:
    """Where a compiled expression or template came from, to point an error at its token."""

    expr: Query | Text | ObjectTemplate
    src: SourceFile | None
    path: tuple[str | int, ...]


def _roots(kind: model.CompiledKind, schemas: Schemas) -> dict[str, tuple[Mapping[str, Any], int, str]]:
    """Context name -> (schema, how many path segments name the object, what to call it in messages)."""
    roots: dict[str, tuple[Mapping[str, Any], int, str]] = {}
    order = schemas.get(kind.api_version, kind.kind)
    if order is not None:
        roots["order"] = (order, 1, "order")
        status = order.get("properties", {}).get("status") if isinstance(order.get("properties"), Mapping) else None
        if isinstance(status, Mapping):
            roots["status"] = ({"type": "object", "properties": {"status": status}}, 0, "order")
    for item in kind.inputs.values():
        if item.verb == "served" or not (item.api_version.is_constant and item.kind.is_constant):
            continue
        schema = schemas.get(item.api_version.source, item.kind.source)
        if schema is not None:
            roots[item.name] = (schema, 1 if item.verb == "get" else 2, item.name)
    return roots


def _offset(source: str, word: str, *, root: bool) -> int | None:
    """Where ``word`` first occurs as a whole word (``root``: not after a dot, so a name, not a field)."""
    before = r"(?<![\w$.-])" if root else r"(?<![\w$-])"
    match = re.search(rf"{before}{re.escape(word)}(?![\w-])", source)
    return match.start() if match else None


def check_paths(kind: model.CompiledKind, sites: Iterable[Site], schemas: Schemas) -> list[RuleError]:
    """An error for each path read from the order or a schema'd input that its CRD does not declare."""
    roots = _roots(kind, schemas)
    if not roots:
        return []
    errors: list[RuleError] = []
    seen: set[tuple[Any, ...]] = set()
    for site in sites:
        source = site.expr.source
        paths = query_paths(source) if isinstance(site.expr, Query) else template_paths(source)
        for path in sorted(paths):
            root = roots.get(path[0])
            if root is None:
                continue
            schema, skip, what = root
            if skip == 2 and (len(path) < 2 or path[1] != ELEMENT):
                continue
            if path[0] == "status":
                found = unknown_field(schema, path, what)
            else:
                found = unknown_field(schema, path[skip:], what if skip == 1 else f"{what}[]")
            if found is None or (id(site), found.path) in seen:
                continue
            seen.add((id(site), found.path))
            errors.append(RuleError(word_position(site, found.field), found.message))
    return errors


def check_watch_paths(watch_sites: Iterable[tuple[Site, str, str, str]], schemas: Schemas,
                      skip_roots: frozenset[str] = frozenset()) -> list[RuleError]:
    """An error for each path a watch's query reads from the watched object that the kind's CRD does not declare.

    skip_roots: top-level names reported already (a name of the pass read in a watch)."""
    errors: list[RuleError] = []
    for site, api_version, kind, key in watch_sites:
        schema = schemas.get(api_version, kind)
        if schema is None or not isinstance(site.expr, Query):
            continue
        seen: set[tuple[str, ...]] = set()
        for path in sorted(query_paths(site.expr.source)):
            if path[0] in skip_roots:
                continue
            found = unknown_field(schema, path, kind)
            if found is None or found.path in seen:
                continue
            seen.add(found.path)
            errors.append(RuleError(word_position(site, found.field, root=len(found.path) == 1),
                                    f"watch {key}: {found.message}"))
    return errors


def word_position(site: Site, word: str, *, root: bool = False) -> Position:
    """The position of ``word`` in the expression or template of ``site`` (its value's start if not found)."""
    source = site.expr.source
    if isinstance(site.expr, ObjectTemplate):
        for number, line in enumerate(source.splitlines(), 1):
            offset = _offset(line, word, root=root)
            if offset is not None:
                return Position(site.expr.path, number, offset + 1)
        return Position(site.expr.path, 1, 1)
    assert site.src is not None
    return site.src.locate_token(site.path, _offset(source, word, root=root))
