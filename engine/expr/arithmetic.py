"""Number functions of the shared function registry: add, sub, mul, integer parsing, integer ranges.

Registered into ``registry`` on import (``functions.py`` imports this module). Integral results are ints, so a
template prints 3 rather than 3.0.
"""

from __future__ import annotations

import math
import re
from typing import Any

from engine.expr.errors import FunctionError
from engine.expr.registry import register as _register

_STR = ("string",)
_NUM = ("number",)
_ANY: tuple[str, ...] = ()


def _whole(x: float) -> int | float:
    """An integral float as an int, so results print as 3 rather than 3.0."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


@_register("add", _NUM, _NUM, returns="number")
def add(a: float, b: float) -> int | float:
    """a + b."""
    return _whole(a + b)


@_register("sub", _NUM, _NUM, returns="number")
def sub(a: float, b: float) -> int | float:
    """a - b."""
    return _whole(a - b)


@_register("mul", _NUM, _NUM, returns="number")
def mul(a: float, b: float) -> int | float:
    """a * b."""
    return _whole(a * b)


_INT_TEXT = re.compile(r"[+-]?[0-9]+")


@_register("to_int", _ANY, returns="number|null")
def to_int(value: Any) -> int | None:
    """A decimal integer string or a number as an int (fractions truncated); anything else gives null."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    if isinstance(value, str) and _INT_TEXT.fullmatch(value):
        return int(value)
    return None


@_register("int_or", _ANY, _NUM, returns="number")
def int_or(value: Any, default: float) -> int | float:
    """to_int(value), or ``default`` when that is null."""
    parsed = to_int(value)
    return default if parsed is None else parsed


_INT64_MAX = (1 << 63) - 1


@_register("parse_suffix_int", _STR, _STR, returns="number|null")
def parse_suffix_int(s: str, marker: str) -> int | None:
    """The text after the LAST ``marker`` as a base-10 int64 >= 1, else null.

    ``parse_suffix_int('x-password-v12', '-password-v')`` is 12.
    """
    at = s.rfind(marker)
    if at < 0 or not marker:
        return None
    tail = s[at + len(marker) :]
    if not _INT_TEXT.fullmatch(tail):
        return None
    value = int(tail)
    return value if 1 <= value <= _INT64_MAX else None


_RANGE_LIMIT = 10000


@_register("range_int", _NUM, _NUM, returns="array-number")
def range_int(start: float, stop: float) -> list[int]:
    """The integers from ``start`` up to but excluding ``stop``; at most 10000 of them."""
    low, high = to_int(start), to_int(stop)
    if low is None or high is None or low != start or high != stop:
        raise FunctionError("range_int(): bounds must be whole numbers")
    if high - low > _RANGE_LIMIT:
        raise FunctionError(f"range_int(): more than {_RANGE_LIMIT} items")
    return list(range(low, high))
