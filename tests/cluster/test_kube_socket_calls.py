"""The system calls a request costs the client beyond sending and reading (CPU per order): each one lets go of
the interpreter lock, and on a busy operator taking it back is a thread switch. Counted, never timed: a kept-alive
connection's read timeout is set when it changes, not again for every request on it."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import Configuration

from engine.cluster.kube.transport import LeanRestClient
from tests.cluster.http_stub import Stub, ok


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub(lambda _: ok())
    yield server
    server.stop()


def _timeouts_set(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    """The timeouts the test's own thread sets on sockets (the stub server's thread sets its own)."""
    seen: list[float | None] = []
    caller = threading.current_thread()
    original = socket.socket.settimeout

    def counted(sock: socket.socket, value: float | None) -> None:
        if threading.current_thread() is caller:
            seen.append(value)
        original(sock, value)

    monkeypatch.setattr(socket.socket, "settimeout", counted)
    return seen


def _get(rest: LeanRestClient, url: str, timeout: Any) -> bytes:
    answer = rest.request("GET", url + "/api/v1/namespaces", headers={"Accept": "application/json"},
                          _request_timeout=timeout)
    return bytes(answer.data)


def test_a_kept_alive_connection_has_its_read_timeout_set_once(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _timeouts_set(monkeypatch)
    rest = LeanRestClient(Configuration(host=stub.url))
    for _ in range(5):
        assert _get(rest, stub.url, (3, 7))
    assert stub.accepted == 1
    assert seen == [3, 7], "the connect timeout, then the read timeout once for five requests"


def test_a_request_with_another_read_timeout_sets_it(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _timeouts_set(monkeypatch)
    rest = LeanRestClient(Configuration(host=stub.url))
    for timeout in [(3, 7), (3, 7), (3, 9), (3, 9), (3, 7)]:
        assert _get(rest, stub.url, timeout)
    assert stub.accepted == 1
    assert seen == [3, 7, 9, 7]
