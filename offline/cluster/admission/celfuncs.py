"""The few Kubernetes CEL library functions celpy lacks, for CRD ``x-kubernetes-validations``.

``duration()`` replaces celpy's own so it reads Go syntax exactly (``1h30m``, ``300ms``) and
rejects what Go rejects; the strings extension and the list library follow
https://kubernetes.io/docs/reference/using-api/cel/. A function raising ValueError or TypeError
becomes a CEL evaluation error ("no such overload" for TypeError), as celpy maps them.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Callable
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from offline.cluster.admission import celduration


def duration(value: Any) -> celtypes.DurationType:
    if isinstance(value, celduration.ExactDuration):
        return value
    if isinstance(value, celtypes.DurationType):
        return celduration.ExactDuration(value // dt.timedelta(microseconds=1) * 1000)
    if not isinstance(value, str):
        raise TypeError("no such overload")
    return celduration.parse(str(value))


def lower_ascii(text: Any) -> celtypes.StringType:
    return celtypes.StringType(_string(text).translate(_LOWER))


def upper_ascii(text: Any) -> celtypes.StringType:
    return celtypes.StringType(_string(text).translate(_UPPER))


def trim(text: Any) -> celtypes.StringType:
    return celtypes.StringType(_string(text).strip())


def replace(text: Any, old: Any, new: Any, limit: Any = -1) -> celtypes.StringType:
    return celtypes.StringType(_string(text).replace(_string(old), _string(new), int(limit)))


def split(text: Any, separator: Any, limit: Any = -1) -> celtypes.ListType:
    count = int(limit)
    if count == 0:
        return celtypes.ListType([])
    parts = _string(text).split(_string(separator), count - 1 if count > 0 else -1)
    return celtypes.ListType([celtypes.StringType(part) for part in parts])


def join(items: Any, separator: Any = "") -> celtypes.StringType:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    return celtypes.StringType(_string(separator).join(_string(item) for item in items))


def substring(text: Any, start: Any, end: Any = None) -> celtypes.StringType:
    value = _string(text)
    stop = len(value) if end is None else int(end)
    if not 0 <= int(start) <= stop <= len(value):
        raise ValueError(f"index out of range: {stop if stop > len(value) else int(start)}")
    return celtypes.StringType(value[int(start) : stop])


def char_at(text: Any, index: Any) -> celtypes.StringType:
    value = _string(text)
    if not 0 <= int(index) <= len(value):
        raise ValueError(f"index out of range: {int(index)}")
    return celtypes.StringType(value[int(index) : int(index) + 1])


def index_of(target: Any, needle: Any, start: Any = 0) -> celtypes.IntType:
    if isinstance(target, list):
        return celtypes.IntType(next((i for i, item in enumerate(target) if item == needle), -1))
    return celtypes.IntType(_string(target).find(_string(needle), int(start)))


def last_index_of(target: Any, needle: Any) -> celtypes.IntType:
    if isinstance(target, list):
        return celtypes.IntType(max((i for i, item in enumerate(target) if item == needle), default=-1))
    return celtypes.IntType(_string(target).rfind(_string(needle)))


def is_sorted(items: Any) -> celtypes.BoolType:
    values = _list(items)
    return celtypes.BoolType(all(left <= right for left, right in itertools.pairwise(values)))


def sum_of(items: Any) -> Any:
    values = _list(items)
    return sum(values[1:], values[0]) if values else celtypes.IntType(0)


def min_of(items: Any) -> Any:
    if not _list(items):
        raise ValueError("min called on empty list")
    return min(_list(items))


def max_of(items: Any) -> Any:
    if not _list(items):
        raise ValueError("max called on empty list")
    return max(_list(items))


def find(text: Any, pattern: Any) -> celtypes.StringType:
    match = re.search(_string(pattern), _string(text))
    return celtypes.StringType(match.group(0) if match else "")


def find_all(text: Any, pattern: Any, limit: Any = -1) -> celtypes.ListType:
    found = [celtypes.StringType(m.group(0)) for m in re.finditer(_string(pattern), _string(text))]
    return celtypes.ListType(found if int(limit) < 0 else found[: int(limit)])


def logical_or(left: Any, right: Any) -> Any:
    """cel-go's ``||``: true wins over errors; with no true, the first error is the result."""
    if (_is_bool(left) and bool(left)) or (_is_bool(right) and bool(right)):
        return celtypes.BoolType(True)
    if _is_bool(left) and _is_bool(right):
        return celtypes.BoolType(False)
    return _first_error(left, right)


def logical_and(left: Any, right: Any) -> Any:
    """cel-go's ``&&``: false wins over errors; with no false, the first error is the result."""
    if (_is_bool(left) and not left) or (_is_bool(right) and not right):
        return celtypes.BoolType(False)
    if _is_bool(left) and _is_bool(right):
        return celtypes.BoolType(True)
    return _first_error(left, right)


def has_value(optional: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_optional(optional).present)


def optional_value(optional: Any) -> Any:
    found = _optional(optional)
    if not found.present:
        raise ValueError("optional.none() dereference")
    return found.value


def or_value(optional: Any, default: Any) -> Any:
    found = _optional(optional)
    return found.value if found.present else default


def _optional(value: Any) -> Any:
    if not (hasattr(value, "present") and hasattr(value, "value")):
        raise TypeError("no such overload")
    return value


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "hasValue": has_value,
    "value": optional_value,
    "orValue": or_value,
    "_||_": logical_or,
    "_&&_": logical_and,
    "duration": duration,
    "lowerAscii": lower_ascii,
    "upperAscii": upper_ascii,
    "trim": trim,
    "replace": replace,
    "split": split,
    "join": join,
    "substring": substring,
    "charAt": char_at,
    "indexOf": index_of,
    "lastIndexOf": last_index_of,
    "isSorted": is_sorted,
    "sum": sum_of,
    "min": min_of,
    "max": max_of,
    "find": find,
    "findAll": find_all,
}
"""Name to implementation; celpy calls methods with the receiver first (``'A'.lowerAscii()``)."""


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool | celtypes.BoolType)


def _first_error(left: Any, right: Any) -> CELEvalError:
    for value in (left, right):
        if isinstance(value, CELEvalError):
            return value
    raise TypeError("no such overload")


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("no such overload")
    return str(value)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("no such overload")
    return list(value)
