"""Registration kubeconfigs are untrusted: no command runs, no local file is read or sent, each
refusal is one error line naming the Secret and the key plus a metric; inline material engages."""

from __future__ import annotations

import base64
import http.server
import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from engine.clock import SystemClock
from engine.cluster.api import Cluster
from engine.metrics import Metrics
from engine.operator import target_cluster
from engine.runtime.clusters import REGISTRATION_LABEL, Registrations
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator

NS = "c5c3-clusters"
TOKEN = "inline-t0ken-for-the-emulator-0123456789"
FILE_TOKEN = "service-account-t0ken-from-a-local-file"


class Engager:
    """Engages like the Manager would: the first thing it does with a cluster is a request to it."""

    def __init__(self) -> None:
        self.engaged: dict[str, Cluster] = {}
        self.answers: list[int] = []

    def engage(self, name: str, cluster: Cluster, *, namespaces: Sequence[str] | None = None) -> None:
        self.engaged[name] = cluster
        try:
            self.answers.append(len(cluster.list("v1", "Secret", "default", live=True).items))
        except Exception:  # a refused request: what the server answered is checked by the tests
            self.answers.append(-1)

    def disengage(self, name: str) -> None:
        cluster = self.engaged.pop(name, None)
        stop = getattr(cluster, "stop", None)
        if callable(stop):
            stop()


class Recorder(http.server.BaseHTTPRequestHandler):
    """A server on 127.0.0.1 that keeps every request's headers and answers 404."""

    seen: list[dict[str, str]] = []

    def do_GET(self) -> None:
        Recorder.seen.append(dict(self.headers.items()))
        body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":404,"reason":"NotFound"}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[str]:
    Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class World:
    def __init__(self) -> None:
        self.management = MemoryCluster("", clock=SystemClock())
        self.engager = Engager()
        self.metrics = Metrics(CollectorRegistry())
        self.registrations = Registrations(self.management, NS, self.engager, target_cluster, metrics=self.metrics)

    def register(self, name: str, kubeconfig: dict[str, Any] | str) -> None:
        text = kubeconfig if isinstance(kubeconfig, str) else yaml.safe_dump(kubeconfig)
        self.management.create({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": NS, "labels": {REGISTRATION_LABEL: "true"}},
            "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
        })
        self.registrations.sync()

    def refused(self, reason: str) -> float:
        value = self.metrics.registry.get_sample_value(
            "c5c3_operator_cluster_registrations_refused_total", {"reason": reason})
        return value or 0.0


@pytest.fixture
def world() -> Iterator[World]:
    world = World()
    try:
        yield world
    finally:
        world.registrations.stop()


def kubeconfig(server: str, user: dict[str, Any], cluster: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "edge",
        "clusters": [{"name": "edge", "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": "edge", "user": user}],
        "contexts": [{"name": "edge", "context": {"cluster": "edge", "user": "edge"}}],
    }


def error_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_an_exec_plugin_never_runs(world: World, recorder: str, tmp_path: Path,
                                   caplog: pytest.LogCaptureFixture) -> None:
    """A kubeconfig whose user runs a command: the command never runs, one error line, one count."""
    marker = tmp_path / "ran"
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "sh",
                     "args": ["-c", f"touch {marker}; echo '{{\"status\":{{\"token\":\"x\"}}}}'"],
                     "interactiveMode": "Never"}}
    with caplog.at_level(logging.INFO):
        world.register("edge-exec", kubeconfig(recorder, user))
    assert not marker.exists()
    assert world.engager.engaged == {}
    assert Recorder.seen == []
    [line] = error_lines(caplog)
    assert f"Secret {NS}/edge-exec" in line and "'exec'" in line
    assert world.refused("exec") == 1


def test_a_token_file_is_never_read_or_sent(world: World, recorder: str, tmp_path: Path,
                                            caplog: pytest.LogCaptureFixture) -> None:
    """``tokenFile`` pointing at a local file: the server never sees the file's content."""
    token_file = tmp_path / "token"
    token_file.write_text(FILE_TOKEN)
    with caplog.at_level(logging.INFO):
        world.register("edge-file", kubeconfig(recorder, {"tokenFile": str(token_file)}))
    assert not any(FILE_TOKEN in value for headers in Recorder.seen for value in headers.values())
    assert world.engager.engaged == {}
    [line] = error_lines(caplog)
    assert f"Secret {NS}/edge-file" in line and "'tokenFile'" in line
    assert world.refused("token-file") == 1


