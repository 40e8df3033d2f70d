"""The HTTP side of the emulator: a threaded stdlib server speaking HTTP/1.1 to Kubernetes clients.

Every request gets a Status document when it fails, never a traceback or an HTML page; bodies
are bounded; watches are chunked streams that end when their timeout passes, the client hangs
up or the emulator stops. Nagle's algorithm is off: with it, every request waited for the
peer's delayed ACK (about 40 ms) between the header and body writes.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import select
import socket
import socketserver
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from engine.clock import Clock, SystemClock
from engine.cluster.api import Obj
from offline.cluster.memory import MemoryCluster
from offline.emulator.kubeconfig import kubeconfig
from offline.emulator.requestlog import DEFAULT_SIZE, RequestLog, RequestRecord, now
from offline.emulator.rest import Reply, Request, Rest, Stream, status_document

logger = logging.getLogger(__name__)

MAX_BODY = 3 * 1024 * 1024
"""The largest request body accepted, as the API server's limit on an object."""
DRAIN_LIMIT = 64 * 1024 * 1024
"""How much of a refused body is read and dropped before hanging up."""


class _BadBody(Exception):
    """A request body refused before it reaches the API: too large, or framed wrongly."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status_document(code, reason, message)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], rest: Rest, token: str | None, requests: RequestLog) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.rest = rest
        self.token = token
        self.requests = requests
        self.stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        self.watching: collections.Counter[tuple[str, str]] = collections.Counter()
        """Watch streams open now, by (path, label selector); under ``_connections_lock``."""

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup of the host, which can stall where DNS is absent."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def track(self, conn: socket.socket, *, open_: bool) -> None:
        with self._connections_lock:
            if open_:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def count_watch(self, watched: tuple[str, str], delta: int) -> None:
        with self._connections_lock:
            self.watching[watched] += delta
            if self.watching[watched] <= 0:
                del self.watching[watched]

    def close_connections(self) -> None:
        """Hang up on every client, so that watches and idle keep-alive connections end."""
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("emulator: connection from %s failed", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "kube-emulator"
    server: _Server
    _started: tuple[float, float] | None = None
    """(monotonic, wall) start of the request being served and not logged yet."""
    _streaming = False
    _code = 0
    """The status answered (0: none yet)."""

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, open_=True)

    def finish(self) -> None:
        self.server.track(self.connection, open_=False)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("emulator: " + format, *args)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The stdlib's own refusals (malformed requests) as Status documents too."""
        self.close_connection = True
        try:
            reason = HTTPStatus(code).phrase.replace(" ", "").replace("-", "")
        except ValueError:
            reason = "BadRequest" if code < 500 else "InternalError"
        with contextlib.suppress(OSError):
            self._send(code, status_document(code, reason, message or explain or reason))

    # -------------------------------------------------------------------

    def _serve(self) -> None:
        self._started = now()
        self._streaming = False
        self._code = 0
        try:
            self._answer()
        finally:
            self._logged()

    def _logged(self) -> None:
        """Add this request to the log, once: before its answer's last bytes go out (so a client that has the
        answer finds the request logged), or when a stream or a failed answer ends."""
        if self._started is None:
            return
        (started, wall_started), (ended, wall_ended) = self._started, now()
        self._started = None
        self.server.requests.add(RequestRecord(
            started=started, ended=ended, wall_started=wall_started, wall_ended=wall_ended, method=self.command,
            path=self.path, user_agent=self.headers.get("User-Agent", ""), code=self._code))

    def _answer(self) -> None:
        try:
            try:
                body = self._read_body()
            except _BadBody as refused:
                self.close_connection = True
                self._send(refused.status["code"], refused.status)
                return
            if not self._authorized():
                self._send(401, status_document(401, "Unauthorized", "Unauthorized"))
                return
            url = urlsplit(self.path)
            request = Request(
                method=self.command, path=url.path, query=dict(parse_qsl(url.query, keep_blank_values=True)),
                content_type=self.headers.get("Content-Type", ""), accept=self.headers.get("Accept", ""), body=body,
                user_agent=self.headers.get("User-Agent", ""),
            )
            answer = self.server.rest.handle(request)
            if isinstance(answer, Stream):
                self._stream(answer)
            else:
                self._reply(answer)
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception:
            logger.exception("emulator: %s %s failed", self.command, self.path)
            self.close_connection = True
            if not self._streaming:
                with contextlib.suppress(OSError):
                    self._send(500, status_document(500, "InternalError",
                                                    "an error on the server prevented the request from succeeding"))

    def _authorized(self) -> bool:
        token = self.server.token
        return token is None or self.headers.get("Authorization", "") == f"Bearer {token}"

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise _BadBody(400, "BadRequest", "the Content-Length header is not a number") from None
        if length > MAX_BODY:
            self._discard(length)
            raise _too_large()
        return self.rfile.read(length) if length > 0 else b""

    def _discard(self, length: int) -> None:
        """Read a refused body to its end (up to a bound), so the client sees the refusal, not a reset."""
        left = min(length, DRAIN_LIMIT)
        while left > 0:
            got = self.rfile.read(min(left, 65536))
            if not got:
                return
            left -= len(got)

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            try:
                size = int(self.rfile.readline(64).split(b";")[0].strip() or b"0", 16)
            except ValueError:
                raise _BadBody(400, "BadRequest", "the request body's chunked framing is malformed") from None
            if size == 0:
                while self.rfile.readline(1024).strip():
                    pass  # trailers
                return b"".join(parts)
            total += size
            if total > MAX_BODY:
                raise _too_large()
            parts.append(self.rfile.read(size))
            self.rfile.readline(64)

    def _reply(self, reply: Reply) -> None:
        self._send(reply.code, reply.body, reply.warnings)

    def _send(self, code: int, body: Obj | str, warnings: tuple[str, ...] = ()) -> None:
        if isinstance(body, str):
            data, content_type = body.encode(), "text/plain; charset=utf-8"
        else:
            data, content_type = json.dumps(body, separators=(",", ":")).encode(), "application/json"
        self._code = code
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for warning in warnings:  # RFC 7234 5.5, as the API server sends them: code 299, agent "-"
            self.send_header("Warning", '299 - "{}"'.format(warning.replace("\\", "\\\\").replace('"', '\\"')))
        if self.close_connection:
            self.send_header("Connection", "close")
        if not self._streaming:
            self._logged()
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _stream(self, stream: Stream) -> None:
        self._code = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        # The connection ends with the stream: said up front, so a client never puts it back in its
        # pool and sends its next request into a socket this side is closing (RemoteDisconnected).
        self.send_header("Connection", "close")
        self.end_headers()
        self._streaming = True
        self.close_connection = True
        url = urlsplit(self.path)
        watched = (url.path, dict(parse_qsl(url.query)).get("labelSelector", ""))
        self.server.count_watch(watched, +1)
        try:
            for event in stream.events(self._alive):
                data = json.dumps(event, separators=(",", ":")).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.write(b"0\r\n\r\n")
        finally:
            self.server.count_watch(watched, -1)

    def _alive(self) -> bool:
        """Whether to go on streaming: the server runs and the client has not hung up."""
        if self.server.stopping.is_set():
            return False
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return not readable or self.connection.recv(1, socket.MSG_PEEK) != b""
        except OSError:
            return False


