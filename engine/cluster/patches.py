"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), as the API server applies them.

One implementation for the in-memory cluster (which applies patches) and for the engine (which
asks whether a patch would change an object before sending it).
"""

from __future__ import annotations

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
    """RFC 7386 JSON merge patch: null removes a key, objects merge, anything else replaces."""
    if not isinstance(patch, dict):
        return json_copy(patch)
    result = json_copy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


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
    """RFC 6902 JSON patch: add, remove, replace, move, copy and test, applied in order, all or nothing."""
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
            if not isinstance(op, dict) or not isinstance(op.get("path"), str):
                raise _PatchError("missing path")
            name, path = op.get("op"), _pointer(op["path"])
            needs = {"add": "value", "replace": "value", "test": "value", "move": "from", "copy": "from"}.get(
                str(name))
            if name not in ("add", "remove", "replace", "move", "copy", "test"):
                raise _PatchError(f"unexpected kind: {name}")
            if needs and needs not in op:
                raise _PatchError(f"missing {needs}")
            if name == "add":
                doc = _add(doc, path, json_copy(op["value"]))
            elif name == "remove":
                doc = _remove(doc, path)
            elif name == "replace":
                _get(doc, path)
                doc = _add(_remove(doc, path), path, json_copy(op["value"])) if path else json_copy(op["value"])
            elif name == "move":
                source = _pointer(op["from"])
                value = _get(doc, source)
                doc = _add(_remove(doc, source), path, value)
            elif name == "copy":
                doc = _add(doc, path, json_copy(_get(doc, _pointer(op["from"]))))
            elif not _json_equal(_get(doc, path), op["value"]):
                raise _PatchError(f"testing value {op['path']} failed")
        except _PatchError:
            raise Unprocessable() from None
    return doc


def _pointer(text: str) -> list[str]:
    if text == "":
        return []
    if not text.startswith("/"):
        raise _PatchError(f"JSON pointer {text!r} must start with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in text[1:].split("/")]


def _index(container: list[Any], token: str, *, insert: bool) -> int:
    if token == "-" and insert:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise _PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > len(container) or (index == len(container) and not insert):
        raise _PatchError(f"array index {index} out of range")
    return index


def _get(doc: Any, path: list[str]) -> Any:
    node = doc
    for token in path:
        if isinstance(node, dict):
            if token not in node:
                raise _PatchError(f"missing path /{'/'.join(path)}")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, insert=False)]
        else:
            raise _PatchError(f"missing path /{'/'.join(path)}")
    return node


def _add(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent = _get(doc, path[:-1])
    if isinstance(parent, dict):
        parent[path[-1]] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, path[-1], insert=True), value)
    else:
        raise _PatchError(f"missing path /{'/'.join(path[:-1])}")
    return doc


def _remove(doc: Any, path: list[str]) -> Any:
    if not path:
        raise _PatchError("cannot remove the whole document")
    parent = _get(doc, path[:-1])
    if isinstance(parent, dict):
        if path[-1] not in parent:
            raise _PatchError(f"missing path /{'/'.join(path)}")
        del parent[path[-1]]
    elif isinstance(parent, list):
        del parent[_index(parent, path[-1], insert=False)]
    else:
        raise _PatchError(f"missing path /{'/'.join(path)}")
    return doc


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: unlike Python's, true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and isinstance(a, (int, float)) == isinstance(b, (int, float))