@pytest.mark.parametrize(("where", "key", "value", "reason"), [
    ("user", "auth-provider", {"name": "oidc", "config": {"id-token": "x"}}, "auth-provider"),
    ("user", "client-certificate", "/etc/ssl/private/client.crt", "file-path"),
    ("user", "client-key", "/etc/ssl/private/client.key", "file-path"),
    ("cluster", "certificate-authority", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "file-path"),
    ("user", "as", "system:admin", "unknown-key"),
    ("cluster", "something-new", True, "unknown-key"),
])
def test_every_refused_key_gives_one_line_and_a_count(world: World, recorder: str, where: str, key: str,
                                                      value: Any, reason: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """Each key outside the allow-list is named in one error line, counted by its reason; nothing is sent."""
    user: dict[str, Any] = {"token": TOKEN}
    cluster: dict[str, Any] = {}
    (user if where == "user" else cluster)[key] = value
    with caplog.at_level(logging.INFO):
        world.register("edge-bad", kubeconfig(recorder, user, cluster))
    [line] = error_lines(caplog)
    assert f"Secret {NS}/edge-bad" in line and repr(key) in line
    assert TOKEN not in line
    assert world.refused(reason) == 1
    assert Recorder.seen == []


def test_a_valid_inline_kubeconfig_still_engages(world: World, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Server and token inline (plus harmless extensions and preferences): the cluster engages and answers."""
    target = MemoryCluster("edge", clock=SystemClock())
    target.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}})
    emulator = Emulator(target, token=TOKEN)
    emulator.start()
    try:
        config = kubeconfig(emulator.url, {"token": TOKEN, "extensions": [{"name": "x", "extension": {}}]})
        config["preferences"] = {}
        with caplog.at_level(logging.INFO):
            world.register("edge-1", config)
        assert list(world.engager.engaged) == ["edge-1"]
        assert world.engager.answers == [1]
        assert error_lines(caplog) == []
    finally:
        world.registrations.stop()
        emulator.stop()


def test_client_certificates_live_in_private_files_removed_on_stop(world: World) -> None:
    """Inline client certificate and key are written 0600 in a private directory that stop removes."""
    pem = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
    key = base64.b64encode(b"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n").decode()
    world.register("edge-tls", kubeconfig("https://127.0.0.1:1", {"client-certificate-data": pem,
                                                                  "client-key-data": key}))
    cluster: Any = world.engager.engaged["edge-tls"]
    configuration = cluster.api_client.configuration
    key_file = Path(configuration.key_file)
    assert key_file.read_bytes() == base64.b64decode(key)
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert key_file.parent.stat().st_mode & 0o777 == 0o700
    world.registrations.stop()
    assert not key_file.parent.exists()


LONG_TOKEN = "eyJhbGciOiJSUzI1NiIsImtpZCI6InNlY3JldCJ9.c2VjcmV0LXBheWxvYWQtdGhhdC1pcy1sb25nLWVub3VnaC10by1iZS1jdXQ"


@pytest.mark.parametrize("text", [
    "apiVersion: v1\nusers:\n- name: edge\n  user:\n    token: " + LONG_TOKEN + " x: y\n",
    'users: [{name: edge, user: {token: "' + LONG_TOKEN + '}}]\n',
    yaml.safe_dump(kubeconfig("http://127.0.0.1:9", {"token": LONG_TOKEN + "\n"})),
], ids=["yaml-syntax", "unterminated-quote", "token-with-newline"])
def test_a_broken_kubeconfig_logs_no_part_of_its_token(world: World, text: str,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    """Neither the YAML library's snippet nor an 'Invalid header value' error reaches a log line."""
    with caplog.at_level(logging.DEBUG):
        world.register("edge-broken", text)
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert "edge-broken" in logged
    assert not any(LONG_TOKEN[i:i + 6] in logged for i in range(len(LONG_TOKEN) - 5))
    assert world.refused("malformed") == 1


def test_an_engaged_clusters_token_is_redacted_from_logs() -> None:
    """The token of a usable registration kubeconfig reaches the log redactor when its client is built, so a
    line that happens to carry it (an error text, a debug dump) shows ``[redacted]``."""
    from engine.expr import SecretSink
    from engine.logs import Redactor
    from engine.runtime.clusters import Registration

    sink = SecretSink()
    text = yaml.safe_dump(kubeconfig("https://127.0.0.1:1", {"token": TOKEN}))
    cluster = target_cluster(Registration("edge-1", text), sink=sink)
    stop = getattr(cluster, "stop", None)
    if callable(stop):
        stop()
    assert Redactor(sink)(f"the server said: bad token {TOKEN}") == "the server said: bad token [redacted]"


def test_client_key_directories_left_by_a_killed_operator_are_removed(tmp_path: Path) -> None:
    """After kill -9 a registration's client-key directory stays behind (on a pod's emptyDir it outlives the
    container): the next start removes those of dead processes and of an earlier process with our pid, and
    keeps a live operator's and its own."""
    import os
    import subprocess
    import sys

    from engine.cluster.kube.config import PRIVATE_PREFIX, PROCESS_TAG, sweep_private_dirs

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()
    folders = {
        "dead": tmp_path / f"{PRIVATE_PREFIX}{dead}-0badc0de-abc",
        "earlier-with-our-pid": tmp_path / f"{PRIVATE_PREFIX}{os.getpid()}-0badc0de-abc",
        "ours": tmp_path / f"{PRIVATE_PREFIX}{os.getpid()}-{PROCESS_TAG}-abc",
        "live": tmp_path / f"{PRIVATE_PREFIX}{os.getppid()}-0badc0de-abc",
        "unrelated": tmp_path / "engine-kubeconfig-notes",
    }
    for folder in folders.values():
        folder.mkdir()
        (folder / "client.key").write_text("key")
    removed = sweep_private_dirs(tmp_path)
    assert sorted(removed) == sorted([folders["dead"], folders["earlier-with-our-pid"]])
    assert [name for name, folder in folders.items() if folder.exists()] == ["ours", "live", "unrelated"]


BINARY = b"\x89PNG\r\n\x1a\n\xff\xfe" + TOKEN.encode()
"""Bytes that are not UTF-8 (a file uploaded by mistake), carrying a token that must never be logged."""


@pytest.mark.parametrize(("data", "reason", "words"), [
    ({}, "no-kubeconfig", "its data has no key 'kubeconfig'"),
    ({"namespaces": base64.b64encode(b"tenant-a").decode()}, "no-kubeconfig", "its data has no key 'kubeconfig'"),
    ({"kubeconfig": ""}, "empty", "its data key 'kubeconfig' is empty"),
    ({"kubeconfig": base64.b64encode(b" \n\t ").decode()}, "empty", "its data key 'kubeconfig' is empty"),
    ({"kubeconfig": base64.b64encode(BINARY).decode()}, "binary", "its data key 'kubeconfig' is not UTF-8 text"),
    ({"kubeconfig": base64.b64encode(yaml.safe_dump(kubeconfig("http://127.0.0.1:9", {"token": TOKEN})).encode())
      .decode(), "namespaces": base64.b64encode(BINARY).decode()},
     "binary", "its data key 'namespaces' is not UTF-8 text"),
], ids=["no-data", "no-kubeconfig-key", "empty", "blank", "binary", "binary-namespaces"])
def test_a_labelled_secret_without_a_usable_kubeconfig_is_refused_with_a_reason(
        world: World, data: dict[str, str], reason: str, words: str, caplog: pytest.LogCaptureFixture) -> None:
    """A labelled Secret with no kubeconfig, an empty one or bytes that are not text engages nothing and is not
    silent: one warning names the Secret and why (never its data), one count by reason, once however often the
    registrations are listed again."""
    world.management.create({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "edge-blank", "namespace": NS, "labels": {REGISTRATION_LABEL: "true"}},
        "data": data,
    })
    with caplog.at_level(logging.DEBUG):
        world.registrations.sync()
        world.registrations.sync()
    assert world.engager.engaged == {}
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert f"Secret {NS}/edge-blank" in warnings[0] and words in warnings[0]
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert TOKEN not in logged and "PNG" not in logged
    assert world.refused(reason) == 1


def test_a_refused_registration_is_counted_again_only_when_it_changes(world: World,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    """Listing the registrations again (after a watch failure) neither logs nor counts an unchanged refusal
    again; an edit that is still refused is a new refusal; a fixed Secret engages."""
    secret = {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "edge-exec", "namespace": NS, "labels": {REGISTRATION_LABEL: "true"}},
        "data": {"kubeconfig": base64.b64encode(yaml.safe_dump(kubeconfig(
            "http://127.0.0.1:9", {"exec": {"command": "sh"}})).encode()).decode()},
    }
    world.management.create(secret)
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            world.registrations.sync()
        assert world.refused("exec") == 1
        assert len(error_lines(caplog)) == 1
        world.management.update({**secret, "data": {}})
        world.registrations.sync()
        world.registrations.sync()
    assert world.refused("no-kubeconfig") == 1
    assert world.engager.engaged == {}
