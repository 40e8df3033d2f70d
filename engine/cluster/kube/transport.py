"""The ApiClient's REST client, replaced by a lean one: pooled HTTP/1.1 connections built once from the
Configuration, requests written as one buffer, answers read by ``http1`` (heads parsed by llhttp).

It keeps the library's REST client's signature and answer shape, so the DynamicClient (discovery), the request
observers and the wire all go through it unchanged, and what that client did: TLS as the Configuration says,
TCP_NODELAY and the configured socket options, connection reuse, a (connect, read) timeout per request, and
urllib3's default retries (a connection that cannot be made is tried three more times; an idempotent request is
sent again when its reused connection dropped before any answer, or when answered 413/429/503 with Retry-After;
a request that timed out is not sent again). A Configuration with a proxy (its own or the environment's) or its
own retry policy keeps the library's client (``install``).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException
from kubernetes.client.rest import RESTClientObject, should_bypass_proxies

from engine.cluster.kube import codec
from engine.cluster.kube.http1 import DECODERS, Body, ConnectFailed, Connection, ConnectionDropped, Headers, read_head

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
"""Methods sent again after a dropped connection or a Retry-After answer (urllib3's default list)."""

RETRY_AFTER_CODES = frozenset({413, 429, 503})

RETRIES = 3
"""Retries of one request in all (urllib3's default)."""

BLOCKS_KEPT = 64
"""Header sets whose lines are remembered (a few per cluster: content types times tokens); all forgotten past it."""

DEFAULT_TIMEOUT = (10.0, 60.0)
"""(connect, read) seconds when a request names none."""


class _Bad(ValueError):
    """A request header holds a line break or control character (a token with a trailing newline?)."""


def install(api_client: ApiClient, pool_size: int) -> None:
    """Give the ApiClient the lean REST client (or, under a proxy or a custom retry policy, the
    library's own with ``pool_size`` connections)."""
    configuration = api_client.configuration
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, pool_size)
    with contextlib.suppress(Exception):
        api_client.rest_client.close()
    if lean_capable(configuration):
        api_client.rest_client = LeanRestClient(configuration)  # type: ignore[assignment]
    else:
        api_client.rest_client = RESTClientObject(configuration)


def lean_capable(configuration: Configuration) -> bool:
    """Whether the lean client can do what this Configuration asks (no proxy, default retries)."""
    proxied = bool(configuration.proxy) and not should_bypass_proxies(configuration.host, configuration.no_proxy or "")
    return not proxied and configuration.retries is None


