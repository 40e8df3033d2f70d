"""Field paths into a CRD schema as the API server resolves them (``cel.ValidFieldPath``).

A rule's ``fieldPath`` and a version's ``selectableFields`` name a field by a JSON path in dot notation
(``.spec.ports``), with ``['key']`` for map keys and names that are not identifiers. A path that does not
resolve through the schema's properties and additionalProperties is refused.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "'": "'", "\\": "\\"}


class PathError(ValueError):
    """A path that does not resolve; the message is the API server's reason."""


def valid_field_path(path: str, schema: Schema) -> bool:
    """Whether ``path`` resolves in ``schema`` (a schema that cannot be read as structural accepts any)."""
    try:
        resolve(path, schema)
    except PathError:
        return False
    return True


def resolve(path: str, schema: Schema, *, array_notation: bool = True) -> tuple[list[str], Schema | None]:
    """The steps of ``path`` and the schema it ends at; PathError when it does not resolve."""
    steps: list[str] = []
    node: Schema | None = schema
    tokens = _tokens(path)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "[":
            if not array_notation:
                raise PathError("array notation is not allowed")
            if i + 1 >= len(tokens):
                raise PathError("unexpected end of JSON path")
            quoted = tokens[i + 1]
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
                raise PathError(f"expected single quoted string but got {quoted}")
            node = _step(node, _unescape(quoted[1:-1]), steps)
            if i + 2 >= len(tokens):
                raise PathError("unexpected end of JSON path")
            if tokens[i + 2] != "]":
                raise PathError(f"expected ] but got {tokens[i + 2]}")
            i += 3
        elif token == ".":
            if i + 1 >= len(tokens):
                raise PathError("unexpected end of JSON path")
            node = _step(node, tokens[i + 1], steps)
            i += 2
        else:
            raise PathError(f"expected [ or . but got: {token}")
    return steps, node


def _step(node: Schema | None, name: str, steps: list[str]) -> Schema | None:
    properties = (node or {}).get("properties")
    extra = (node or {}).get("additionalProperties")
    steps.append(name)
    if isinstance(properties, dict) and properties:
        if name not in properties or not isinstance(properties[name], dict):
            raise PathError("does not refer to a valid field")
        found: Schema = properties[name]
        return found
    if extra is not None:
        return extra if isinstance(extra, dict) else None
    raise PathError("does not refer to a valid field")


def _tokens(path: str) -> list[str]:
    """The path split at ``.``, ``[`` and ``]``; a single-quoted string is one token."""
    tokens: list[str] = []
    i = 0
    while i < len(path):
        char = path[i]
        if char == "'":
            end = i + 1
            while end < len(path) and not (path[end] == "'" and path[end - 1] != "\\"):
                end += 1
            tokens.append(path[i:end + 1])
            i = end + 1
        elif char in ".[]":
            tokens.append(char)
            i += 1
        else:
            end = i
            while end < len(path) and path[end] not in ".[]":
                end += 1
            tokens.append(path[i:end])
            i = end
    return tokens


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            if text[i + 1] not in _ESCAPES:
                raise PathError(f"invalid string literal: invalid escape char {text[i:i + 2]}")
            out.append(_ESCAPES[text[i + 1]])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
