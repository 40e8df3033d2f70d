"""One throwaway Kubernetes cluster's control plane: etcd, kube-apiserver and, unless left out, the garbage
collector and namespace controllers of kube-controller-manager.

Everything lives in a temporary folder (etcd's data, keys, tokens, logs) removed on ``stop``. The processes
die with the thread that started them (``PR_SET_PDEATHSIG``), so a test run killed outright leaves none
behind: start a server from a thread that outlives it (the main thread, a fixture). ``atexit`` stops what a
normal exit left running, and a new server sweeps the folders of servers whose process is gone.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import ctypes
import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import yaml

from engine.cluster.api import Obj
from offline.realkube.audit import AuditLog, policy
from offline.realkube.binaries import KubeBinaries, find_binaries
from offline.realkube.certificates import Certificates, make_certificates
from offline.realkube.ports import free_port

FOLDER_PREFIX = "kube-server-"
START_PATIENCE = 90.0
"""Seconds each process may take to answer healthy (kube-apiserver: 3 s on an idle 2-core machine)."""
STOP_PATIENCE = 10.0
"""Seconds a process has to exit after SIGTERM before it is killed."""
BIND_ATTEMPTS = 3
"""Starts tried with new ports when a port was taken between the check and the bind."""
CONTROLLERS = "garbagecollector,namespace"
"""kube-controller-manager's controllers that act on what this project writes: owner references and namespaces."""


@dataclass(frozen=True)
class User:
    """A user the server knows by a bearer token (``--token-auth-file``): its name and groups."""

    name: str
    groups: tuple[str, ...] = ()


ADMIN = User("admin", ("system:masters",))
"""Every server has it: the user kubeconfigs name unless asked for another."""


class ServerFailed(Exception):
    """A process did not start or did not get healthy; the message carries the tail of its log."""


