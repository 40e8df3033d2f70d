"""Only our errors cross KubeCluster: Status bodies rebuilt, transport failures named; and the kubeconfig factory."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
import yaml
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from engine.clock import SystemClock
from engine.cluster.api import (
    AlreadyExists,
    BadRequest,
    Cause,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    Timeout,
)
from engine.cluster.kube import KubeCluster, api_client_from_kubeconfig, kube_cluster_from_kubeconfig
from engine.cluster.kube.errors import from_api_exception, from_transport, translated
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator, kubeconfig


def status(code: int, reason: str, message: str, **details: Any) -> ApiException:
    exc = ApiException(status=code, reason="whatever the HTTP reason phrase was")
    exc.body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
                           "message": message, "details": details})
    return exc


class TestStatusBodies:
    def test_invalid_keeps_causes(self) -> None:
        """A 422 becomes Invalid with the server's message and every field cause."""
        err = from_api_exception(status(422, "Invalid", 'Widget.example.com "a" is invalid: spec.size: bad',
                                        name="a", causes=[{"field": "spec.size", "message": "bad",
                                                           "reason": "FieldValueInvalid"}]))
        assert isinstance(err, Invalid) and err.code == 422
        assert err.message == 'Widget.example.com "a" is invalid: spec.size: bad'
        assert err.causes == [Cause("spec.size", "bad", "FieldValueInvalid")]
        assert err.details == {"name": "a"}

    @pytest.mark.parametrize(("code", "reason", "expected"), [
        (409, "AlreadyExists", AlreadyExists), (409, "Conflict", Conflict), (404, "NotFound", NotFound),
        (410, "Expired", Gone), (400, "BadRequest", BadRequest), (504, "Timeout", Timeout),
        (500, "InternalError", ServerError), (503, "ServiceUnavailable", ServerError),
    ])
    def test_codes(self, code: int, reason: str, expected: type[Exception]) -> None:
        """Each HTTP status maps to its error; 409 is split by the Status reason."""
        assert type(from_api_exception(status(code, reason, "m"))) is expected

    def test_body_that_is_not_a_status(self) -> None:
        """An answer without a Status body (a proxy's page) names the status and what kind of body came
        back, never its content: such a body may be a cut-off object holding Secret data."""
        exc = ApiException(status=502, reason="Bad Gateway")
        exc.body = "<html>upstream down</html>"
        err = from_api_exception(exc)
        assert isinstance(err, ServerError) and err.code == 502
        assert err.message == "502 Bad Gateway: an HTML page of 26 bytes (content not shown)"

    def test_body_that_is_not_a_status_is_not_quoted(self) -> None:
        """A non-Status body carrying Secret data never reaches the error text."""
        exc = ApiException(status=500, reason="Internal Server Error")
        exc.body = '{"kind": "Secret", "data": {"password": "aHVudGVyMg=="}}'
        err = from_api_exception(exc)
        assert "aHVudGVyMg" not in err.message and "not a Status" in err.message

    def test_no_answer_at_all(self) -> None:
        """A request the client could not make (status 0) is a ServerError."""
        assert isinstance(from_api_exception(ApiException(status=0, reason="SSLError")), ServerError)


