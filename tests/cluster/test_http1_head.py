"""An answer's head is read as RFC 9112 has it (llhttp, through httptools): names lower-cased, values without their
surrounding whitespace, Latin-1 bytes kept, repeated headers joined, 1xx answers skipped; a head that breaks the
grammar (a line without a colon, a control character in a value, whitespace before a name, no HTTP status line) is
refused, never guessed at: the answers of registered target clusters are untrusted input."""

from __future__ import annotations

import pytest
from test_http1_chunks import Socket

from engine.cluster.kube.http1 import MAX_HEAD, Connection, ProtocolFault, read_head


def head(data: bytes) -> tuple[int, str, dict[str, str]]:
    return read_head(Connection(Socket(data)))  # type: ignore[arg-type]


def test_headers_are_read_as_the_grammar_says() -> None:
    lines = [b"Content-Type: application/json", b"X-Odd:\t v\xa0\x85 ", b"Spaced-Value:   a:b  ", b"Set-Cookie: a=1",
             b"set-cookie: b=2", b"X-Empty:", b"X-Nbsp: \xa0x\xa0"]
    code, reason, headers = head(b"HTTP/1.1 200 OK\r\n" + b"\r\n".join(lines) + b"\r\n\r\n{}")
    assert (code, reason) == (200, "OK")
    assert headers == {"content-type": "application/json", "x-odd": "v\xa0\x85", "spaced-value": "a:b",
                       "set-cookie": "a=1, b=2", "x-empty": "", "x-nbsp": "\xa0x\xa0"}


def test_a_head_without_headers_and_a_1xx_answer_before_the_real_one() -> None:
    assert head(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n") == (204, "No Content", {})
    assert head(b"HTTP/1.0 200 OK\r\n\r\n") == (200, "OK", {"connection": "close"})
    assert head(b"HTTP/1.1 200\r\n\r\n") == (200, "", {})


@pytest.mark.parametrize("broken", [
    b"HTTP/1.1 200 OK\r\nX-A: 1\r\nbroken\r\n\r\n", b"HTTP/1.1 200 OK\r\nX-Ctl: \x1cy\x1f\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Vt: a\x0b\r\n\r\n", b"HTTP/1.1 200 OK\r\n  Spaced-Name \x0c: a\r\n\r\n",
    b"FOO 200 OK\r\n\r\n", b"HTTP/1.1 2x0 OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nBad Name: a\r\n\r\n",
])
def test_a_head_that_breaks_the_grammar_is_refused_unquoted(broken: bytes) -> None:
    with pytest.raises(ProtocolFault, match="malformed") as caught:
        head(broken)
    assert "X-" not in str(caught.value) and "FOO" not in str(caught.value)


def test_a_head_past_the_limit_is_refused() -> None:
    with pytest.raises(ProtocolFault, match="longer than the limit"):
        head(b"HTTP/1.1 200 OK\r\n" + b"X-Long: " + b"a" * (2 * MAX_HEAD) + b"\r\n\r\n")
