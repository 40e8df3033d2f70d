"""One HTTP/1.1 connection to the API server and the answers read from it.

http.client parses every answer's headers through the email package and urllib3 wraps each
request in Retry, Timeout and URL objects; for the small JSON answers of an API server that
is most of a request's CPU. This module writes a request as one buffer and reads
from its own receive buffer the head (status line and headers, parsed by llhttp through
httptools; Content-Length, Transfer-Encoding, Connection, Content-Encoding, Retry-After are the
ones that matter) and the body (Content-Length, chunked, or until the server closes), de-framed here.
"""

from __future__ import annotations

import contextlib
import select
import socket
import zlib
from collections.abc import Callable

import httptools

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


_UNSET = object()


class Connection:
    """A socket (plain or TLS) and the bytes received on it but not consumed yet."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.reused = False
        """Whether an earlier request was answered on this connection."""
        self._timeout: object = _UNSET
        """The timeout last set here (none yet: the first request sets its own)."""

    def set_timeout(self, seconds: float | None) -> None:
        """The socket's timeout, set only when it changes: setting it is a system call (and lets go of the
        interpreter lock), and a kept-alive connection's requests mostly ask the same one."""
        if seconds != self._timeout:
            self.sock.settimeout(seconds)
            self._timeout = seconds

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

class _Head:
    """What llhttp reports of one answer's head: the reason and the headers by lower-case name."""

    __slots__ = ("headers", "reason")

    def __init__(self) -> None:
        self.headers: Headers = {}
        self.reason = ""

    def on_status(self, reason: bytes) -> None:
        self.reason = reason.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        text = value.rstrip(b" \t").decode("latin-1")  # llhttp drops the whitespace before a value, not after it
        headers = self.headers
        headers[key] = f"{headers[key]}, {text}" if key in headers else text


def read_head(conn: Connection) -> tuple[int, str, Headers]:
    """The status code, reason and headers of the next answer (1xx answers skipped).

    The head is cut from the buffer here (at most ``MAX_HEAD`` bytes) and parsed by llhttp (httptools): the status
    line, header names and values as RFC 9112 has them; anything else (a line without a colon, a control character
    in a value, whitespace before a name) is refused."""
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
        head = _Head()
        parser = httptools.HttpResponseParser(head)
        try:
            parser.feed_data(conn.take(end + 4))
        except httptools.HttpParserError:
            raise ProtocolFault("the server's answer head is not HTTP/1.x (status line or headers malformed)") from None
        code = parser.get_status_code()
        headers = head.headers
        if parser.get_http_version() == "1.0" and "keep-alive" not in headers.get("connection", "").lower():
            headers.setdefault("connection", "close")
        if 100 <= code < 200 and code != 101:
            continue  # 100 Continue and friends: the real answer follows
        return code, head.reason, headers


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
