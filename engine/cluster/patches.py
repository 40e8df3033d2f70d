"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), as the API server applies them.

One implementation for the in-memory cluster (which applies patches) and for the engine (which
asks whether a patch would change an object before sending it).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar, cast

from engine.cluster.api import ApiError, BadRequest, Invalid, Obj

_T = TypeVar("_T")


_LEAVES = frozenset({str, int, float, bool, type(None)})
"""Types a copy shares (immutable): tested first, so a scalar costs no call."""


def json_copy(value: _T) -> _T:
    """A deep copy of JSON-shaped data (faster than copy.deepcopy; every cached read is one)."""
    if isinstance(value, dict):
        return cast(_T, {k: v if type(v) in _LEAVES else json_copy(v) for k, v in value.items()})
    if isinstance(value, list):
        return cast(_T, [v if type(v) in _LEAVES else json_copy(v) for v in value])
    return value


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch as the API server's json-patch library applies it: null removes a key, objects
    merge, anything else replaces. A value new to the document (or replacing a non-object) loses its null members,
    inside its arrays' objects too; an object a non-object replaces is replaced as sent."""
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return _without_nulls(json_copy(patch))
    result = json_copy(target)
    _merge_into(result, patch)
    return result


def _merge_into(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            doc.pop(key, None)
        elif doc.get(key) is None or not isinstance(doc[key], dict):
            doc[key] = _without_nulls(json_copy(value))
        elif not isinstance(value, dict):
            doc[key] = json_copy(value)
        else:
            _merge_into(doc[key], value)


def _without_nulls(value: Any) -> Any:
    """json-patch's pruneNulls: null members of objects go, at any depth (null items of arrays stay)."""
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


class _PatchError(Exception):
    """A JSON patch that does not apply to the document (422), as opposed to a malformed one (400)."""


class Unprocessable(Invalid):
    """A patch that does not apply, as the API server answers it (``NewGenericServerResponse(422)``): a fixed
    message that names no field, and empty details."""

    def __init__(self) -> None:
        super().__init__("the server rejected our request due to an error in our request")

    def status(self) -> Obj:
        return {**super().status(), "details": {}}


class Unexplained(ApiError):
    """An error the API server passes on as it is (500, no reason): what a patch's merge code answers."""

    code, reason = 500, ""

    def status(self) -> Obj:
        return {key: value for key, value in super().status().items() if key != "reason"}


def go_json_type(value: Any) -> str:
    """How Go's JSON decoder names a value it cannot decode: object, array, string, number or bool."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    return "number" if isinstance(value, int | float) else "string"


def json_patch(doc: Any, operations: Any) -> Any:
    """RFC 6902 JSON patch as the API server applies it (evanphx/json-patch v4): add, remove, replace, move, copy
    and test in order, all or nothing; a patch that does not apply is the server's fixed 422. That library's
    leniencies are kept: replacing a missing key of an object sets it, testing a missing key against null (or
    no value) passes, copying a missing key copies null, negative array indices count from the end."""
    if operations is None:
        return json_copy(doc)
    if not isinstance(operations, list):
        raise BadRequest("error decoding patch: json: cannot unmarshal "
                         f"{go_json_type(operations)} into Go value of type []handlers.jsonPatchOp")
    for op in operations:
        if op is not None and not isinstance(op, dict):
            raise BadRequest(f"error decoding patch: json: cannot unmarshal {go_json_type(op)} into Go value of "
                             "type handlers.jsonPatchOp")
        for key in ("op", "path", "from"):
            if isinstance(op, dict) and op.get(key) is not None and not isinstance(op[key], str):
                raise BadRequest(f"error decoding patch: json: cannot unmarshal {go_json_type(op[key])} into Go "
                                 f"struct field jsonPatchOp.{key} of type string")
    doc = json_copy(doc)
    for op in operations:
        try:
            doc = _apply_operation(doc, op if isinstance(op, dict) else {})
        except _PatchError:
            raise Unprocessable() from None
    return doc


_MISSING = object()


def _apply_operation(doc: Any, op: Obj) -> Any:
    kind = op.get("op") if isinstance(op.get("op"), str) else "unknown"
    if kind not in ("add", "remove", "replace", "move", "copy", "test"):
        raise _PatchError(f"Unexpected kind: {kind}")
    path = _path(op, "path")
    value = json_copy(op["value"]) if "value" in op else None
    if kind == "replace" and path == "":
        if not isinstance(value, dict | list):
            raise _PatchError("replace operation value must be object or array")
        return value
    if kind == "test" and path == "":
        if not _json_equal(doc, value):
            raise _PatchError("testing value failed")
        return doc
    if kind in ("move", "copy"):
        source, key = _find(doc, _path(op, "from"))
        found = _get(source, key)
        if kind == "move":
            _remove(source, key)
        else:
            found = json_copy(None if found is _MISSING else found)
        target, key = _find(doc, path)
        _add(target, key, None if found is _MISSING else found)
        return doc
    container, key = _find(doc, path)
    if kind == "add":
        _add(container, key, value)
    elif kind == "remove":
        _remove(container, key)
    elif kind == "replace":
        _get(container, key)
        _set(container, key, value)
    else:
        found = _get(container, key)
        if found is _MISSING:
            if op.get("value") is not None:
                raise _PatchError("testing value failed")
        elif "value" not in op or not _json_equal(found, value):
            raise _PatchError("testing value failed")
    return doc


def _path(op: Obj, key: str) -> str:
    text = op.get(key)
    if not isinstance(text, str):
        raise _PatchError(f"missing {key}")
    return text


def _find(doc: Any, path: str) -> tuple[Any, str]:
    """The container a pointer's last token is in, and that token (``findObject``)."""
    tokens = [part.replace("~1", "/").replace("~0", "~") for part in path.split("/")]
    if len(tokens) < 2:
        raise _PatchError(f"doc is missing path: {path}")
    node = doc
    for token in tokens[1:-1]:
        found = _get(node, token) if isinstance(node, dict | list) else _MISSING
        if not isinstance(found, dict | list):
            raise _PatchError(f"doc is missing path: {path}")
        node = found
    if not isinstance(node, dict | list):
        raise _PatchError(f"doc is missing path: {path}")
    return node, tokens[-1]


def _position(container: list[Any], key: str, *, size: int) -> int:
    """An array index as Go's strconv.Atoi reads it, a negative one counted from ``size``."""
    if not re.fullmatch(r"[-+]?[0-9]+", key):
        raise _PatchError(f"invalid index {key!r}")
    index = int(key)
    if index < 0:
        if index < -size:
            raise _PatchError(f"invalid index {index}")
        index += size
    return index


def _get(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key, _MISSING)
    index = _position(container, key, size=len(container))
    if index >= len(container):
        raise _PatchError(f"invalid index {index}")
    return container[index]


def _set(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
    else:
        container[_position(container, key, size=len(container))] = value


def _add(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    index = int(key) if re.fullmatch(r"[-+]?[0-9]+", key) else None
    if index is None:
        raise _PatchError(f"value was not a proper array index: {key!r}")
    if index > len(container):
        raise _PatchError(f"invalid index {index}")
    container.insert(_position(container, key, size=len(container) + 1), value)


def _remove(container: Any, key: str) -> None:
    if isinstance(container, dict):
        if key not in container:
            raise _PatchError(f"Unable to remove nonexistent key: {key}")
        del container[key]
        return
    if not re.fullmatch(r"[-+]?[0-9]+", key) or int(key) >= len(container):
        raise _PatchError(f"invalid index {key}")
    del container[_position(container, key, size=len(container))]


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: unlike Python's, true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and isinstance(a, (int, float)) == isinstance(b, (int, float))
