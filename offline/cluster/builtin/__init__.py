"""Built-in kinds as the API server knows them: their schemas (taken from a real server into ``data.json``),
the typed round trip every write of one goes through, and the server's defaults."""

from __future__ import annotations

from typing import Any

from offline.cluster.builtin.defaults import prepare_for_create, prepare_for_update, set_defaults
from offline.cluster.builtin.schema import Schema, kind_schema, list_keys
from offline.cluster.builtin.typed import decode, zero

__all__ = ["admit", "empty", "encoded", "kind_schema", "list_keys", "prepare_for_create", "prepare_for_update",
           "stored", "unknown_fields"]


def admit(api_version: str, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """A built-in object as the API server stores it: decoded into its type, then defaulted; unchanged for any
    other kind (and for CRDs, whose admission is their own)."""
    schema = _schema(api_version, kind)
    if schema is None:
        return obj
    decoded, _ = decode(obj, schema)
    set_defaults(decoded, schema)
    return decoded


def empty(api_version: str, kind: str) -> dict[str, Any] | None:
    """A new object of a built-in kind as its Go type starts out (its by-value structs there, empty): what a
    create is compared with to tell the fields it sets; None for any other kind."""
    schema = _schema(api_version, kind)
    if schema is None:
        return None
    return {**zero(schema), "apiVersion": api_version, "kind": kind}


def encoded(obj: dict[str, Any]) -> dict[str, Any]:
    """A built-in object as its Go type encodes it (by its own apiVersion and kind): what a view converted from
    another version (a core v1 Event of a stored events.k8s.io/v1 one) looks like on the wire."""
    schema = _schema(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
    return obj if schema is None else decode(obj, schema)[0]


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    """A built-in object as storage gives it back: an empty list or map its type keeps without ``omitempty`` is
    null (protobuf has no empty lists), as every answer after a write shows it."""
    schema = _schema(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
    return obj if schema is None else decode(obj, schema, stored=True)[0]


def unknown_fields(obj: dict[str, Any]) -> list[str] | None:
    """The fields of a built-in object its type does not declare, by path; None for any other kind."""
    schema = _schema(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
    return None if schema is None else decode(obj, schema)[1]


def _schema(api_version: str, kind: str) -> Schema | None:
    if (api_version, kind) == ("apiextensions.k8s.io/v1", "CustomResourceDefinition"):
        return None
    return kind_schema(api_version, kind)
