"""The metrics and probe endpoints over real HTTP on free local ports."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from engine.metrics import Metrics
from engine.ops import Endpoint, metrics_routes, parse_bind_address, probe_routes, serve


def get(endpoint: Endpoint, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def metrics_endpoint(registry: CollectorRegistry) -> Iterator[Endpoint]:
    endpoint = serve("127.0.0.1:0", metrics_routes(registry), name="metrics")
    assert endpoint is not None
    yield endpoint
    endpoint.stop()


def test_metrics_serve_the_injected_registry(registry: CollectorRegistry, metrics_endpoint: Endpoint) -> None:
    """/metrics shows the operator's families with their current values, and nothing of the global registry."""
    metrics = Metrics(registry)
    metrics.set_leader(True)
    metrics.set_queue_depth(3)
    status, body = get(metrics_endpoint, "/metrics")
    assert status == 200
    assert "c5c3_operator_leader_status 1.0" in body
    assert "c5c3_operator_workqueue_depth 3.0" in body
    assert "c5c3_operator_reconcile_duration_seconds" in body
    assert "python_gc_objects_collected_total" not in body


def test_unknown_paths_are_404(metrics_endpoint: Endpoint) -> None:
    """Only the routes given are served."""
    assert get(metrics_endpoint, "/nope")[0] == 404


def test_probes_follow_their_checks() -> None:
    """/readyz is 500 naming the failing check until it holds, then 200 ok; /healthz answers on its own."""
    ready = {"value": False}
    endpoint = serve("127.0.0.1:0", probe_routes({
        "/healthz": {"ping": lambda: True},
        "/readyz": {"informers-synced": lambda: ready["value"]},
    }), name="probes")
    assert endpoint is not None
    try:
        assert get(endpoint, "/healthz") == (200, "ok")
        assert get(endpoint, "/readyz") == (500, "[-]informers-synced failed\n")
        ready["value"] = True
        assert get(endpoint, "/readyz") == (200, "ok")
    finally:
        endpoint.stop()


def test_a_raising_check_fails_the_probe() -> None:
    """A check that raises reads as failing; the server keeps answering."""
    def boom() -> bool:
        raise RuntimeError("cluster unreachable")

    endpoint = serve("127.0.0.1:0", probe_routes({"/readyz": {"boom": boom}}), name="probes")
    assert endpoint is not None
    try:
        assert get(endpoint, "/readyz")[0] == 500
        assert get(endpoint, "/readyz")[0] == 500
    finally:
        endpoint.stop()


def test_stop_frees_the_port(registry: CollectorRegistry) -> None:
    """A stopped endpoint no longer answers."""
    endpoint = serve("127.0.0.1:0", metrics_routes(registry), name="metrics")
    assert endpoint is not None
    port = endpoint.port
    endpoint.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_parse_bind_address() -> None:
    """controller-runtime's forms: :port for every interface, host:port, and 0 for off."""
    assert parse_bind_address(":8080") == ("", 8080)
    assert parse_bind_address("127.0.0.1:9090") == ("127.0.0.1", 9090)
    assert parse_bind_address("[::1]:8081") == ("::1", 8081)
    assert parse_bind_address("0") is None
    assert serve("0", {}, name="off") is None
    with pytest.raises(ValueError, match="not \\[host\\]:port"):
        parse_bind_address("8080x")


def test_a_client_that_hung_up_before_the_answer_is_no_error() -> None:
    """A probe that timed out (the kubelet's under load) has hung up when its answer is written: the endpoint
    drops the answer quietly (the server printed a traceback for each) and goes on serving."""
    endpoint = serve("127.0.0.1:0", {"/metrics": lambda: (200, "text/plain", b"x" * 10_000_000)}, name="metrics")
    assert endpoint is not None
    try:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            client = socket.create_connection(listener.getsockname())
            server_side, address = listener.accept()
        client.sendall(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
        client.close()  # gone before the answer: it resets what is sent to it
        server_side.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)  # the answer cannot all sit in a buffer
        with server_side:
            endpoint._server.finish_request(server_side, address)  # a request thread's work, here
        assert get(endpoint, "/metrics")[0] == 200
    finally:
        endpoint.stop()