class TestTransport:
    def test_refused_connection(self) -> None:
        """A connection refused is a ServerError, not a timeout."""
        refused = urllib3.exceptions.NewConnectionError(None, "Connection refused")  # type: ignore[arg-type]
        err = from_transport(urllib3.exceptions.MaxRetryError(None, "/x", refused))  # type: ignore[arg-type]
        assert type(err) is ServerError

    def test_read_timeout(self) -> None:
        """A read that ran out of time is our Timeout."""
        assert isinstance(from_transport(urllib3.exceptions.ReadTimeoutError(None, "/x", "read timed out")),  # type: ignore[arg-type]
                          Timeout)

    def test_unknown_kind_from_discovery(self) -> None:
        """The DynamicClient's ResourceNotFoundError is NotFound worded as the API server words it."""
        with pytest.raises(NotFound, match=r"^the server could not find the requested resource$"), translated():
            raise ResourceNotFoundError("No matches found")

    def test_server_not_there(self, tmp_path: Path) -> None:
        """Calls to a port nobody listens on fail with ServerError."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
                  "clusters": [{"name": "x", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                  "users": [{"name": "x", "user": {"token": "t"}}],
                  "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}
        cluster = kube_cluster_from_kubeconfig("x", config, discovery_cache_dir=tmp_path)
        api = cluster.api_client
        api.configuration.retries = 0
        try:
            with pytest.raises(ServerError):
                cluster.get("v1", "Secret", "default", "s")
        finally:
            cluster.stop()

    def test_server_that_never_answers(self, silent_server: str, tmp_path: Path) -> None:
        """A request the server leaves unanswered past request_timeout fails with Timeout."""
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
                  "clusters": [{"name": "x", "cluster": {"server": silent_server}}],
                  "users": [{"name": "x", "user": {"token": "t"}}],
                  "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}
        cluster = KubeCluster("x", api_client_from_kubeconfig(config), discovery_cache_dir=tmp_path,
                              request_timeout=0.2)
        cluster.api_client.configuration.retries = 0
        try:
            with pytest.raises(Timeout):
                cluster.get("v1", "Secret", "default", "s")
        finally:
            cluster.stop()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    listener.close()


class TestOverHttp:
    @pytest.fixture
    def served(self) -> Iterator[tuple[MemoryCluster, Any]]:
        memory = MemoryCluster("", clock=SystemClock(), event_log_size=2)
        with Emulator(memory) as server:
            yield memory, server

    def test_watch_from_a_compacted_version_is_gone(self, served: tuple[MemoryCluster, Any], tmp_path: Path) -> None:
        """A watch from a resourceVersion the server no longer has is Gone (raised as the stream is read)."""
        memory, server = served
        cluster = kube_cluster_from_kubeconfig("", server.kubeconfig("t"), discovery_cache_dir=tmp_path)
        try:
            for name in "abcd":
                memory.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "n"}})
            with pytest.raises(Gone):
                list(cluster.watch("v1", "ConfigMap", resource_version="1", timeout=1))
        finally:
            cluster.stop()

    def test_no_kubernetes_exception_escapes(self, served: tuple[MemoryCluster, Any], tmp_path: Path) -> None:
        """Failures over HTTP arrive as our errors, with the server's wording."""
        _, server = served
        cluster = kube_cluster_from_kubeconfig("", server.kubeconfig("t"), discovery_cache_dir=tmp_path, cache=False)
        try:
            with pytest.raises(NotFound, match=r'^secrets "s" not found$'):
                cluster.get("v1", "Secret", "default", "s")
            with pytest.raises(BadRequest, match="namespace is required"):
                cluster.get("v1", "Secret", None, "s")
            with pytest.raises(BadRequest, match="merge patch must be a JSON object"):
                cluster.patch("v1", "Secret", "default", "s", ["not", "a", "dict"])
        finally:
            cluster.stop()


class TestKubeconfig:
    @pytest.fixture
    def two(self) -> Iterator[tuple[Any, Any]]:
        first = Emulator(MemoryCluster("", clock=SystemClock()))
        second = Emulator(MemoryCluster("", clock=SystemClock()))
        with first, second:
            first.cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "first"}})
            second.cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "second"}})
            yield first, second

    def test_from_a_file_with_a_chosen_context(self, two: tuple[Any, Any], tmp_path: Path) -> None:
        """A kubeconfig file with two contexts reaches the one asked for, else the current one."""
        first, second = two
        doc = kubeconfig.merged({"one": first, "two": second}, current="one")
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(doc))
        chosen = kube_cluster_from_kubeconfig("edge", path, context="two", discovery_cache_dir=tmp_path / "a")
        current = kube_cluster_from_kubeconfig("edge", str(path), discovery_cache_dir=tmp_path / "b")
        try:
            assert chosen.name == "edge"
            assert chosen.get("v1", "Namespace", None, "second", live=True)
            assert current.get("v1", "Namespace", None, "first", live=True)
        finally:
            chosen.stop()
            current.stop()

    def test_from_a_dict_leaves_the_global_default_alone(self, two: tuple[Any, Any], tmp_path: Path) -> None:
        """Building clients from kubeconfig dicts never touches the library's default configuration."""
        from kubernetes.client import Configuration

        first, _ = two
        before = Configuration.get_default_copy().host
        cluster = kube_cluster_from_kubeconfig("a", first.kubeconfig("a"), discovery_cache_dir=tmp_path)
        try:
            assert cluster.get("v1", "Namespace", None, "first", live=True)
            assert Configuration.get_default_copy().host == before
            assert cluster.api_client.configuration.connection_pool_maxsize >= 64
        finally:
            cluster.stop()

    def test_unusable_kubeconfig(self) -> None:
        """A kubeconfig without the asked context is a BadRequest naming the problem."""
        with pytest.raises(BadRequest, match="unusable kubeconfig"):
            kube_cluster_from_kubeconfig("x", {"apiVersion": "v1", "kind": "Config", "contexts": []}, context="nope")


def test_an_invalid_header_value_is_never_quoted() -> None:
    """http.client quotes a header it refuses, a bearer token included: the error names the problem only."""
    token = "t0ken-with-a-trailing-newline"
    with pytest.raises(ServerError) as caught, translated():
        raise ValueError(f"Invalid header value b'Bearer {token}\\n'")
    assert token not in str(caught.value)
    assert "line break" in str(caught.value)
