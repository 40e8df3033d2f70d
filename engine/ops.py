"""The operator's HTTP endpoints: Prometheus metrics, and the liveness and readiness probes.

Two small servers, as controller-runtime binds them: ``/metrics`` on the metrics
address (default ``:8080``) serves the injected registry, never the global one;
``/healthz`` and ``/readyz`` on the probe address (default ``:8081``) answer 200
``ok`` or 500 with the failing check's name. ``0`` as an address turns its server
off. Each server runs on a daemon thread and stops with ``stop()``.

An endpoint binds its address when it is made and serves once started, so ``engine run``
claims both addresses before it prints or starts anything: an address in use is one line
naming the flag and the port, not a traceback after the banner.
"""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Check = Callable[[], bool]
Route = Callable[[], tuple[int, str, bytes]]
"""Answers a GET: (status, content type, body)."""

TEXT = "text/plain; charset=utf-8"


class BindError(OSError):
    """An address that cannot be listened on; the message names the flag, the address and the port."""


def parse_bind_address(text: str) -> tuple[str, int] | None:
    """``:8080`` -> ("", 8080) (every interface); ``127.0.0.1:0`` -> a free port there; ``0`` -> None (off)."""
    text = text.strip()
    if text in ("0", ""):
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address {text!r} is not [host]:port (or 0 to turn it off)")
    return host.strip("[]"), int(port)


def metrics_routes(registry: CollectorRegistry) -> dict[str, Route]:
    """``/metrics``: the registry in the Prometheus text format."""
    return {"/metrics": lambda: (200, CONTENT_TYPE_LATEST, generate_latest(registry))}


def probe_routes(checks: Mapping[str, Mapping[str, Check]]) -> dict[str, Route]:
    """One route per path, e.g. {"/readyz": {"informers-synced": manager.ready}}: 200 when every check holds."""
    return {path: _probe(named) for path, named in checks.items()}


def _probe(named: Mapping[str, Check]) -> Route:
    def answer() -> tuple[int, str, bytes]:
        failing = []
        for name, check in named.items():
            try:
                ok = check()
            except Exception:  # a probe that raises is a failing probe, not a crashed server
                ok = False
            if not ok:
                failing.append(name)
        if failing:
            return 500, TEXT, ("".join(f"[-]{name} failed\n" for name in failing)).encode()
        return 200, TEXT, b"ok"

    return answer


class _Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class Endpoint:
    """One HTTP server answering GET on a few fixed paths."""

    def __init__(self, address: tuple[str, int], routes: Mapping[str, Route] | None = None, *, name: str) -> None:
        """Binds now (OSError when the address is taken); serves from ``start``."""
        self.name = name
        table = self._routes = dict(routes or {})

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                route = table.get(self.path.split("?", 1)[0])
                status, content_type, body = route() if route is not None else (404, TEXT, b"not found\n")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a probe timed out)
                    self.close_connection = True

            def log_message(self, format: str, *args: object) -> None:  # probes every few seconds: no access log
                return

        server_class = _Server6 if ":" in address[0] else ThreadingHTTPServer
        self._server = server_class(address, Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def address(self) -> tuple[str, int]:
        """The host and port listened on."""
        return str(self._server.server_address[0]), self.port

    def start(self, routes: Mapping[str, Route] | None = None) -> Endpoint:
        """Serve (on ``routes`` too, when given) on a daemon thread."""
        self._routes.update(routes or {})
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"{self.name} http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
        self._server.server_close()


def serve(bind: str, routes: Mapping[str, Route], *, name: str) -> Endpoint | None:
    """Start an endpoint on ``bind`` (see parse_bind_address); None when it is turned off."""
    address = parse_bind_address(bind)
    return None if address is None else Endpoint(address, routes, name=name).start()


def bind(text: str, *, name: str, flag: str) -> Endpoint | None:
    """An endpoint bound to ``text`` and not yet serving; None when turned off; BindError naming
    ``flag`` and the port when the address cannot be listened on."""
    address = parse_bind_address(text)
    if address is None:
        return None
    try:
        return Endpoint(address, name=name)
    except OSError as exc:
        host, port = address
        where = f"port {port}" + (f" on {host}" if host else "")
        in_use = exc.errno == errno.EADDRINUSE
        reason = "is already in use" if in_use else f"cannot be listened on: {exc.strerror or exc}"
        raise BindError(f"{flag} {text}: {where} {reason}") from None
