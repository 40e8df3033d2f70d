"""The wire's own request path over HTTP: credentials are read once per CREDENTIALS_TTL, not per request,
and a refreshed token is sent once that time has passed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.clock import SystemClock
from engine.cluster.api import NotFound
from engine.cluster.kube import KubeCluster, api_client_from_kubeconfig
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator
from tests.cluster.kube_kit import OneReadBody

SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "default"}}


class TokenSource:
    """A refresh hook (as a kubeconfig's exec plugin or a pod's token file installs one) that counts its runs."""

    def __init__(self) -> None:
        self.runs = 0
        self.token = "token-1"

    def __call__(self, configuration: Any) -> None:
        self.runs += 1
        configuration.api_key["BearerToken"] = f"Bearer {self.token}"  # as the kubeconfig loader keeps it


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[KubeCluster, TokenSource, list[str]]]:
    memory = MemoryCluster("", clock=SystemClock())
    memory.create(SECRET)
    server = Emulator(memory)
    server.start()
    try:
        api = api_client_from_kubeconfig(server.kubeconfig("test"))
        source = TokenSource()
        api.configuration.refresh_api_key_hook = source
        cluster = KubeCluster("", api, cache=False, discovery_cache_dir=tmp_path / "discovery")
        sent: list[str] = []
        rest: Any = api.rest_client  # the cluster's own REST client, installed by KubeCluster
        inner = rest.request

        def request(method: str, url: str, *args: Any, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
            sent.append((headers or {}).get("authorization", ""))
            return inner(method, url, *args, headers=headers, **kwargs)

        rest.request = request
        yield cluster, source, sent
    finally:
        server.stop()


def test_credentials_are_read_once_for_many_requests(setup: tuple[KubeCluster, TokenSource, list[str]]) -> None:
    """Twenty reads in a row run the refresh hook once, and every read carries the token."""
    cluster, source, sent = setup
    cluster.get("v1", "Secret", "default", "a")  # discovery happens here
    runs, before = source.runs, len(sent)
    for _ in range(20):
        cluster.get("v1", "Secret", "default", "a")
    assert source.runs - runs <= 1
    assert sent[before:] == ["Bearer token-1"] * 20


def test_a_refreshed_token_is_sent_once_the_ttl_passed(setup: tuple[KubeCluster, TokenSource, list[str]],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook runs again after CREDENTIALS_TTL, and the token it sets goes out with the next request."""
    cluster, source, sent = setup
    cluster.get("v1", "Secret", "default", "a")
    monkeypatch.setattr("engine.cluster.kube.wire.CREDENTIALS_TTL", 0.0)
    source.token = "token-2"
    cluster.get("v1", "Secret", "default", "a")
    assert sent[-1] == "Bearer token-2"


def test_an_error_answer_is_our_error(setup: tuple[KubeCluster, TokenSource, list[str]]) -> None:
    """A 404 naming the object comes back as NotFound with the object's name, as before."""
    cluster, _, _ = setup
    with pytest.raises(NotFound) as caught:
        cluster.get("v1", "Secret", "default", "missing")
    assert caught.value.details.get("name") == "missing"


def test_a_watch_line_that_is_not_json_is_not_quoted() -> None:
    """A cut-off watch line may hold a Secret's data: the error names the fault, never the content."""
    from engine.cluster.api import ApiError
    from engine.cluster.kube.wire import WatchStream
    cut_off = b'{"type": "ADDED", "object": {"kind": "Secret", "data": {"password": "aHVudGVy\n'
    stream = WatchStream(OneReadBody(cut_off))  # type: ignore[arg-type]
    with pytest.raises(ApiError) as caught:
        next(stream)
    assert "not JSON" in str(caught.value) and "aHVudGVy" not in str(caught.value)


PLUGIN = """import json, pathlib, sys
token = pathlib.Path(sys.argv[1]).read_text()
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": token, "expirationTimestamp": "2000-01-01T00:00:00Z"}}))
"""


def test_an_exec_plugins_expired_token_is_fetched_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kubeconfig's exec plugin (an expired credential) runs again once CREDENTIALS_TTL passed, and the
    server then gets its new token."""
    import sys
    (tmp_path / "plugin.py").write_text(PLUGIN)
    (tmp_path / "token").write_text("exec-1")
    memory = MemoryCluster("", clock=SystemClock())
    memory.create(SECRET)
    with Emulator(memory, token="exec-1") as server:
        kubeconfig = server.kubeconfig("test")
        kubeconfig["users"][0]["user"] = {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "interactiveMode": "Never",
            "args": [str(tmp_path / "plugin.py"), str(tmp_path / "token")]}}
        cluster = KubeCluster("", api_client_from_kubeconfig(kubeconfig), cache=False,
                              discovery_cache_dir=tmp_path / "discovery")
        try:
            assert cluster.get("v1", "Secret", "default", "a")["metadata"]["name"] == "a"
            (tmp_path / "token").write_text("exec-2")
            server._server.token = "exec-2"  # the server now accepts the new token only
            monkeypatch.setattr("engine.cluster.kube.wire.CREDENTIALS_TTL", 0.0)
            assert cluster.get("v1", "Secret", "default", "a")["metadata"]["name"] == "a"
        finally:
            cluster.stop()
