"""One HTTP/1.1 connection to the API server and the answers read from it, parsed by hand.

http.client parses every answer's headers through the email package and urllib3 wraps each
request in Retry, Timeout and URL objects; for the small JSON answers of an API server that
is most of a request's CPU (issue 11). This module writes a request as one buffer and reads
the status line, the headers (Content-Length, Transfer-Encoding, Connection,
Content-Encoding, Retry-After are the ones that matter) and the body (Content-Length,
chunked, or until the server closes) from its own receive buffer.
"""

from __future__ import annotations

import contextlib
import select
import socket
import zlib
from collections.abc import Callable

RECV_SIZE = 65536
"""Bytes asked of the socket per read."""

MAX_HEAD = 256 * 1024
"""Bytes of status line and headers accepted before the answer is refused as malformed."""


class ConnectFailed(OSError):
    """No connection to the API server could be made (refused, unresolvable, no route, timed out)."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class ProtocolFault(OSError):
    """The server broke the HTTP framing (or hung up mid-answer): the connection is unusable."""


class ConnectionDropped(ProtocolFault):
    """The connection ended before the first byte of an answer (a server that closed an idle connection)."""


class Connection:
    """A socket (plain or TLS) and the bytes received on it but not consumed yet."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.reused = False
        """Whether an earlier request was answered on this connection."""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def fill(self) -> bool:
        """Receive more bytes into the buffer; False when the server closed the connection."""
        data = self.sock.recv(RECV_SIZE)
        if not data:
            return False
        self.buffer += data
        return True

    def take(self, count: int) -> bytes:
        with memoryview(self.buffer) as view:
            data = bytes(view[:count])
        del self.buffer[:count]
        return data

    def line(self) -> bytes:
        """One CRLF-terminated line (without its terminator)."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                return self.take(end + 1).rstrip(b"\r\n")
            if len(self.buffer) > MAX_HEAD:
                raise ProtocolFault("the server sent a line longer than the limit")
            if not self.fill():
                raise ProtocolFault("the server closed the connection mid-answer")

    def exactly(self, count: int) -> bytes:
        while len(self.buffer) < count:
            if not self.fill():
                raise ProtocolFault("the server closed the connection before the answer's end")
        return self.take(count)

    def idle_and_open(self) -> bool:
        """Whether a pooled connection can carry another request: nothing to read, not closed."""
        if self.buffer:
            return False
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable  # readable while idle: the server closed it (or sent what it should not)

    def shutdown(self) -> None:
        """Wake a read blocked in another thread (safe on a TLS socket: the TLS state is left alone)."""
        with contextlib.suppress(OSError):
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


Headers = dict[str, str]
"""An answer's headers by lower-case name (repeated headers joined with ", ")."""

_ASCII_SPACE = " \t\n\r\x0b\x0c"
"""What ``bytes.strip()`` strips: a header's name and value are cut as their bytes would be, not at the wider
Unicode whitespace ``str.strip()`` knows (a Latin-1 no-break space, \\x85, \\x1c-\\x1f stay)."""


def read_head(conn: Connection) -> tuple[int, str, Headers]:
    """The status code, reason and headers of the next answer (1xx answers skipped)."""
    while True:
        try:
            if not conn.buffer and not conn.fill():
                raise ConnectionDropped("the server closed the connection before answering")
        except ConnectionResetError:
            raise ConnectionDropped("the server reset the connection before answering") from None
        while (end := conn.buffer.find(b"\r\n\r\n")) < 0:
            if len(conn.buffer) > MAX_HEAD:
                raise ProtocolFault("the server's headers are longer than the limit")
            if not conn.fill():
                raise ProtocolFault("the server closed the connection mid-answer")
        status, _, rest = conn.take(end + 4)[:-4].partition(b"\r\n")
        parts = status.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise ProtocolFault("the server's answer does not begin with an HTTP/1.x status line")
        code = int(parts[1])
        reason = parts[2].decode("latin-1") if len(parts) > 2 else ""
        headers: Headers = {}
        for line in rest.decode("latin-1").split("\r\n") if rest else ():  # decoded once, not twice per line
            name, sep, value = line.partition(":")
            if not sep:
                raise ProtocolFault("the server sent a header line without a colon")
            key = name.strip(_ASCII_SPACE).lower()
            text = value.strip(_ASCII_SPACE)
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        if parts[0] == b"HTTP/1.0" and "keep-alive" not in headers.get("connection", "").lower():
            headers.setdefault("connection", "close")
        if 100 <= code < 200 and code != 101:
            continue  # 100 Continue and friends: the real answer follows
        return code, reason, headers