def _too_large() -> _BadBody:
    return _BadBody(413, "RequestEntityTooLarge", f"the request body is larger than {MAX_BODY} bytes")


class Emulator:
    """A Kubernetes API server for tests and development, serving one MemoryCluster over HTTP.

    Bound at construction (``url`` is known at once), served from ``start`` in a daemon thread
    until ``stop``. With a token, requests must carry it as a bearer token; without, any goes.
    ``clock`` dates the Age column of tables (the wall clock by default). ``requests`` records every
    request served (``requestlog``: times, method, path, User-Agent, code; never a body), the newest
    ``request_log_size`` of them (0: none)."""

    def __init__(self, cluster: MemoryCluster, *, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 clock: Clock | None = None, request_log_size: int = DEFAULT_SIZE) -> None:
        self.cluster = cluster
        self._token = token
        self.requests = RequestLog(request_log_size)
        self._server = _Server((host, port), Rest(cluster, clock=clock or SystemClock()), token, self.requests)
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def url(self) -> str:
        host, port = self._server.server_name, self._server.server_port
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def start(self) -> None:
        """Serve in a daemon thread; once only."""
        if self._thread is not None or self._stopped:
            raise RuntimeError("the emulator was already started")
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01},
                                        name=f"emulator {self.url}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, end every watch and connection, release the port. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._server.stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        self._server.close_connections()
        self._server.server_close()

    def __enter__(self) -> Emulator:
        if self._thread is None:
            self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    def open_watches(self) -> dict[tuple[str, str], int]:
        """The watch streams open now, by (path, label selector): how many watches each client keeps.

        A stream the client has closed counts until the emulator notices (at its next event or heartbeat)."""
        with self._server._connections_lock:
            return dict(self._server.watching)

    def kubeconfig(self, name: str = "emulator", *, namespace: str | None = None) -> Obj:
        """A kubeconfig document with one cluster, user and context called ``name``."""
        return kubeconfig(name, self.url, self._token, namespace=namespace)
