"""String and map functions of the shared registry: text edits, RE2 matching, key lookups, pairs.

Registered into ``registry`` on import (``functions.py`` imports this module), so JMESPath, Jinja and
``engine lint`` see them like every other function. ``keys`` and ``values`` redefine JMESPath's
built-ins with the same result (the object's own key order), so a template gets them too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.expr import regex
from engine.expr.errors import FunctionError
from engine.expr.registry import register

_STR = ("string",)
_OBJ = ("object",)


@register("replace", _STR, _STR, _STR, returns="string")
def replace(s: str, old: str, new: str) -> str:
    """``s`` with every ``old`` replaced by ``new`` (Go's strings.ReplaceAll)."""
    return s.replace(old, new)


@register("split", _STR, _STR, returns="array-string")
def split(s: str, sep: str) -> list[str]:
    """The parts of ``s`` between each ``sep`` (Go's strings.Split: ``''`` splits into characters)."""
    return list(s) if sep == "" else s.split(sep)


@register("lower", _STR, returns="string")
def lower(s: str) -> str:
    """``s`` in lower case (Unicode)."""
    return s.lower()


@register("upper", _STR, returns="string")
def upper(s: str) -> str:
    """``s`` in upper case (Unicode)."""
    return s.upper()


@register("trim", _STR, returns="string")
def trim(s: str) -> str:
    """``s`` without leading and trailing white space (Go's strings.TrimSpace)."""
    return s.strip()


@register("matches", _STR, _STR, returns="boolean", literal_checks={1: regex.check_pattern})
def matches(s: str, pattern: str) -> bool:
    """Whether the WHOLE of ``s`` matches the RE2 ``pattern`` (no lookarounds or backreferences)."""
    return regex.full_match(s, pattern)


@register("get", ("object", "null"), _STR, returns="any")
def get(obj: Mapping[str, Any] | None, key: str) -> Any:
    """The value under ``key`` (which may hold dots, as label keys do), or null."""
    return obj.get(key) if isinstance(obj, Mapping) else None


@register("keys", _OBJ, returns="array-string")
def keys(obj: Mapping[str, Any]) -> list[str]:
    """The object's keys in its own order (as JMESPath's keys())."""
    return list(obj)


@register("values", _OBJ, returns="array")
def values(obj: Mapping[str, Any]) -> list[Any]:
    """The object's values in its own key order (as JMESPath's values())."""
    return list(obj.values())


@register("items", _OBJ, returns="array")
def items(obj: Mapping[str, Any]) -> list[list[Any]]:
    """The object's ``[key, value]`` pairs in its own key order."""
    return [[key, value] for key, value in obj.items()]


@register("from_items", ("array",), returns="object")
def from_items(pairs: list[Any]) -> dict[str, Any]:
    """An object from ``[key, value]`` pairs (string keys; a later pair wins): the inverse of items()."""
    out: dict[str, Any] = {}
    for pair in pairs:
        if not (isinstance(pair, list | tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise FunctionError("from_items(): each item must be a [key, value] pair with a string key")
        out[pair[0]] = pair[1]
    return out