class KubeServer:
    """etcd, kube-apiserver and kube-controller-manager on free ports of 127.0.0.1; ``start`` waits for
    ``/readyz``. ``users`` maps kubeconfig user names to further token users (RBAC applies to them).
    ``audit_users``: user names whose requests the server writes to its audit log (``audit_log``), as the
    emulator's request log keeps every request."""

    def __init__(self, name: str = "kube", *, binaries: KubeBinaries | None = None, controllers: bool = True,
                 users: Mapping[str, User] | None = None, apiserver_flags: Sequence[str] = (),
                 audit_users: Sequence[str] = ()) -> None:
        self.name = name
        self.binaries = binaries or find_binaries()
        self.controllers = controllers
        self.users = {"admin": ADMIN, **(users or {})}
        self.apiserver_flags = tuple(apiserver_flags)
        self.audit_users = tuple(audit_users)
        self.folder: Path | None = None
        self.port = 0
        self.etcd_url = ""
        self._tokens = {key: secrets.token_hex(16) for key in self.users}
        self._certificates: Certificates | None = None
        self._processes: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._audit: AuditLog | None = None

    # -- what clients need -------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_pem(self) -> bytes:
        if self._certificates is None:
            raise RuntimeError("the server has not started")
        return self._certificates.ca.read_bytes()

    def token(self, user: str = "admin") -> str:
        return self._tokens[user]

    def kubeconfig(self, name: str = "kube", *, namespace: str | None = None, user: str = "admin") -> Obj:
        """One cluster, user and context, all called ``name``, and that context current (as the emulator's)."""
        context: Obj = {"cluster": name, "user": name}
        if namespace:
            context["namespace"] = namespace
        return {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": name, "cluster": {
                "server": self.url, "certificate-authority-data": base64.b64encode(self.ca_pem).decode()}}],
            "users": [{"name": name, "user": {"token": self.token(user)}}],
            "contexts": [{"name": name, "context": context}],
            "current-context": name,
        }

    @property
    def audit_log(self) -> AuditLog:
        """The requests of ``audit_users`` the server served so far (started with some)."""
        if self._audit is None:
            raise RuntimeError("the server was not started with audit_users")
        return self._audit

    def pids(self) -> dict[str, int]:
        """The process id of each running process ("etcd", "kube-apiserver", "kube-controller-manager")."""
        return {what: process.pid for what, process in self._processes if process.poll() is None}

    def log(self, process: str) -> str:
        """The log of one process ("etcd", "kube-apiserver", "kube-controller-manager") so far."""
        if self.folder is None:
            return ""
        path = self.folder / f"{process}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> KubeServer:
        """Start every process and wait until the API server is ready; on failure stop what started and raise."""
        _sweep_orphans()
        self.folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{self.name}-"))
        (self.folder / "owner.pid").write_text(str(os.getpid()))
        _LIVE.add(self)
        try:
            self._certificates = make_certificates(self.folder, self.name)
            self._write_tokens()
            self._start_etcd()
            self._start_apiserver()
            if self.controllers:
                self._start_controller_manager()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL) and remove the folder. Safe to call twice."""
        for _, process in reversed(self._processes):
            _terminate(process)
        self._processes.clear()
        _LIVE.discard(self)
        if self.folder is not None and not os.environ.get("KUBE_SERVER_KEEP"):
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> KubeServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    # -- the processes -----------------------------------------------------------------------------------------

    def _write_tokens(self) -> None:
        assert self.folder is not None
        rows = [f'{self._tokens[key]},{user.name},{user.name},"{",".join(user.groups)}"'
                for key, user in self.users.items()]
        path = self.folder / "tokens.csv"
        path.touch(mode=0o600)
        path.write_text("\n".join(rows) + "\n")

    def _start_etcd(self) -> None:
        assert self.folder is not None
        folder = self.folder

        def command() -> list[str]:
            client, peer = free_port(), free_port()
            self.etcd_url = f"http://127.0.0.1:{client}"
            return [str(self.binaries.etcd), "--name", "default", "--data-dir", str(folder / "etcd"),
                    "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
                    "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                    "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                    "--initial-cluster", f"default=http://127.0.0.1:{peer}",
                    "--unsafe-no-fsync", "--log-level", "warn"]

        self._run_until_healthy("etcd", command, lambda: _healthy_etcd(self.etcd_url))

    def _start_apiserver(self) -> None:
        assert self.folder is not None and self._certificates is not None
        files, folder = self._certificates, self.folder
        audit: list[str] = []
        if self.audit_users:
            (folder / "audit-policy.yaml").write_text(yaml.safe_dump(policy(self.audit_users)))
            self._audit = AuditLog(folder / "audit.log")
            audit = ["--audit-policy-file", str(folder / "audit-policy.yaml"), "--audit-log-path",
                     str(self._audit.path)]

        def command() -> list[str]:
            self.port = free_port()
            return [str(self.binaries.kube_apiserver), "--etcd-servers", self.etcd_url,
                    "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
                    "--secure-port", str(self.port), "--cert-dir", str(folder / "apiserver"),
                    "--tls-cert-file", str(files.serving_cert), "--tls-private-key-file", str(files.serving_key),
                    "--token-auth-file", str(folder / "tokens.csv"), "--authorization-mode", "RBAC",
                    "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                    "--service-account-key-file", str(files.service_account_public_key),
                    "--service-account-signing-key-file", str(files.service_account_key),
                    "--service-cluster-ip-range", "10.0.0.0/24", "--endpoint-reconciler-type", "none",
                    "--allow-privileged", "--profiling=false", "--v", "1", *audit, *self.apiserver_flags]

        self._run_until_healthy("kube-apiserver", command, self._ready)

    def _start_controller_manager(self) -> None:
        assert self.folder is not None
        folder = self.folder
        config = folder / "controller-manager.kubeconfig"
        config.touch(mode=0o600)
        config.write_text(yaml.safe_dump(self.kubeconfig("kube-controller-manager")))
        port = 0

        def command() -> list[str]:
            nonlocal port
            port = free_port()
            return [str(self.binaries.kube_controller_manager), "--kubeconfig", str(config),
                    "--authentication-kubeconfig", str(config), "--authorization-kubeconfig", str(config),
                    "--controllers", CONTROLLERS, "--leader-elect=false",
                    "--bind-address", "127.0.0.1", "--secure-port", str(port),
                    "--cert-dir", str(folder / "controller-manager"), "--profiling=false", "--v", "1"]

        self._run_until_healthy("kube-controller-manager", command, lambda: _answers_ok(
            f"https://127.0.0.1:{port}/healthz", None, _insecure()))

    def _ready(self) -> bool:
        context = ssl.create_default_context(cadata=self.ca_pem.decode())
        return _answers_ok(f"{self.url}/readyz", self.token(), context)

    def _run_until_healthy(self, what: str, command: Callable[[], list[str]], healthy: Callable[[], bool]) -> None:
        """Start ``what`` and wait for ``healthy()``; a start that lost its port to someone is retried."""
        assert self.folder is not None
        log_path = self.folder / f"{what}.log"
        for attempt in range(1, BIND_ATTEMPTS + 1):
            with log_path.open("ab") as log:
                process = subprocess.Popen(command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           cwd=self.folder, preexec_fn=_die_with_parent)
            self._processes.append((what, process))
            deadline = time.monotonic() + START_PATIENCE
            while process.poll() is None and time.monotonic() < deadline:
                if healthy():
                    return
                time.sleep(0.1)
            tail = _tail(log_path)
            if process.poll() is not None and "address already in use" in tail and attempt < BIND_ATTEMPTS:
                self._processes.pop()
                continue
            status = (f"exited with status {process.returncode}" if process.poll() is not None
                      else f"was not healthy within {START_PATIENCE:.0f} s")
            raise ServerFailed(f"{self.name}: {what} {status}; the end of its log:\n{tail}")


_LIVE: set[KubeServer] = set()
"""Servers started and not stopped: stopped at interpreter exit."""

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if os.name == "posix" else None


def _die_with_parent() -> None:
    """In the child before exec: be killed when the thread that started us ends, however it ends."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()  # a Ctrl-C in the terminal reaches the test runner, which stops the servers in order


def _terminate(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(STOP_PATIENCE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(STOP_PATIENCE)


def _answers_ok(url: str, token: str | None, context: ssl.SSLContext | None) -> bool:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as answer:
            return bool(answer.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def _healthy_etcd(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
            return bool(json.load(answer).get("health") == "true")
    except (OSError, ValueError):
        return False


def _insecure() -> ssl.SSLContext:
    """For the controller manager's /healthz only: its serving certificate is one it made itself."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _sweep_orphans() -> None:
    """Remove the folders of servers whose starting process no longer runs (a run killed outright)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*"):
        try:
            owner = int((folder / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        if not _alive(owner):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop()

