"""The kube client's JSON codec reads and writes what ``json`` did: orjson where it can, ``json`` for the inputs
orjson refuses (invalid UTF-8, NaN, numbers past 64 bits, lone surrogates, keys that are not strings)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.cluster.kube import codec


@pytest.mark.parametrize("data", [
    b'{"a": 1, "b": [true, null, "x"], "c": {"d": 1.5e3}}', b'{"a": 1, "a": 2}', b'{"n": NaN}',
    b'{"s": "\\ud800"}', b'"\xc3\xa9t\xc3\xa9"', "{\"u\": \"\u00e9\"}",
])
def test_loads_answers_what_json_answers(data: bytes | str) -> None:
    expected = json.loads(data)
    got = codec.loads(data)
    assert repr(got) == repr(expected)


def test_an_integer_past_64_bits_is_read_as_a_float_as_the_api_server_reads_it() -> None:
    """Kubernetes decodes a JSON number into an int64, or a float64 when it does not fit: so does orjson (``json``
    kept it exact, which no API server answer needs)."""
    assert codec.loads(b'{"big": 123456789012345678901234567890}') == {"big": 1.2345678901234568e29}


def test_invalid_utf8_is_read_with_replacement_characters() -> None:
    assert codec.loads(b'{"s": "a\xffb"}') == {"s": "a\ufffdb"}


def test_what_is_not_json_raises_a_value_error() -> None:
    with pytest.raises(ValueError):
        codec.loads(b"{not json")


@pytest.mark.parametrize("value", [
    {"a": [1, 2.5, None, True], "é": "ü"}, {"big": 2**70}, {1: "int key"}, ["x", ("t", "u")],
])
def test_dumps_writes_json_that_reads_back_as_json_would_write_it(value: Any) -> None:
    assert json.loads(codec.dumps(value)) == json.loads(json.dumps(value))


def test_what_is_not_json_shaped_raises_a_type_error() -> None:
    with pytest.raises(TypeError):
        codec.dumps({"a": object()})
