"""A chunked body (a watch) read in bursts: every whole chunk already received comes out of one read at the
cost of one cut of the receive buffer, and broken framing is still refused."""

from __future__ import annotations

import io

import pytest

from engine.cluster.kube.http1 import Body, Connection, ProtocolFault


class Socket:
    """Hands out the bytes it was given, at most ``piece`` per receive."""

    def __init__(self, data: bytes, piece: int = 65536) -> None:
        self._data = io.BytesIO(data)
        self._piece = piece

    def recv(self, size: int) -> bytes:
        return self._data.read(min(size, self._piece))


def chunked(*parts: bytes, end: bool = True) -> bytes:
    return b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in parts) + (b"0\r\n\r\n" if end else b"")


def body(data: bytes, piece: int = 65536) -> tuple[Body, Connection]:
    conn = Connection(Socket(data, piece))  # type: ignore[arg-type]
    return Body(conn, {"transfer-encoding": "chunked"}, empty=False), conn


def read_all(reader: Body) -> list[bytes]:
    pieces = []
    while piece := reader.read1():
        pieces.append(piece)
    return pieces


def test_a_burst_of_whole_chunks_is_one_read_and_one_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    events = [b'{"type":"MODIFIED","object":{"n":%d}}\n' % i for i in range(200)]
    reader, conn = body(chunked(*events))
    conn.fill()
    taken: list[int] = []
    original = Connection.take
    monkeypatch.setattr(Connection, "take", lambda self, count: taken.append(count) or original(self, count))
    assert reader.read1() == b"".join(events)
    assert taken == [], "no copy and cut of the buffer per chunk"
    assert reader.read1() == b"" and reader.done


@pytest.mark.parametrize("piece", [1, 7, 64, 65536])
def test_chunks_split_across_receives_come_out_whole_and_in_order(piece: int) -> None:
    events = [b"x" * n + b"\n" for n in (1, 300, 17, 4096, 2)]
    reader, _ = body(chunked(*events, b"tail;") + b"", piece)
    assert b"".join(read_all(reader)) == b"".join(events) + b"tail;"
    assert reader.done


@pytest.mark.parametrize("broken", [b"zz\r\nabc\r\n", b"3\r\nabcXY", b"-1\r\nabc\r\n"])
def test_broken_framing_after_whole_chunks_is_refused(broken: bytes) -> None:
    reader, conn = body(chunked(b"good\n", end=False) + broken + b"0\r\n\r\n")
    conn.fill()
    assert reader.read1() == b"good\n"
    with pytest.raises(ProtocolFault):
        read_all(reader)


def test_a_chunk_extension_is_ignored() -> None:
    reader, _ = body(b"5;name=value\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n")
    assert b"".join(read_all(reader)) == b"helloabc"
