"""The fault proxy (offline.faults): relays what the emulator answers, counts requests by kind, and makes each
fault window's answers, over plain HTTP and TLS, switched on and off while clients use it."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.clock import SystemClock
from engine.cluster.api import Conflict, ServerError
from engine.cluster.kube import KubeCluster, api_client_from_kubeconfig
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator
from offline.emulator.kubeconfig import kubeconfig
from offline.faults import FAULTS, FaultProxy, conflict, kind_of, latency, proxied, status
from offline.realkube import KubeServer
from offline.realkube.certificates import make_certificates

NS_PATH = "/api/v1/namespaces/default/configmaps"


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"k": "v"}}


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    memory = MemoryCluster("", clock=SystemClock())
    memory.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    served = Emulator(memory)
    served.start()
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture
def proxy(emulator: Emulator) -> Iterator[FaultProxy]:
    with FaultProxy(emulator.url) as running:
        yield running


def connect(url: str) -> http.client.HTTPConnection:
    host, port = url.rsplit("/", 1)[1].split(":")
    return http.client.HTTPConnection(host, int(port), timeout=10)


def call(conn: http.client.HTTPConnection, method: str, path: str, body: Any = None) -> tuple[int, Any, Any]:
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
    answer = conn.getresponse()
    raw = answer.read()
    return answer.status, (json.loads(raw) if raw else None), answer


def client_of(proxy: FaultProxy, tmp_path: Path) -> KubeCluster:
    """The operator's client, reaching the emulator through the proxy."""
    return KubeCluster("", api_client_from_kubeconfig(kubeconfig("proxy", proxy.url, None)), cache=False,
                       discovery_cache_dir=tmp_path / "discovery")


