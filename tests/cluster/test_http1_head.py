"""An answer's head is read as its bytes say (the header lines are decoded once, then cut): names lower-cased,
names and values stripped of ASCII whitespace only, repeated headers joined, 1xx answers skipped, and a line
without a colon refused."""

from __future__ import annotations

import pytest
from test_http1_chunks import Socket

from engine.cluster.kube.http1 import Connection, ProtocolFault, read_head


def head(data: bytes) -> tuple[int, str, dict[str, str]]:
    return read_head(Connection(Socket(data)))  # type: ignore[arg-type]


def by_bytes(lines: list[bytes]) -> dict[str, str]:
    """The headers as each line's bytes give them (``bytes.strip``, then Latin-1)."""
    headers: dict[str, str] = {}
    for line in lines:
        name, _, value = line.partition(b":")
        key, text = name.strip().decode("latin-1").lower(), value.strip().decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return headers


def test_headers_are_read_as_their_bytes_say() -> None:
    lines = [b"Content-Type: application/json", b"X-Odd:\t v\xa0\x85 \x0b", b"  Spaced-Name \x0c: a:b ",
             b"Set-Cookie: a=1", b"set-cookie: b=2", b"X-Empty:", b"X-Nbsp: \xa0x\xa0", b"X-Ctl: \x1cy\x1f"]
    code, reason, headers = head(b"HTTP/1.1 200 OK\r\n" + b"\r\n".join(lines) + b"\r\n\r\n{}")
    assert (code, reason) == (200, "OK")
    assert headers == by_bytes(lines)
    assert headers["x-odd"] == "v\xa0\x85" and headers["spaced-name"] == "a:b" and headers["set-cookie"] == "a=1, b=2"
    assert headers["x-nbsp"] == "\xa0x\xa0" and headers["x-ctl"] == "\x1cy\x1f" and headers["x-empty"] == ""


def test_a_head_without_headers_and_a_1xx_answer_before_the_real_one() -> None:
    assert head(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n") == (204, "No Content", {})
    assert head(b"HTTP/1.0 200 OK\r\n\r\n") == (200, "OK", {"connection": "close"})


def test_a_header_line_without_a_colon_is_refused() -> None:
    with pytest.raises(ProtocolFault, match="without a colon"):
        head(b"HTTP/1.1 200 OK\r\nX-A: 1\r\nbroken\r\n\r\n")