class Body:
    """An answer's body, read as it arrives and de-framed (Content-Length, chunked, or until close)."""

    def __init__(self, conn: Connection, headers: Headers, *, empty: bool) -> None:
        self._conn = conn
        self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self._remaining: int | None = None
        """Bytes left of a Content-Length body (or of the current chunk); None until close."""
        if empty:
            self._remaining = 0
        elif not self.chunked and length is not None:
            if not length.strip().isdigit():
                raise ProtocolFault("the server sent a Content-Length that is not a number")
            self._remaining = int(length)
        self._chunk_left = 0
        self.done = self._remaining == 0 and not self.chunked
        self.reusable = empty or self.chunked or length is not None
        """Whether the connection can carry another request once this body is read to its end."""

    def read1(self) -> bytes:
        """The next bytes of the body (b"" at its end), blocking only when none are buffered."""
        if self.done:
            return b""
        if self.chunked:
            if not self._chunk_left and (whole := self._whole_chunks()):
                return whole
            parts = [self._chunk()]  # blocks until a chunk arrives; the ones already buffered join it
            if parts[-1] and not self._chunk_left:
                parts.append(self._whole_chunks())
            return b"".join(parts)
        conn = self._conn
        if not conn.buffer and not conn.fill():
            if self._remaining is not None:
                raise ProtocolFault("the server closed the connection before the answer's end")
            self.done = True
            return b""
        count = len(conn.buffer) if self._remaining is None else min(self._remaining, len(conn.buffer))
        data = conn.take(count)
        if self._remaining is not None:
            self._remaining -= count
            self.done = self._remaining == 0
        return data

    def _whole_chunks(self) -> bytes:
        """The data of every whole chunk already in the buffer (a burst of watch events), taken from it at
        once: b"" when the next chunk is not whole yet, is the last one, or is malformed (``_chunk`` reads
        and reports those). One copy and one cut of the buffer, not three per chunk."""
        buffer = self._conn.buffer
        parts: list[bytearray] = []
        at = 0
        while (end := buffer.find(b"\r\n", at)) >= 0:
            try:
                size = int(buffer[at:end].split(b";", 1)[0], 16)
            except ValueError:
                break
            start = end + 2
            if size <= 0 or len(buffer) < start + size + 2 or buffer[start + size:start + size + 2] != b"\r\n":
                break
            parts.append(buffer[start:start + size])
            at = start + size + 2
        if not at:
            return b""
        data = b"".join(parts)
        del buffer[:at]
        return data

    def _chunk(self) -> bytes:
        conn = self._conn
        if self._chunk_left == 0:
            size_line = conn.line().split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise ProtocolFault("the server's chunked framing is malformed") from None
            if size == 0:
                while conn.line():  # trailers, then the empty line
                    pass
                self.done = True
                return b""
            self._chunk_left = size
        if not conn.buffer and not conn.fill():
            raise ProtocolFault("the server closed the connection mid-chunk")
        count = min(self._chunk_left, len(conn.buffer))
        data = conn.take(count)
        self._chunk_left -= count
        if self._chunk_left == 0 and conn.exactly(2) != b"\r\n":
            raise ProtocolFault("the server's chunked framing is malformed")
        return data

    def read_all(self) -> bytes:
        conn = self._conn
        if not self.chunked and self._remaining is not None:
            data = conn.exactly(self._remaining)
            self._remaining, self.done = 0, True
            return data
        parts: list[bytes] = []
        while True:
            piece = self.read1()
            if not piece:
                return b"".join(parts)
            parts.append(piece)


DECODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda data: zlib.decompress(data, 16 + zlib.MAX_WBITS),
    "deflate": zlib.decompress,
}
"""Content-Encodings the server may use though it was asked for identity."""