def raw_watch(url: str, path: str) -> socket.socket:
    """A watch request sent on a raw socket; the socket to read its answer from."""
    host, port = url.rsplit("/", 1)[1].split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(f"GET {path}?watch=true&timeoutSeconds=30 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    return sock


def read_to_end(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_request_kinds() -> None:
    """Watches, lists, gets and writes are told apart on core and group paths; discovery is other."""
    cases = {
        ("GET", "/api/v1/namespaces/ns/secrets?labelSelector=a"): "list",
        ("GET", "/api/v1/namespaces/ns/secrets/name"): "get",
        ("GET", "/api/v1/namespaces/ns/secrets?watch=true&resourceVersion=5"): "watch",
        ("GET", "/api/v1/watch/namespaces/ns/secrets"): "watch",
        ("GET", "/api/v1/namespaces"): "list",
        ("GET", "/api/v1/namespaces/ns"): "get",
        ("GET", "/apis/c5c3.io/v1alpha1/keystoneusers?watch=1"): "watch",
        ("GET", "/apis/c5c3.io/v1alpha1/namespaces/ns/keystoneusers"): "list",
        ("GET", "/apis/c5c3.io/v1alpha1/namespaces/ns/keystoneusers/a/status"): "get",
        ("PATCH", "/apis/c5c3.io/v1alpha1/namespaces/ns/keystoneusers/a/status"): "write",
        ("POST", "/api/v1/namespaces/ns/secrets"): "write",
        ("DELETE", "/api/v1/namespaces/ns/secrets/a"): "write",
        ("GET", "/apis"): "other",
        ("GET", "/apis/c5c3.io/v1alpha1"): "other",
        ("GET", "/api/v1"): "other",
        ("GET", "/openapi/v3"): "other",
        ("GET", "/version"): "other",
    }
    assert {request: kind_of(*request) for request in cases} == cases


def test_relays_reads_writes_and_watches_and_counts_them(emulator: Emulator, proxy: FaultProxy) -> None:
    """Through the proxy a client creates, lists, gets and watches as it would at the emulator; each request is
    counted by kind, in the proxy's totals and in the tally open meanwhile."""
    conn = connect(proxy.url)
    with proxy.tally() as seen:
        code, created, _ = call(conn, "POST", NS_PATH, configmap("a"))
        assert code == 201 and created["metadata"]["name"] == "a"
        code, listed, _ = call(conn, "GET", NS_PATH)
        assert code == 200 and [item["metadata"]["name"] for item in listed["items"]] == ["a"]
        code, got, _ = call(conn, "GET", f"{NS_PATH}/a")  # the same connection, kept alive
        assert code == 200 and got["data"] == {"k": "v"}
        code, missing, _ = call(conn, "GET", f"{NS_PATH}/b")
        assert code == 404 and missing["reason"] == "NotFound"
        sock = raw_watch(proxy.url, NS_PATH)
        events = b""
        while b'"ADDED"' not in events:
            events += sock.recv(65536)
        sock.close()
    assert seen.counts == {"write": 1, "list": 1, "get": 2, "watch": 1}
    assert seen.paths[("get", f"{NS_PATH}/a")] == 1
    assert proxy.counts() == seen.counts
    assert seen.per_second("get") == 2 / seen.seconds


def test_a_client_library_works_through_it(emulator: Emulator, proxy: FaultProxy, tmp_path: Path) -> None:
    """The operator's own client (KubeCluster) lists, writes and watches through the proxy."""
    client = client_of(proxy, tmp_path)
    try:
        client.create(configmap("a"))
        stream = client.watch("v1", "ConfigMap", "default", resource_version=None, timeout=2, bookmarks=True)
        assert any(event["type"] == "ADDED" for event in stream)
        assert [o["metadata"]["name"] for o in client.list("v1", "ConfigMap", "default", live=True).items] == ["a"]
    finally:
        client.stop()
    assert proxy.counts()["watch"] >= 1 and proxy.counts()["write"] == 1


def test_status_windows_answer_every_request_and_heal(proxy: FaultProxy) -> None:
    """500 and 429 (with Retry-After) answer every kind of request with a Status while in force, then requests
    reach the server again."""
    conn = connect(proxy.url)
    with proxy.window(FAULTS["500"]) as seen:
        code, body, _ = call(conn, "GET", NS_PATH)
        assert (code, body["reason"], body["code"]) == (500, "InternalError", 500)
        code, _, _ = call(conn, "POST", NS_PATH, configmap("a"))
        assert code == 500
    assert seen.counts == {"list": 1, "write": 1}
    with proxy.window(FAULTS["429"]):
        code, body, answer = call(conn, "GET", f"{NS_PATH}/a")
        assert (code, body["reason"], answer.getheader("Retry-After")) == (429, "TooManyRequests", "1")
    code, _, _ = call(conn, "POST", NS_PATH, configmap("a"))
    assert code == 201, "healed: the write reaches the server (and the ones refused did not)"


def test_conflict_hits_a_share_of_writes_only(proxy: FaultProxy) -> None:
    """409 on a share of writes: reads pass, some writes are refused with Conflict and some stored."""
    conn = connect(proxy.url)
    with proxy.window(conflict(0.5)):
        codes = [call(conn, "POST", NS_PATH, configmap(f"c{i}"))[0] for i in range(40)]
        code, listed, _ = call(conn, "GET", NS_PATH)
    assert set(codes) == {201, 409}
    assert len(listed["items"]) == codes.count(201)
    assert code == 200


def test_latency_holds_requests(proxy: FaultProxy) -> None:
    """A latency window answers as usual, each request at least its delay later."""
    conn = connect(proxy.url)
    with proxy.window(latency(0.3)):
        started = time.monotonic()
        code, _, _ = call(conn, "GET", NS_PATH)
        held = time.monotonic() - started
    assert code == 200 and held >= 0.3


def test_latency_with_a_target_holds_only_the_requests_naming_it(proxy: FaultProxy) -> None:
    """A latency window with a target holds the requests whose path contains it; every other goes through at once
    (the held one is still waiting when the other has been answered)."""
    held_path = f"{NS_PATH}/held"
    answers: list[int] = []

    def ask() -> None:
        conn = connect(proxy.url)
        try:
            answers.append(call(conn, "GET", held_path)[0])
        except (OSError, http.client.HTTPException):
            pass  # closed unanswered, as it should be
        finally:
            conn.close()

    with proxy.window(latency(60.0, target="/held")) as seen:
        held = threading.Thread(target=ask, daemon=True)
        held.start()
        deadline = time.monotonic() + 10
        while not seen.paths[("get", held_path)] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen.paths[("get", held_path)] == 1
        other = connect(proxy.url)
        code, _, _ = call(other, "GET", f"{NS_PATH}/other")
        other.close()
        assert code == 404 and held.is_alive() and answers == []
    proxy.stop()  # ends the held request's wait: its connection closes unanswered
    held.join(10)
    assert not held.is_alive() and answers == []


def test_reset_resets_the_connection(proxy: FaultProxy) -> None:
    conn = connect(proxy.url)
    with proxy.window(FAULTS["reset"]), pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)):
        call(conn, "GET", NS_PATH)
    assert call(connect(proxy.url), "GET", NS_PATH)[0] == 200


def test_watch_cut_after_headers(proxy: FaultProxy) -> None:
    """The cut answers a watch 200, chunked, then closes with no chunk; other requests pass."""
    with proxy.window(FAULTS["cut"]) as seen:
        answer = read_to_end(raw_watch(proxy.url, NS_PATH))
        assert call(connect(proxy.url), "GET", NS_PATH)[0] == 200
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and b"Transfer-Encoding: chunked" in head
    assert body == b""
    assert seen.counts == {"watch": 1, "list": 1}


