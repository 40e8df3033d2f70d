"""Protobuf request bodies of the core kinds the emulator serves, read into JSON objects.

kubectl's typed commands (``kubectl create namespace|secret|configmap``) send
``application/vnd.kubernetes.protobuf`` whatever the server prefers. This reads that
envelope (``k8s\\0`` magic, then a ``runtime.Unknown`` holding the type and the raw message)
for Namespace, Secret and ConfigMap, with the ObjectMeta fields a client may set; anything
else is a 415 asking for JSON. Answers stay JSON: the clients accept it.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from engine.cluster.api import Obj, UnsupportedMediaType

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"

Schema = dict[int, tuple[str, Any]]
"""A message: field number → (JSON name, type). A type is a scalar name, ``repeated:<type>``,
``map:string``, ``map:bytes`` or a nested Schema."""

_OWNER: Schema = {
    1: ("kind", "string"), 3: ("name", "string"), 4: ("uid", "string"), 5: ("apiVersion", "string"),
    6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool"),
}
_META: Schema = {
    1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
    6: ("resourceVersion", "string"), 11: ("labels", "map:string"), 12: ("annotations", "map:string"),
    13: ("ownerReferences", ("repeated", _OWNER)), 14: ("finalizers", ("repeated", "string")),
}
_KINDS: dict[tuple[str, str], Schema] = {
    ("v1", "Namespace"): {1: ("metadata", _META), 2: ("spec", {1: ("finalizers", ("repeated", "string"))})},
    ("v1", "Secret"): {1: ("metadata", _META), 2: ("data", "map:bytes"), 3: ("type", "string"),
                       4: ("stringData", "map:string"), 5: ("immutable", "bool")},
    ("v1", "ConfigMap"): {1: ("metadata", _META), 2: ("data", "map:string"), 3: ("binaryData", "map:bytes"),
                          4: ("immutable", "bool")},
}
_UNKNOWN: Schema = {1: ("typeMeta", {1: ("apiVersion", "string"), 2: ("kind", "string")}), 2: ("raw", "raw")}


class _Malformed(Exception):
    pass


def decode(body: bytes) -> Obj:
    """The JSON object a protobuf body holds; UnsupportedMediaType for kinds not read here."""
    if not body.startswith(_MAGIC):
        raise UnsupportedMediaType("the protobuf body lacks the Kubernetes envelope; send application/json")
    try:
        envelope = _message(body[len(_MAGIC):], _UNKNOWN)
        type_meta = envelope.get("typeMeta") or {}
        key = (str(type_meta.get("apiVersion") or ""), str(type_meta.get("kind") or ""))
        schema = _KINDS.get(key)
        if schema is None:
            raise UnsupportedMediaType(f"the emulator reads protobuf only for {', '.join(k for _, k in _KINDS)};"
                                       f" send {key[1] or 'this object'} as application/json")
        obj = _message(envelope.get("raw", b""), schema)
    except _Malformed as err:
        raise UnsupportedMediaType(f"the protobuf body could not be read: {err}") from None
    return {"apiVersion": key[0], "kind": key[1], **obj}


def _fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, raw value) of each field, in order."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise _Malformed("a field runs past the end")
            value, pos = data[pos:pos + size], pos + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, pos = data[pos:pos + width], pos + width
        else:
            raise _Malformed(f"wire type {wire} is not supported")
        yield number, wire, value


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise _Malformed("a varint is cut short")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


def _message(data: bytes, schema: Schema) -> Obj:
    out: Obj = {}
    for number, wire, raw in _fields(data):
        if number not in schema:
            continue  # server-owned or unknown fields are dropped, as the server would ignore them
        name, kind = schema[number]
        if isinstance(kind, tuple):
            out.setdefault(name, []).append(_value(kind[1], wire, raw))
        elif isinstance(kind, str) and kind.startswith("map:"):
            entry = _message(raw, {1: ("key", "string"), 2: ("value", kind[4:])})
            out.setdefault(name, {})[entry.get("key", "")] = entry.get("value", "")
        else:
            value = _value(kind, wire, raw)
            if value not in ("", False) or name in ("key", "value"):
                out[name] = value  # Go writes unset optional fields as zero values; JSON omits them
    return out


def _value(kind: Any, wire: int, raw: Any) -> Any:
    if isinstance(kind, dict):
        return _message(_bytes(wire, raw), kind)
    if kind == "string":
        return _bytes(wire, raw).decode("utf-8", errors="replace")
    if kind == "bytes":
        return base64.b64encode(_bytes(wire, raw)).decode()
    if kind == "raw":
        return _bytes(wire, raw)
    if kind == "bool":
        return bool(raw) if wire == 0 else _fail("a bool is not a varint")
    if kind == "int":
        return raw if wire == 0 else _fail("an integer is not a varint")
    return _fail(f"unknown field type {kind!r}")


def _bytes(wire: int, raw: Any) -> bytes:
    if wire != 2 or not isinstance(raw, bytes):
        raise _Malformed("a length-delimited field has another wire type")
    return raw


def _fail(message: str) -> Any:
    raise _Malformed(message)
