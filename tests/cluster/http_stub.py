"""A scripted HTTP/1.1 server on 127.0.0.1 for the transport's tests: it records each request and
answers with the raw bytes a test gives, optionally over TLS and hanging up after an answer."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Seen:
    """One request as the server read it."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    connection: int
    """Which accepted connection (0, 1, ...) carried it."""
    peer_cert: dict[str, object] | None = None


@dataclass
class Answer:
    raw: bytes
    close: bool = False
    """Hang up once the answer is sent."""


def ok(body: bytes = b'{"kind": "Thing"}', *, extra: str = "") -> Answer:
    return Answer(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra.encode()
                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)


@dataclass
class Stub:
    """Serves until stopped; ``script`` maps each request to its answer."""

    script: Callable[[Seen], Answer]
    tls: ssl.SSLContext | None = None
    seen: list[Seen] = field(default_factory=list)
    accepted: int = 0

    def __post_init__(self) -> None:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.05)
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._accept_thread = threading.Thread(target=self._accept, daemon=True)
        self._accept_thread.start()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self._listener.getsockname()[1]}"

    def hang_up_idle(self) -> None:
        """Close every connection the server holds (as a server closes idle keep-alive connections)."""
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        self._accept_thread.join(timeout=5)
        self.hang_up_idle()
        for thread in self._threads:
            thread.join(timeout=5)
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            number = self.accepted
            self.accepted += 1
            thread = threading.Thread(target=self._serve, args=(conn, number), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, raw: socket.socket, number: int) -> None:
        conn = raw
        try:
            conn.settimeout(5)
            peer = None
            if self.tls is not None:
                conn = self.tls.wrap_socket(raw, server_side=True)
                peer = conn.getpeercert()  # type: ignore[attr-defined]
            with self._lock:
                self._conns.append(conn)
            buffer = b""
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
                length = int(headers.get("content-length", "0"))
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                body, buffer = buffer[:length], buffer[length:]
                request = Seen(method, target, headers, body, number, peer)
                self.seen.append(request)
                answer = self.script(request)
                conn.sendall(answer.raw)
                if answer.close:
                    return
        except (OSError, ValueError):
            return
        finally:
            conn.close()
