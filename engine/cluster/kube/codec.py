"""JSON in and out of the API server: orjson, with the standard library's ``json`` for what orjson refuses.

orjson decodes an answer or a watch event in a fraction of ``json``'s CPU and shares the map keys it decoded
recently between answers. It is stricter than ``json``: invalid UTF-8, NaN, lone surrogates and (encoding) integers
past 64 bits and keys that are not strings are refused, and those inputs go through ``json`` as they did before. One
difference stays: an integer past 64 bits is read as a float, as the API server itself reads a JSON number (int64,
else float64), so no answer of a server carries one.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def loads(data: bytes | str) -> Any:
    """The JSON value of ``data`` (ValueError when it is not JSON); bytes that are not UTF-8 are read with
    replacement characters."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data.decode("utf-8", "replace") if isinstance(data, bytes) else data)


def dumps(value: Any) -> bytes:
    """``value`` as compact JSON in UTF-8 (TypeError for what is not JSON-shaped)."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("utf-8")