def tls_context(configuration: Configuration) -> ssl.SSLContext:
    """The TLS settings of a Configuration, as the library's client (urllib3) applies them."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.verify_mode = ssl.CERT_REQUIRED
        context.check_hostname = configuration.assert_hostname is not False
        if configuration.ssl_ca_cert or configuration.ca_cert_data:
            if configuration.ssl_ca_cert:
                context.load_verify_locations(cafile=configuration.ssl_ca_cert)
            if configuration.ca_cert_data:
                context.load_verify_locations(cadata=configuration.ca_cert_data)
        else:
            context.load_default_certs()
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    with contextlib.suppress(NotImplementedError):
        context.set_alpn_protocols(["http/1.1"])
    return context


class LeanRestClient:
    """A drop-in for the library's RESTClientObject on one API server, with its own connection pool."""

    def __init__(self, configuration: Configuration) -> None:
        self.configuration = configuration
        base = str(configuration.host or "")
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("the API server's address is not an http(s) URL")
        self._base = base.rstrip("/")
        self._prefix = parts.path.rstrip("/")
        self._address = (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        self._https = parts.scheme == "https"
        self._tls: ssl.SSLContext | None = None
        """Built at the first connection, as the library's client does: unreadable certificates fail
        the requests (ServerError), not the cluster's construction."""
        self._server_name = configuration.tls_server_name or parts.hostname
        host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
        self._host_line = f"Host: {host}{f':{parts.port}' if parts.port else ''}\r\n"
        self._socket_options: list[tuple[int, int, int]] = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        if configuration.socket_options is not None:
            self._socket_options = list(configuration.socket_options)
        elif getattr(configuration, "keep_alive", False):
            from kubernetes.utils.keepalive import tcp_keepalive_socket_options
            self._socket_options += tcp_keepalive_socket_options()
        self._maxsize = int(configuration.connection_pool_maxsize or 10)
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._blocks: dict[tuple[tuple[str, Any], ...], str] = {}
        """The header lines of the header sets seen (``_block``)."""

    # -- the library's REST client interface --------------------------------------------------

    def close(self) -> None:
        """Close the idle connections (a later request opens new ones)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def request(self, method: str, url: str, headers: dict[str, str] | None = None, body: Any = None,
                post_params: Any = None, _request_timeout: Any = None) -> Response:
        """Send one request; the answer once its headers arrived (its body is read on ``data``)."""
        if post_params:
            raise ApiException(status=0, reason="form parameters are not supported by this client")
        method = method.upper()
        head, payload = self._encode(method, url, headers or {}, body)
        connect_timeout, read_timeout = _timeouts(_request_timeout)
        attempts = 0
        while True:
            attempts += 1
            response = self._attempt(method, head, payload, connect_timeout, read_timeout, retry=attempts <= RETRIES)
            if response is None:
                continue  # a dropped connection or a refused one: sent again
            if (attempts <= RETRIES and response.status in RETRY_AFTER_CODES and method in IDEMPOTENT
                    and "retry-after" in response.headers):
                wait = _retry_after(response.headers["retry-after"], read_timeout)
                if wait is not None:
                    response.release_conn()
                    time.sleep(wait)
                    continue
            return response

    # -- internals ------------------------------------------------------------------------------

    def _encode(self, method: str, url: str, headers: dict[str, str], body: Any) -> tuple[bytes, bytes | None]:
        if url.startswith(self._base):
            target = self._prefix + url[len(self._base):] or "/"
        else:  # a full URL on another host is not ours to reach; a bare path is under the prefix
            parts = urlsplit(url)
            if parts.netloc:
                raise ApiException(status=0, reason="the request's URL is not on this client's API server")
            target = self._prefix + url
        payload: bytes | None
        if body is None:
            payload = None
        elif isinstance(body, bytes):
            payload = body
        elif isinstance(body, str):
            payload = body.encode("utf-8")
        else:
            payload = codec.dumps(body)
        fields = tuple(headers.items())
        try:
            block = self._blocks.get(fields)
        except TypeError:  # a header value that is not hashable: written anew each time
            block = self._block(fields, keep=False)
        if block is None:
            block = self._block(fields)
        if payload is not None:
            length = f"Content-Length: {len(payload)}\r\n"
        elif method in ("POST", "PUT", "PATCH"):
            length = "Content-Length: 0\r\n"
        else:
            length = ""
        return f"{method} {target} HTTP/1.1\r\n{self._host_line}{block}{length}\r\n".encode("latin-1"), payload

    def _block(self, fields: tuple[tuple[str, Any], ...], *, keep: bool = True) -> str:
        """The header lines of a request's headers (checked, in order, Accept-Encoding added when they name none),
        remembered: a cluster's requests carry a few sets of headers (the token changes them now and then), and
        writing each line anew was about ten Python calls a request."""
        lines: list[str] = []
        seen_encoding = False
        for name, value in fields:
            text = str(value)
            if "\n" in text or "\r" in text or "\0" in text or "\n" in name or "\r" in name:
                raise _Bad("Invalid header: a request header holds a line break")
            if name.lower() == "accept-encoding":
                seen_encoding = True
            lines.append(f"{name}: {text}\r\n")
        if not seen_encoding:
            lines.append("Accept-Encoding: identity\r\n")
        block = "".join(lines)
        if not keep:
            return block
        with self._lock:
            if len(self._blocks) >= BLOCKS_KEPT:
                self._blocks.clear()
            self._blocks[fields] = block
        return block

    def _attempt(self, method: str, head: bytes, payload: bytes | None, connect_timeout: float | None,
                 read_timeout: float | None, *, retry: bool) -> Response | None:
        """One try: the answer, or None when the request may be (and will be) sent again."""
        conn = self._take()
        if conn is None:
            try:
                conn = self._connect(connect_timeout)
            except ConnectFailed:
                if retry:
                    return None
                raise
        conn.set_timeout(read_timeout)
        try:
            conn.send(head + payload if payload is not None and len(payload) < 65536 else head)
            if payload is not None and len(payload) >= 65536:
                conn.send(payload)
            code, reason, headers = read_head(conn)
        except (ConnectionDropped, BrokenPipeError, ConnectionResetError):
            conn.close()
            if retry and conn.reused and method in IDEMPOTENT:
                return None
            raise
        except BaseException:
            conn.close()
            raise
        conn.reused = True
        return Response(self, conn, code, reason, headers, empty=method == "HEAD" or code in (204, 304))

    def _take(self) -> Connection | None:
        """An idle pooled connection still open, or None."""
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if conn.idle_and_open():
                return conn
            conn.close()

    def _connect(self, timeout: float | None) -> Connection:
        try:
            sock = socket.create_connection(self._address, timeout=timeout)
        except OSError as exc:
            raise ConnectFailed(f"cannot connect to {self._address[0]}:{self._address[1]}: {exc}",
                                timed_out=isinstance(exc, TimeoutError)) from exc
        try:
            for option in self._socket_options:
                sock.setsockopt(*option)
            if self._https:
                if self._tls is None:
                    self._tls = tls_context(self.configuration)
                sock = self._tls.wrap_socket(sock, server_hostname=self._server_name)
        except BaseException:
            sock.close()
            raise
        return Connection(sock)

    def give_back(self, conn: Connection) -> None:
        """Pool a connection whose answer was read to its end."""
        with self._lock:
            if len(self._idle) < self._maxsize:
                self._idle.append(conn)
                return
        conn.close()


class Response:
    """An answer: status and headers now, the body on ``data`` (or piece by piece with ``read1``).

    Shaped like both the library's RESTResponse and the urllib3 response it wraps (``response``
    is the answer itself), since the ApiClient, the DynamicClient and the wire read one or the other."""

    def __init__(self, client: LeanRestClient, conn: Connection, status: int, reason: str, headers: Headers,
                 *, empty: bool) -> None:
        self._client = client
        self._conn: Connection | None = conn
        self.status = status
        self.reason = reason
        self.headers = headers
        self._body = Body(conn, headers, empty=empty)
        self._keep = self._body.reusable and "close" not in headers.get("connection", "").lower()
        self._data: bytes | None = None
        self.chunked = False  # the de-framing is ours: readers use read1
        if self._body.done:
            self._data = b""
            self.release_conn()

    @property
    def response(self) -> Response:
        return self

    @property
    def data(self) -> bytes:
        """The whole body (read now if need be), decoded if the server compressed it anyway."""
        if self._data is None:
            try:
                raw = self._body.read_all()
            except BaseException:
                self.close()
                raise
            self.release_conn()
            decoder = DECODERS.get(self.headers.get("content-encoding", "").lower())
            self._data = decoder(raw) if decoder is not None else raw
        return self._data

    def read(self) -> bytes:
        return self.data

    def read1(self, amt: int = -1) -> bytes:
        """The next bytes of the body as they arrive; b"" at its end."""
        if self._data is not None or self._conn is None:
            return b""
        data = self._body.read1()
        if self._body.done:
            self.release_conn()
        return data

    def stream(self) -> Iterator[bytes]:
        while piece := self.read1():
            yield piece

    def getheaders(self) -> Headers:
        return self.headers

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)

    def release_conn(self) -> None:
        """Give the connection back to the pool if its answer was read to its end, else close it."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._body.done and self._keep:
            self._client.give_back(conn)
        else:
            conn.close()

    def shutdown(self) -> None:
        """Wake a read of this answer blocked in another thread."""
        conn = self._conn
        if conn is not None:
            conn.shutdown()

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def _timeouts(value: Any) -> tuple[float | None, float | None]:
    """(connect, read) seconds from a request's ``_request_timeout`` (a number: both; a pair: each)."""
    if not value:
        return DEFAULT_TIMEOUT
    if isinstance(value, (int, float)):
        return float(value), float(value)
    connect, read = value
    return connect, read


def _retry_after(value: str, limit: float | None) -> float | None:
    """Seconds a Retry-After header asks for (whole seconds only), capped at the read timeout."""
    text = value.strip()
    if not text.isdigit():
        return None
    seconds = float(text)
    return min(seconds, limit) if limit is not None else seconds