def test_gone_answers_watches_with_a_410_event(proxy: FaultProxy) -> None:
    with proxy.window(FAULTS["410"]):
        answer = read_to_end(raw_watch(proxy.url, NS_PATH))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    size, _, rest = body.partition(b"\r\n")
    event = json.loads(rest[:int(size, 16)])
    assert (event["type"], event["object"]["code"]) == ("ERROR", 410)
    assert rest[int(size, 16):] == b"\r\n0\r\n\r\n", "one event, then the stream's end"


def test_a_window_on_watches_ends_the_open_streams(emulator: Emulator, proxy: FaultProxy) -> None:
    """A watch open before the window ends cleanly (its last chunk) when a window that hits watches starts, so
    the watcher meets the fault at its next watch; a latency window leaves it open."""
    sock = raw_watch(proxy.url, NS_PATH)
    sock.settimeout(10)
    answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200 ")
    proxy.inject(latency(0.01))
    emulator.cluster.create(configmap("still-open"))
    while b"still-open" not in answer:
        answer += sock.recv(65536)
    proxy.inject(FAULTS["cut"])
    rest = read_to_end(sock)
    assert (answer + rest).endswith(b"0\r\n\r\n")
    proxy.inject(None)


def test_client_errors_raise_as_from_a_server(proxy: FaultProxy, tmp_path: Path) -> None:
    """The operator's client sees the injected answers as its own errors: 409 a Conflict, 500 a server error."""
    client = client_of(proxy, tmp_path)
    try:
        with proxy.window(conflict(1.0)), pytest.raises(Conflict):
            client.create(configmap("a"))
        with proxy.window(status(500)), pytest.raises(ServerError):
            client.list("v1", "ConfigMap", "default", live=True)
    finally:
        client.stop()


def test_tls_on_both_sides(tmp_path: Path, emulator: Emulator) -> None:
    """Serving TLS with a certificate for 127.0.0.1, and forwarding to an https upstream verified by its CA: a
    proxy in front of a TLS proxy in front of the emulator relays requests and faults."""
    certificates = make_certificates(tmp_path, "proxy")
    with FaultProxy(emulator.url, certificate=(certificates.serving_cert, certificates.serving_key)) as tls, \
            FaultProxy(tls.url, upstream_ca=certificates.ca) as plain:
        assert tls.url.startswith("https://127.0.0.1:")
        conn = connect(plain.url)
        assert call(conn, "POST", NS_PATH, configmap("a"))[0] == 201
        with tls.window(FAULTS["500"]):
            assert call(conn, "GET", NS_PATH)[0] == 500
        assert call(conn, "GET", NS_PATH)[0] == 200
        context = ssl.create_default_context(cafile=str(certificates.ca))
        host, port = tls.url.rsplit("/", 1)[1].split(":")
        direct = http.client.HTTPSConnection(host, int(port), context=context, timeout=10)
        assert call(direct, "GET", f"{NS_PATH}/a")[0] == 200
    assert tls.counts() == {"write": 1, "list": 2, "get": 1}


def test_in_front_of_a_real_api_server(tmp_path: Path, real_cluster: Callable[[str], KubeServer]) -> None:
    """Between the operator's client and a real kube-apiserver (TLS on both sides, the client's token passed on):
    reads, writes and watches relayed, faults answered in the server's stead."""
    server = real_cluster("management")
    upstream_ca = tmp_path / "upstream-ca.crt"
    upstream_ca.write_bytes(server.ca_pem)
    certificates = make_certificates(tmp_path, "proxy")
    with FaultProxy(server.url, certificate=(certificates.serving_cert, certificates.serving_key),
                    upstream_ca=upstream_ca) as proxy:
        config = proxied(server.kubeconfig("real"), proxy, ca=certificates.ca)
        client = KubeCluster("", api_client_from_kubeconfig(config), cache=False,
                             discovery_cache_dir=tmp_path / "discovery")
        try:
            name = f"proxied-{time.monotonic_ns()}"
            client.create({**configmap(name)})
            stream = client.watch("v1", "ConfigMap", "default", resource_version=None, timeout=2, bookmarks=True)
            assert any(event["type"] == "ADDED" and event["object"]["metadata"]["name"] == name for event in stream)
            with proxy.window(conflict(1.0)), pytest.raises(Conflict):
                client.create(configmap(f"{name}-refused"))
            client.delete("v1", "ConfigMap", "default", name)
        finally:
            client.stop()
    assert proxy.counts()["write"] == 3 and proxy.counts()["watch"] == 1
