"""List and object functions of the shared function registry: sorted keys, indexing, classifying, conditions,
filters by a dotted path (``where_eq``, ``where_cmp``), ``if_else`` and ``controlled_by``.

Registered into ``registry`` on import (``functions.py`` imports this module). The filters exist because a
JMESPath filter cannot read the root context; these compare against a value taken from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine.expr.errors import FunctionError
from engine.expr.registry import register as _register

_STR = ("string",)
_NUM = ("number",)
_ANY: tuple[str, ...] = ()


@_register("keys_sorted", ("object",), returns="array-string")
def keys_sorted(obj: Mapping[str, Any]) -> list[str]:
    """The object's keys in sorted order (JMESPath's keys() order is unspecified)."""
    return sorted(obj)


@_register("first", ("array", "null"), returns="any")
def first(items: list[Any] | None) -> Any:
    """The first element, or null for an empty array or null."""
    return items[0] if items else None


@_register("index_by", ("array",), _STR, returns="object")
def index_by(items: list[Any], key: str) -> dict[str, Any]:
    """An object mapping each element's ``key`` field (a string) to the element; later elements win."""
    out: dict[str, Any] = {}
    for item in items:
        value = item.get(key) if isinstance(item, Mapping) else None
        if isinstance(value, str):
            out[value] = item
    return out


def _rule_parts(rule: Any) -> tuple[list[str], Any]:
    if (
        isinstance(rule, list | tuple)
        and len(rule) == 2
        and isinstance(rule[0], list | tuple)
        and all(isinstance(s, str) for s in rule[0])
    ):
        return list(rule[0]), rule[1]
    raise FunctionError("classify(): each rule must be [[substring, ...], label]")


@_register("classify", ("array",), ("array",), returns="object|null")
def classify(texts: list[Any], rules: list[Any]) -> dict[str, Any] | None:
    """The first text, in order, that any rule matches (rules tried in order, case-sensitive substrings).

    Returns ``{"label": label, "text": text}``, or null when nothing matches; non-string texts are skipped.
    """
    parsed = [_rule_parts(rule) for rule in rules]
    for text in texts:
        if not isinstance(text, str):
            continue
        for needles, label in parsed:
            if any(needle in text for needle in needles):
                return {"label": label, "text": text}
    return None


@_register("condition", ("object", "null"), _STR, returns="object|null")
def condition(obj: Mapping[str, Any] | None, kind: str) -> Any:
    """The first entry of obj.status.conditions whose type is ``kind``, or null."""
    # ``type(x) is dict`` first: decoded JSON is dicts, and an ABC check costs a Python call (issue 11).
    status = obj.get("status") if type(obj) is dict or isinstance(obj, Mapping) else None
    conditions = status.get("conditions") if type(status) is dict or isinstance(status, Mapping) else None
    if not isinstance(conditions, list | tuple):
        return None
    for entry in conditions:
        if (type(entry) is dict or isinstance(entry, Mapping)) and entry.get("type") == kind:
            return entry
    return None


@_register("condition_true", ("object", "null"), _STR, returns="boolean")
def condition_true(obj: Mapping[str, Any] | None, kind: str) -> bool:
    """Whether obj has a condition of type ``kind`` with status "True"."""
    found = condition(obj, kind)
    return found is not None and found.get("status") == "True"  # condition answers a mapping or None


def _path_value(item: Any, path: str) -> Any:
    node = item
    for key in path.split("."):
        if type(node) is not dict and not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


@_register("where_eq", ("array", "null"), _STR, _ANY, returns="array")
def where_eq(items: list[Any] | None, path: str, value: Any) -> list[Any]:
    """The elements whose dotted ``path`` equals ``value`` (a missing path reads null).

    JMESPath filters cannot read the root context; this compares against a value from it.
    """
    return [item for item in items or [] if _path_value(item, path) == value]


@_register("if_else", _ANY, _ANY, _ANY, returns="any")
def if_else(condition: Any, then: Any, otherwise: Any) -> Any:
    """``then`` when ``condition`` is truthy (JMESPath truthiness: 0 is true), else ``otherwise``."""
    false = condition is None or condition is False or condition == "" or condition == [] or condition == {}
    return otherwise if false else then


@_register("controlled_by", ("object", "null"), ("object", "null"), returns="boolean")
def controlled_by(obj: Mapping[str, Any] | None, owner: Mapping[str, Any] | None) -> bool:
    """Whether ``obj`` has a controller ownerReference to ``owner`` (compared by uid)."""
    if not isinstance(obj, Mapping) or not isinstance(owner, Mapping):
        return False
    uid = _path_value(owner, "metadata.uid")
    refs = _path_value(obj, "metadata.ownerReferences") or []
    return any(isinstance(r, Mapping) and r.get("controller") is True and r.get("uid") == uid for r in refs)


_ORDERINGS: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: bool(a < b),
    "<=": lambda a, b: bool(a <= b),
    ">": lambda a, b: bool(a > b),
    ">=": lambda a, b: bool(a >= b),
}


def _compare(left: Any, op: str, right: Any) -> bool:
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if op in ("in", "not in"):
        if not isinstance(right, list | tuple):
            raise FunctionError(f"where_cmp(): {op!r} needs an array value")
        return (left in right) == (op == "in")
    order = _ORDERINGS.get(op)
    if order is None:
        raise FunctionError("where_cmp(): op must be one of ==, !=, <, <=, >, >=, in, not in")
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (left, right))
    strings = isinstance(left, str) and isinstance(right, str)
    return (numbers or strings) and order(left, right)


@_register("where_cmp", ("array", "null"), _STR, _STR, _ANY, returns="array")
def where_cmp(items: list[Any] | None, path: str, op: str, value: Any) -> list[Any]:
    """The elements whose dotted ``path`` (``''``: the element) compares to ``value`` by ``op``.

    ``op`` is ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` (numbers with numbers, strings with
    strings; anything else is false, as in JMESPath), ``in`` or ``not in`` (``value`` an array).
    Like where_eq, it compares against a value from the root context, which a filter cannot read.
    """
    return [item for item in items or [] if _compare(item if path == "" else _path_value(item, path), op, value)]
