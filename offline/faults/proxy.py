"""The fault proxy: one thread per client connection, each with its own keep-alive connection upstream.

Requests are read whole (headers and body), counted by kind, then either answered by the fault in force or
forwarded; answers are relayed as they arrive (a watch chunk by chunk), re-framed on the way back: a body of known
length keeps its Content-Length, any other is sent chunked. Listens on 127.0.0.1 only.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import http.client
import json
import random
import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast
from urllib.parse import urlsplit

from offline.faults.windows import WRITES, Fault, Tally, kind_of

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "transfer-encoding", "upgrade", "content-length", "expect"})
"""Headers that describe one hop, not the message: never forwarded as they came."""

MAX_LINE = 64 * 1024
MAX_HEADERS = 256
MAX_BODY = 64 * 1024 * 1024
CONNECT_TIMEOUT = 5.0
UPSTREAM_TIMEOUT = 330.0
"""Seconds an upstream read may block: longer than the longest watch a client asks for (``engine run``: 300 s)."""

REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
           410: "Expired", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
           503: "ServiceUnavailable", 504: "Timeout"}
"""The Status reason an API server gives with each code."""


class _Closed(Exception):
    """The client closed its connection (or sent something that is no request)."""


@dataclass
class _Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes
    kind: str

    def header(self, name: str) -> str:
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return ""

    @property
    def keep_alive(self) -> bool:
        connection = self.header("connection").lower()
        return "close" not in connection if self.version == "HTTP/1.1" else "keep-alive" in connection


class FaultProxy:
    """A proxy on 127.0.0.1 in front of one API server, with fault windows switched on and off at run time.

    - ``FaultProxy(upstream, *, certificate=None, upstream_ca=None, seed=0)``: ``start()`` / ``stop()`` (or a ``with``
      block), ``url``, ``inject(fault | None)`` (None heals), ``window(fault)`` (injects, yields a live ``Tally`` of
      the requests seen in it, heals on exit), ``tally()`` (a ``Tally`` without a fault), ``counts()``.
    - ``proxied(kubeconfig, proxy, ca=None)``: the kubeconfig with its clusters at the upstream reached through the
      proxy (``ca``: the CA of a TLS proxy's certificate).
    - Request kinds (``KINDS``): ``watch``, ``list``, ``get``, ``write`` (POST, PUT, PATCH, DELETE), ``other``
      (discovery, OpenAPI). A ``Fault`` hits the kinds it names (``kinds=``), a ``share`` of them at random.
    - Faults: ``status(code)`` answers a Status document (429 with ``Retry-After``); ``latency(s)`` holds each request
      that long first (``target=``: only those whose path or query contains it); ``conflict(share)`` answers 409 to
      that share of writes; ``reset()`` resets the connection; ``gone()`` answers watches with a 410 ERROR event;
      ``cut()`` answers watches 200 with ``Transfer-Encoding: chunked`` and closes with no chunk. A window whose fault
      hits watches (all but latency and conflict) first ends the watch streams open through the proxy, so every watch
      meets it.
    """

    def __init__(self, upstream: str, *, certificate: tuple[Path, Path] | None = None,
                 upstream_ca: Path | None = None, seed: int = 0) -> None:
        """upstream: the API server's URL (http or https). certificate: (certificate file, key file) to serve TLS
        with (clients must trust it; a real server's serving certificate names 127.0.0.1); None: plain HTTP.
        upstream_ca: the CA to verify an https upstream with (None: not verified: loopback only). seed: the
        random choice of the requests a ``share`` hits."""
        split = urlsplit(upstream)
        if split.scheme not in ("http", "https") or not split.hostname:
            raise ValueError(f"not an http(s) URL: {upstream!r}")
        self.upstream = upstream
        self._host = split.hostname
        self._port = split.port or (443 if split.scheme == "https" else 80)
        self._upstream_tls: ssl.SSLContext | None = None
        if split.scheme == "https":
            if upstream_ca is not None:
                self._upstream_tls = ssl.create_default_context(cafile=str(upstream_ca))
            else:
                self._upstream_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                self._upstream_tls.check_hostname = False
                self._upstream_tls.verify_mode = ssl.CERT_NONE
        self._serving_tls: ssl.SSLContext | None = None
        if certificate is not None:
            self._serving_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._serving_tls.load_cert_chain(str(certificate[0]), str(certificate[1]))
            self._serving_tls.set_alpn_protocols(["http/1.1"])
        self._lock = threading.Lock()
        self._rand = random.Random(seed)
        self._fault: Fault | None = None
        self._total: collections.Counter[str] = collections.Counter()
        self._tallies: list[Tally] = []
        self._connections: set[_Connection] = set()
        self._stopping = threading.Event()
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- life ---------------------------------------------------------------------

    def start(self) -> FaultProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        self._listener = listener
        port = listener.getsockname()[1]
        self.url = f"{'https' if self._serving_tls else 'http'}://127.0.0.1:{port}"
        self._thread = threading.Thread(target=self._accept, name=f"fault proxy {port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and close every connection, client and upstream."""
        self._stopping.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- faults and counts ----------------------------------------------------------

    def inject(self, fault: Fault | None) -> None:
        """Put a fault in force (None: heal). One that hits watches ends the watch streams open now first."""
        with self._lock:
            self._fault = fault
            streaming = [c for c in self._connections if c.streaming] if fault and fault.ends_open_watches else []
        for connection in streaming:
            connection.end_stream(reset=fault is not None and fault.action == "reset")

    @contextlib.contextmanager
    def window(self, fault: Fault) -> Iterator[Tally]:
        """The fault in force for the block; yields the requests seen meanwhile (closed when the block ends)."""
        with self.tally() as seen:
            self.inject(fault)
            try:
                yield seen
            finally:
                self.inject(None)

    @contextlib.contextmanager
    def tally(self) -> Iterator[Tally]:
        """The requests seen during the block, without a fault."""
        seen = Tally()
        with self._lock:
            self._tallies.append(seen)
        try:
            yield seen
        finally:
            with self._lock:
                self._tallies.remove(seen)
                seen.ended = time.monotonic()

    def counts(self) -> collections.Counter[str]:
        """Every request seen since the start, by kind."""
        with self._lock:
            return collections.Counter(self._total)

    def _seen(self, request: _Request) -> Fault | None:
        """Count a request; the fault it meets, if any."""
        path = urlsplit(request.target).path
        with self._lock:
            self._total[request.kind] += 1
            for tally in self._tallies:
                tally.counts[request.kind] += 1
                tally.paths[(request.kind, path)] += 1
            fault = self._fault
            if fault is None or request.kind not in fault.kinds or fault.target not in request.target:
                return None
            return fault if fault.share >= 1.0 or self._rand.random() < fault.share else None

    # -- connections ------------------------------------------------------------------

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection = _Connection(self, sock)
            with self._lock:
                if self._stopping.is_set():
                    sock.close()
                    return
                self._connections.add(connection)
            threading.Thread(target=connection.serve, name="fault proxy connection", daemon=True).start()

    def _forget(self, connection: _Connection) -> None:
        with self._lock:
            self._connections.discard(connection)

    def _upstream(self) -> http.client.HTTPConnection:
        if self._upstream_tls is not None:
            return http.client.HTTPSConnection(self._host, self._port, timeout=CONNECT_TIMEOUT,
                                               context=self._upstream_tls)
        return http.client.HTTPConnection(self._host, self._port, timeout=CONNECT_TIMEOUT)

    @property
    def upstream_host(self) -> str:
        return f"{self._host}:{self._port}"


class _Connection:
    """One client connection and its upstream connection."""

    def __init__(self, proxy: FaultProxy, sock: socket.socket) -> None:
        self._proxy = proxy
        self._sock = sock
        self._rfile: BinaryIO | None = None
        self._upstream: http.client.HTTPConnection | None = None
        self._upstream_sock: socket.socket | None = None
        """The upstream connection's socket (http.client hands it to an answer that closes the connection)."""
        self._lock = threading.Lock()
        self.streaming = False
        """Whether a watch's answer is being relayed now."""
        self._ending: str | None = None
        """Set by ``end_stream``: how to end the stream relayed now (``clean`` or ``reset``)."""

    # -- called from other threads ------------------------------------------------------

    def end_stream(self, *, reset: bool) -> None:
        """End the answer being relayed: cleanly (its last chunk) or by a reset."""
        with self._lock:
            self._ending = "reset" if reset else "clean"
            sock = self._upstream_sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes the relaying thread's read

    def close(self) -> None:
        for sock in (self._sock, self._upstream_sock):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    # -- the connection's own thread ------------------------------------------------------

    def serve(self) -> None:
        try:
            if self._proxy._serving_tls is not None:
                self._sock.settimeout(CONNECT_TIMEOUT)
                self._sock = self._proxy._serving_tls.wrap_socket(self._sock, server_side=True)
                self._sock.settimeout(None)
            self._rfile = self._sock.makefile("rb")
            while True:
                request = self._read_request()
                if request is None:
                    return
                fault = self._proxy._seen(request)
                if not self._answer(request, fault):
                    return
        except (_Closed, OSError, ssl.SSLError, http.client.HTTPException):
            return
        finally:
            self._proxy._forget(self)
            if self._upstream is not None:
                self._upstream.close()
            if self._rfile is not None:
                self._rfile.close()
            with contextlib.suppress(OSError):
                self._sock.close()

    def _answer(self, request: _Request, fault: Fault | None) -> bool:
        """Answer one request; whether the connection carries on."""
        if fault is None or fault.action == "latency":
            if fault is not None and self._proxy._stopping.wait(fault.delay):
                return False
            return self._forward(request)
        if fault.action == "reset":
            self._reset()
            return False
        if fault.action == "cut":
            self._send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            return False
        if fault.action == "gone":
            event = {"type": "ERROR", "object": _status_document(410, "too old resource version (fault proxy)")}
            line = json.dumps(event).encode() + b"\n"
            self._send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                       + self._connection_header(request) + b"\r\n"
                       + f"{len(line):x}\r\n".encode() + line + b"\r\n0\r\n\r\n")
            return request.keep_alive
        body = json.dumps(_status_document(fault.code, f"injected by the fault proxy ({fault.code})")).encode()
        extra = f"Retry-After: {fault.retry_after}\r\n".encode() if fault.retry_after is not None else b""
        phrase = http.client.responses.get(fault.code, "Error")
        self._send(f"HTTP/1.1 {fault.code} {phrase}\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n".encode() + extra + self._connection_header(request) + b"\r\n"
                   + (body if request.method != "HEAD" else b""))
        return request.keep_alive

    def _forward(self, request: _Request) -> bool:
        response = self._exchange(request)
        if response is None:
            self._reset()
            return False
        headers = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
        head = f"HTTP/1.1 {response.status} {response.reason}\r\n".encode()
        head += b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in headers)
        keep = request.keep_alive
        bodiless = request.method == "HEAD" or response.status in (204, 304) or 100 <= response.status < 200
        if bodiless:
            response.read()
            self._send(head + self._connection_header(request) + b"\r\n")
        elif response.length is not None and not response.chunked:
            body = response.read()
            self._send(head + f"Content-Length: {len(body)}\r\n".encode() + self._connection_header(request)
                       + b"\r\n" + body)
        else:
            keep = self._relay(request, response, head) and keep
        if response.will_close or not keep:
            response.close()
            self._drop_upstream()
        return keep

    def _relay(self, request: _Request, response: http.client.HTTPResponse, head: bytes) -> bool:
        """Relay an answer of unknown length (a watch) chunk by chunk; whether it ended as a message should."""
        with self._lock:
            self.streaming = request.kind == "watch"
            ending = self._ending = None
        self._send(head + b"Transfer-Encoding: chunked\r\n" + self._connection_header(request) + b"\r\n")
        failed = False
        try:
            while True:
                try:
                    data = response.read1(65536)
                except (OSError, http.client.HTTPException, ValueError):
                    failed = True
                    break
                if not data:
                    break
                self._send(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        finally:
            with self._lock:
                self.streaming = False
                ending = self._ending
                self._ending = None
        if ending is not None or failed:
            response.close()
            self._drop_upstream()
        if ending == "reset" or (failed and ending is None):
            self._reset()  # the upstream failed mid-answer: so does the proxy
            return False
        self._send(b"0\r\n\r\n")
        return True

    def _exchange(self, request: _Request) -> http.client.HTTPResponse | None:
        """Send a request upstream (again on a fresh connection when a kept one turns out closed); its answer."""
        for attempt in (0, 1):
            fresh = self._upstream is None
            if fresh:
                with self._lock:
                    self._upstream = self._proxy._upstream()
            upstream = self._upstream
            assert upstream is not None
            try:
                upstream.putrequest(request.method, request.target, skip_host=True, skip_accept_encoding=True)
                upstream.putheader("Host", self._proxy.upstream_host)
                for key, value in request.headers:
                    if key.lower() not in HOP_BY_HOP and key.lower() != "host":
                        upstream.putheader(key, value)
                if request.body or request.method in WRITES:
                    upstream.putheader("Content-Length", str(len(request.body)))
                upstream.endheaders(request.body or None)
                with self._lock:
                    self._upstream_sock = upstream.sock
                if upstream.sock is not None:
                    upstream.sock.settimeout(UPSTREAM_TIMEOUT)
                return upstream.getresponse()
            except (OSError, http.client.HTTPException):
                self._drop_upstream()
                if fresh or attempt:
                    return None
        return None

    def _drop_upstream(self) -> None:
        with self._lock:
            upstream, self._upstream = self._upstream, None
            self._upstream_sock = None
        if upstream is not None:
            upstream.close()

    def _read_request(self) -> _Request | None:
        rfile = self._rfile
        assert rfile is not None
        line = rfile.readline(MAX_LINE + 1)
        while line in (b"\r\n", b"\n"):  # stray empty lines between requests are allowed
            line = rfile.readline(MAX_LINE + 1)
        if not line:
            return None
        try:
            method, target, version = line.decode("latin-1").split()
        except ValueError:
            raise _Closed("not a request line") from None
        headers: list[tuple[str, str]] = []
        while True:
            header = rfile.readline(MAX_LINE + 1)
            if not header:
                raise _Closed("closed within the headers")
            if header in (b"\r\n", b"\n"):
                break
            if len(headers) >= MAX_HEADERS or b":" not in header:
                raise _Closed("malformed headers")
            key, _, value = header.decode("latin-1").partition(":")
            headers.append((key.strip(), value.strip()))
        request = _Request(method, target, version, headers, b"", kind_of(method, target))
        if request.header("expect").lower() == "100-continue":
            self._send(b"HTTP/1.1 100 Continue\r\n\r\n")
        if "chunked" in request.header("transfer-encoding").lower():
            request.body = self._read_chunked(rfile)
        elif (length := request.header("content-length")):
            if not length.isdigit() or int(length) > MAX_BODY:
                raise _Closed("bad Content-Length")
            request.body = rfile.read(int(length))
            if len(request.body) != int(length):
                raise _Closed("closed within the body")
        return request

    @staticmethod
    def _read_chunked(rfile: BinaryIO) -> bytes:
        parts: list[bytes] = []
        size = 0
        while True:
            line = rfile.readline(MAX_LINE + 1)
            try:
                chunk = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise _Closed("malformed chunked body") from None
            if chunk == 0:
                while rfile.readline(MAX_LINE + 1) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            size += chunk
            if size > MAX_BODY:
                raise _Closed("body too large")
            parts.append(rfile.read(chunk))
            rfile.readline(MAX_LINE + 1)

    @staticmethod
    def _connection_header(request: _Request) -> bytes:
        return b"Connection: keep-alive\r\n" if request.keep_alive else b"Connection: close\r\n"

    def _send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def _reset(self) -> None:
        """Close the client connection with a TCP reset."""
        if self._rfile is not None:
            self._rfile.close()  # else the socket's close waits for it
        with contextlib.suppress(OSError):
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            self._sock.close()


def proxied(kubeconfig: dict[str, Any], proxy: FaultProxy, *, ca: Path | None = None) -> dict[str, Any]:
    """A copy of a kubeconfig whose clusters served by the proxy's upstream are reached through the proxy instead;
    ca: the CA of the proxy's certificate (a TLS proxy), put in their place of the upstream's."""
    doc = cast(dict[str, Any], json.loads(json.dumps(kubeconfig)))
    for entry in doc.get("clusters") or ():
        cluster = entry.get("cluster") or {}
        if str(cluster.get("server") or "").rstrip("/") == proxy.upstream.rstrip("/"):
            cluster["server"] = proxy.url
            cluster.pop("certificate-authority", None)
            if ca is not None:
                cluster["certificate-authority-data"] = base64.b64encode(ca.read_bytes()).decode()
            else:
                cluster.pop("certificate-authority-data", None)
    return doc


def _status_document(code: int, message: str) -> dict[str, object]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": REASONS.get(code, "Unknown"), "code": code}
