"""The OpenAPI schemas of the built-in kinds the memory cluster serves, as a real kube-apiserver publishes them
(``data.json``, written by ``python -m tests.differential.builtin_data`` and checked against a real server by a
test): properties, types, required fields, defaults, patch merge keys and strategies, list types, map types; the
Table columns the server prints for each kind; and how their Go types encode empty fields (``encoding.json``,
printed by ``tools/builtin-types`` from the same release's Go types)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.cluster.ssa import ATOMIC_MAP, Keys

DATA_FILE = Path(__file__).with_name("data.json")
ENCODING_FILE = Path(__file__).with_name("encoding.json")

Obj = dict[str, Any]


@functools.cache
def _data() -> Obj:
    loaded: Obj = json.loads(DATA_FILE.read_text())
    return loaded


class Schema:
    """One node of a schema, its ``ref`` followed: what a field may hold and how it merges."""

    __slots__ = ("node", "ref")

    def __init__(self, node: Obj) -> None:
        ref = node.get("ref")
        if isinstance(ref, str):
            # The property's own keywords (patch strategy, default) over the referenced definition's.
            target = _data()["schemas"][ref]
            node = {**target, **{k: v for k, v in node.items() if k != "ref"}}
        self.node = node
        self.ref = ref if isinstance(ref, str) else None

    def field(self, name: str) -> Schema | None:
        found = (self.node.get("properties") or {}).get(name)
        return Schema(found) if isinstance(found, dict) else None

    @property
    def fields(self) -> dict[str, Obj]:
        found: dict[str, Obj] = self.node.get("properties") or {}
        return found

    @property
    def items(self) -> Schema | None:
        found = self.node.get("items")
        return Schema(found) if isinstance(found, dict) else None

    @property
    def values(self) -> Schema | None:
        """The schema of a map's values (``additionalProperties``)."""
        found = self.node.get("additionalProperties")
        return Schema(found) if isinstance(found, dict) else None

    @property
    def type(self) -> str:
        return str(self.node.get("type") or "")

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.node.get("required") or ())

    @property
    def patch_strategies(self) -> tuple[str, ...]:
        text = str(self.node.get("x-kubernetes-patch-strategy") or "")
        return tuple(part for part in text.split(",") if part)

    @property
    def merge_key(self) -> str:
        return str(self.node.get("x-kubernetes-patch-merge-key") or "")

    @property
    def list_type(self) -> str:
        return str(self.node.get("x-kubernetes-list-type") or "")

    @property
    def map_keys(self) -> tuple[str, ...]:
        return tuple(self.node.get("x-kubernetes-list-map-keys") or ())

    @property
    def atomic_map(self) -> bool:
        return self.node.get("x-kubernetes-map-type") == "atomic"

    @property
    def int_or_string(self) -> bool:
        return bool(self.node.get("x-kubernetes-int-or-string"))

    @property
    def open(self) -> bool:
        """Whether the node keeps fields it does not declare (an embedded object, a free-form value)."""
        return bool(self.node.get("x-kubernetes-preserve-unknown-fields")) or (
            self.type in ("", "object") and "properties" not in self.node and "additionalProperties" not in self.node
            and not self.int_or_string)

    @property
    def has_default(self) -> bool:
        return "default" in self.node

    @property
    def default(self) -> Any:
        return self.node.get("default")


@functools.cache
def _encoding() -> dict[str, dict[str, Any]]:
    loaded: dict[str, dict[str, Any]] = json.loads(ENCODING_FILE.read_text())
    return loaded


def encoding(definition: str | None) -> dict[str, Any]:
    """How the Go type of a definition writes its empty fields (``tools/builtin-types``): per JSON field
    ``"omit"`` (an empty value is dropped), ``"pointer"`` (dropped when null, kept when set, even to an empty
    value) or the JSON written when the field is not set (``""``, ``0``, ``false``, ``null``, ``{}``...)."""
    return _encoding().get(definition or "", {})


def kind_schema(api_version: str, kind: str) -> Schema | None:
    """The schema of a built-in kind, or None for any other kind."""
    name = _data()["kinds"].get(f"{api_version}/{kind}")
    return Schema({"ref": name}) if name else None


def columns(api_version: str, kind: str) -> list[Obj] | None:
    """The Table columns a real server prints for a built-in kind (name, type, format, priority)."""
    found = _data()["columns"].get(f"{api_version}/{kind}")
    return [dict(c) for c in found] if found is not None else None


def kinds() -> list[str]:
    """``apiVersion/kind`` of every kind the data describes."""
    return list(_data()["kinds"])


@functools.cache
def list_keys(api_version: str, kind: str) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Server-side apply's granular lists and atomic maps of a built-in kind, by field path: a list-type map
    by its keys, a set by (), an atomic map by ``ATOMIC_MAP``. Lists not named are atomic."""
    root = kind_schema(api_version, kind)
    found: dict[tuple[str, ...], tuple[str, ...]] = {}
    if root is None:
        return found
    for path, node, item in _walk(root, (), (), False):
        if item:
            continue  # an atomic list item is owned through its list
        if node.type == "array":
            if node.list_type == "map":
                fields = node.items.fields if node.items is not None else {}
                found[path] = Keys(node.map_keys, {key: fields[key]["default"] for key in node.map_keys
                                                   if fields.get(key, {}).get("default") not in (None, "", 0)})
            elif node.list_type == "set":
                found[path] = ()
        elif node.atomic_map:
            found[path] = ATOMIC_MAP
    return found


def _walk(node: Schema, path: tuple[str, ...], refs: tuple[str, ...],
          item: bool) -> Iterator[tuple[tuple[str, ...], Schema, bool]]:
    """Every node reachable through properties and list items (an item has its list's path), a recursive
    definition entered once per path."""
    if node.ref is not None:
        if node.ref in refs:
            return
        refs = (*refs, node.ref)
    yield path, node, item
    items = node.items
    if items is not None:
        yield from _walk(items, path, refs, True)
    for name, sub in node.fields.items():
        yield from _walk(Schema(sub), (*path, name), refs, False)
