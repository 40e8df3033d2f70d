"""The integration tests' world and helpers (imported as ``integration_kit``; ``conftest.py`` holds only the
fixtures and hooks, so that two test folders' ``conftest`` modules never shadow each other's names).

Integration over HTTP: API servers, ``engine run`` as a subprocess.

The world is the embedded default's (``simulators.embedded``): a management cluster and target clusters, our
CRDs and the external kinds', ControlPlane ``openstack/cp``, and simulated K-ORC, ESO and topology operator
reacting on a background thread. It stands on one of two backends (``BACKENDS``):

- ``emulator``: each cluster an in-memory store served by its own emulator in the test process;
- ``real``: each cluster a real kube-apiserver with etcd (``offline.realkube``) from a pool that starts
  them ahead (``ServerPool``), the world written and read through a client of the ``world`` user, the operator
  connecting as the ServiceAccount the shipped RBAC binds (``OPERATOR_ACCOUNT``), held to that RBAC: the
  management cluster gets deploy/operator/rbac.yaml, each target cluster deploy/target-cluster/rbac.yaml. The
  server's audit log records the operator's requests (the real server's request log); a world that saw one of
  them forbidden fails when it closes. The simulated controllers read through a cached client (which reads its
  own writes).

The operator reaches the clusters only through the kubeconfig it is given (and the registration Secrets, which
carry a target's CA and a token on the real backend), as it would real API servers; the tests read and write
the clusters through the Cluster interface and poll until the operator has done its part.

Select with ``pytest -m integration`` (or leave out with ``-m "not integration"``); the real backend alone with
``-m "integration and real_server"``.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import pytest
import yaml

from engine.clock import SystemClock
from engine.cluster import readonly
from engine.cluster.api import MANAGEMENT_CLUSTER, Cluster, NotFound, Obj
from engine.cluster.kube import KubeCluster
from engine.cluster.patches import json_copy
from engine.rules.rbac_manifest import Identity
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator, write_kubeconfig
from offline.emulator.requestlog import RequestRecord
from offline.realkube import KubeBinaries, KubeServer, User, ports
from simulators import real_world
from simulators.base import Simulator
from simulators.embedded import crd_documents, management_world, registration

ROOT = Path(__file__).resolve().parents[2]
API = "c5c3.io/v1alpha1"
TENANT = "tenant-a"
PATIENCE = 30.0
"""Seconds an integration wait may take before it fails."""
STARTUP_PATIENCE = 120.0
"""Seconds ``engine run`` may take to become ready. Its start is CPU-bound (imports, rule compilation, the
first lists: about 4 CPU-seconds), so its wall time grows with the machine's load: 20 s at a load average
of 14 on two cores. A slow start is not what these tests check; an operator that never gets ready still fails."""


def wait_for(what: Callable[[], Any], timeout: float = PATIENCE, message: str = "") -> Any:
    """Poll until ``what()`` is truthy; return its value, or fail naming what did not happen."""
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout}s: {message or what}")
        time.sleep(0.05)


def free_port() -> int:
    """A port on 127.0.0.1 free now for an ``engine run`` to bind later (``offline.realkube.ports``): below
    the kernel's ephemeral range and never handed out twice in this process, the real servers' ports included.
    The real-server pool starts servers on a thread of its own, so one registry must hand out both: with two, a
    server's etcd took a port handed to an operator that had not bound it yet, which then failed to start."""
    return ports.free_port()


def get(cluster: Cluster, api_version: str, kind: str, namespace: str | None, name: str) -> Obj | None:
    try:
        return cluster.get(api_version, kind, namespace, name)
    except NotFound:
        return None


def condition(obj: Obj | None, type_: str) -> str | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return str(cond.get("status"))
    return None


def secret_value(secret: Obj | None, key: str) -> str | None:
    data = ((secret or {}).get("data") or {}).get(key)
    return base64.b64decode(data).decode() if data is not None else None


def probe_ready(port: int) -> bool:
    """Whether an operator's /readyz on that local port answers 200."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:  # refused while it starts, an error status, or slow to answer under load
        return False


BACKENDS = ("emulator", "real")
"""What the world's clusters are: emulators over in-memory stores, or real kube-apiservers with etcd."""

OPERATOR, WORLD = "operator", "world"
"""The real servers' users: the operator's (in its kubeconfig and the registration Secrets; the audit log records
its requests) and the one the tests and the simulated controllers act as."""

ACCOUNT = Identity()
"""The ServiceAccount `engine rbac` binds (deploy/operator/rbac.yaml, deploy/target-cluster/rbac.yaml)."""

OPERATOR_ACCOUNT = User(f"system:serviceaccount:{ACCOUNT.namespace}:{ACCOUNT.name}",
                        ("system:serviceaccounts", f"system:serviceaccounts:{ACCOUNT.namespace}"))
"""The operator on a real server: that ServiceAccount as the server knows a pod's token of it (its user name and
groups), so the RBAC bindings' ServiceAccount subjects match it and nothing else grants it a right."""

REAL_USERS = {OPERATOR: OPERATOR_ACCOUNT, WORLD: User(WORLD, ("system:masters",))}

MANAGEMENT_RBAC = (ROOT / "deploy" / "operator" / "rbac.yaml",)
TARGET_RBAC = (ROOT / "deploy" / "target-cluster" / "namespace.yaml", ROOT / "deploy" / "target-cluster" / "rbac.yaml")
"""What a real management cluster and a real target cluster get before the operator connects (the management
world seeds the namespaces its Roles live in)."""


def apply_manifests(cluster: Cluster, paths: Sequence[Path]) -> None:
    """Create every object of those YAML files, as `kubectl apply -f` does on an empty cluster."""
    for path in paths:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc:
                cluster.create(doc)

CRDS = crd_documents(ROOT / "deploy" / "crds", ROOT / "deploy" / "crds" / "external")
"""Every cluster's: our CRDs and the external kinds' stand-ins."""


class RequestLog(Protocol):
    """A server's record of the operator's requests: the emulator's request log, or a real server's audit log."""

    dropped: int

    def records(self) -> list[RequestRecord]: ...


class Server(Protocol):
    """A cluster's API server as the tests see it: the emulator, or a real server (``RealServer``)."""

    url: str

    def kubeconfig(self, name: str = ..., *, namespace: str | None = None) -> Obj: ...

    def open_watches(self) -> dict[tuple[str, str], int]: ...

    @property
    def requests(self) -> RequestLog: ...


class RealServer:
    """A real API server as the tests see an emulator: kubeconfigs of the operator's user, and its audit log (the
    operator's requests) as the request log."""

    def __init__(self, server: KubeServer) -> None:
        self.server = server
        self.url = server.url

    def kubeconfig(self, name: str = "kube", *, namespace: str | None = None) -> Obj:
        return self.server.kubeconfig(name, namespace=namespace, user=OPERATOR)

    def open_watches(self) -> dict[tuple[str, str], int]:
        return self.server.audit_log.open_watches()

    @property
    def requests(self) -> RequestLog:
        return self.server.audit_log


class ServerPool:
    """Real servers with our CRDs installed, started ahead of need and stopped after it on a thread of the pool's
    own, so a world waits for neither (a start takes about 4 s; a created CRD then holds its first object's write
    for about 2 s more). One stands ready (``spare``); a world ``take`` s it and ``give_back`` s it to be stopped.

    The thread lives as long as the pool: a server's processes die with the thread that started them."""

    def __init__(self, binaries: KubeBinaries, crds: list[Obj], *, spare: int = 1) -> None:
        self.binaries = binaries
        self.crds = crds
        self._jobs: queue.Queue[KubeServer | str | None] = queue.Queue()
        self._ready: queue.Queue[KubeServer | BaseException] = queue.Queue()
        self._count = 0
        self._thread = threading.Thread(target=self._work, name="real server pool", daemon=True)
        self._thread.start()
        for _ in range(spare):
            self._jobs.put("start")

    def take(self) -> KubeServer:
        """A running server with the CRDs; another one starts for the next taker."""
        self._jobs.put("start")
        got = self._ready.get(timeout=STARTUP_PATIENCE)
        if isinstance(got, BaseException):
            raise got
        return got

    def give_back(self, server: KubeServer) -> None:
        """Stop a server taken (in the background)."""
        self._jobs.put(server)

    def close(self) -> None:
        """Stop every server, given back or ready, and the thread."""
        self._jobs.put(None)
        self._thread.join(120)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            if isinstance(job, KubeServer):
                job.stop()
                continue
            self._count += 1
            server = KubeServer(f"pool{self._count}", binaries=self.binaries, users=REAL_USERS,
                                audit_users=(OPERATOR_ACCOUNT.name,))
            try:
                server.start()
                real_world.install_crds(server.kubeconfig("pool", user=WORLD), self.crds)
                warm_storage(server.kubeconfig("pool", user=WORLD), self.crds)
            except BaseException as error:
                server.stop()
                self._ready.put(error)
                continue
            self._ready.put(server)
        while not self._ready.empty():
            left = self._ready.get()
            if isinstance(left, KubeServer):
                left.stop()


def warm_storage(kubeconfig: Obj, crds: list[Obj]) -> None:
    """List each kind the CRDs serve once. The API server builds a custom kind's storage at its first request and
    answers 429 ("storage is (re)initializing") until its watch cache has listed etcd: the first operator to ask
    would wait a Retry-After second for each kind, as on no long-running cluster. All at once: each waits that
    second too."""
    kinds = [(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"]) for crd in crds
             for version in crd["spec"].get("versions") or () if version.get("served", True)]
    client = real_world.client("", kubeconfig, cache=False)
    try:
        with ThreadPoolExecutor(len(kinds) or 1, thread_name_prefix="warm storage") as pool:
            list(pool.map(lambda kind: client.list(*kind), kinds))
    finally:
        client.stop()


class Served:
    """One cluster of the world on its backend: the client the tests use (``cluster``), its server (``server``),
    and the view the simulated controllers act through (``lab``). ``pool``: where the real servers come from."""

    def __init__(self, backend: str, name: str, crds: list[Obj], pool: ServerPool | None) -> None:
        self.backend = backend
        self.name = name
        self._real: KubeServer | None = None
        self._clients: list[KubeCluster] = []
        if backend == "emulator":
            memory = MemoryCluster(name, clock=SystemClock())
            for crd in crds:
                memory.create(crd)
            emulator = Emulator(memory)
            emulator.start()
            self.cluster: Cluster = memory
            self.lab: Cluster = memory
            self.server: Server = emulator
            self._emulator: Emulator | None = emulator
            return
        self._emulator = None
        assert pool is not None, "real servers come from a pool"
        self._pool = pool
        self._real = pool.take()
        try:
            as_world = self._real.kubeconfig(name or "management", user=WORLD)
            self._clients = [real_world.client(name, as_world, cache=False),
                             real_world.client(name, as_world, cache=True)]
        except BaseException:
            self.stop()
            raise
        self.cluster = self._clients[0]
        self.lab = self._clients[1]
        self.server = RealServer(self._real)

    @property
    def kubectl(self) -> str | None:
        """The kubectl to drive this server with: the pinned one beside a real server, else the PATH's."""
        return str(self._real.binaries.kubectl) if self._real is not None else shutil.which("kubectl")

    def seed(self, obj: Obj) -> None:
        """Store ``obj`` with its status as given. The emulator's store takes it without admission; a real server
        admits it (``real_world.seed``)."""
        if isinstance(self.cluster, MemoryCluster):
            self.cluster.seed(obj)
        else:
            real_world.seed(self.cluster, obj)

    def stop(self) -> None:
        for client in self._clients:
            with contextlib.suppress(Exception):
                client.stop()
        if self._emulator is not None:
            self._emulator.stop()
        if self._real is not None:
            self._pool.give_back(self._real)
            self._real = None


class Target:
    """One target cluster: its client, its server and its registration (a real one holds the operator to the
    target cluster's RBAC)."""

    def __init__(self, served: Served) -> None:
        self.name = served.name
        self.served = served
        self.cluster = served.cluster
        self.server = served.server
        served.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TENANT}})
        if served.backend == "real":
            apply_manifests(served.cluster, TARGET_RBAC)

    def registration(self, name: str | None = None, namespaces: str | None = None) -> Obj:
        secret = registration(name or self.name, self.server.kubeconfig(self.name))
        if namespaces is not None:
            secret["data"]["namespaces"] = base64.b64encode(namespaces.encode()).decode()
        return secret


class World:
    """The management cluster, target clusters, simulated controllers and a kubeconfig for the operator, on one
    backend (``BACKENDS``; ``pool``: where the real servers come from)."""

    def __init__(self, tmp: Path, backend: str = "emulator", pool: ServerPool | None = None) -> None:
        self.tmp = tmp
        self.backend = backend
        self.pool = pool
        self.crds = CRDS
        self.targets: dict[str, Target] = {}
        self.processes: list[OperatorProcess] = []
        """Every operator process started on this world: ``close`` kills those still running."""
        self.forbidden_expected = False
        """Set by a test that takes a right away: ``close`` then lets the operator's forbidden requests be."""
        self._served = Served(backend, MANAGEMENT_CLUSTER, self.crds, pool)
        self.management = self._served.cluster
        self.server = self._served.server
        self.kubectl = self._served.kubectl
        self.controllers: real_world.Controllers | None = None
        try:
            for obj in management_world():
                self._served.seed(obj)
            if backend == "real":
                apply_manifests(self.management, MANAGEMENT_RBAC)
            self.kubeconfig = tmp / "kubeconfig"
            write_kubeconfig(self.kubeconfig, {"management": self.server}, "management")
            self.simulators: list[Simulator] = real_world.simulators_on(self._served.lab)
            self.controllers = real_world.Controllers(self.simulators).start()
        except BaseException:
            self._served.stop()
            raise

    def seed(self, obj: Obj) -> None:
        """Store an object on the management cluster with its status as given (``Served.seed``)."""
        self._served.seed(obj)

    def target(self, name: str) -> Target:
        """A new target cluster (not registered yet)."""
        self.targets[name] = target = Target(Served(self.backend, name, self.crds, self.pool))
        return target

    def register(self, target: Target, name: str | None = None, namespaces: str | None = None) -> None:
        """Write (create or replace) the registration Secret of a target cluster."""
        secret = target.registration(name, namespaces)
        existing = get(self.management, "v1", "Secret", "c5c3-clusters", secret["metadata"]["name"])
        if existing is None:
            self.management.create(secret)
        else:
            secret["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            self.management.update(secret)

    def assign(self, cluster: str) -> None:
        """Have ControlPlane openstack/cp assign tenant-a on one more cluster."""
        cp = json_copy(self.management.get(API, "ControlPlane", "openstack", "cp"))
        cp["spec"]["namespaceAssignments"].append({"namespace": TENANT, "targetClusterRef": {"name": cluster}})
        self.management.update(cp)

    def cluster(self, name: str) -> Cluster:
        return self.management if name == MANAGEMENT_CLUSTER else self.targets[name].cluster

    def forbidden(self) -> list[str]:
        """The operator's requests the servers refused with 403 so far, as "cluster: METHOD path" (the real
        servers' RBAC; an emulator forbids nothing)."""
        servers = {"management": self.server, **{name: target.server for name, target in self.targets.items()}}
        return [f"{name}: {record.method} {record.path}" for name, server in servers.items()
                for record in server.requests.records() if record.code == 403]

    def close(self) -> None:
        """Kill the operators still running, stop the servers; fail if an operator found a read object changed, or
        (unless ``forbidden_expected``) if a server refused one of its requests."""
        for process in self.processes:  # one a failed test left running would outlive the test run
            process.kill()
        if self.controllers is not None:
            self.controllers.stop()
        forbidden = [] if self.forbidden_expected else self.forbidden()  # read before the servers and logs go
        for target in self.targets.values():
            target.served.stop()
        self._served.stop()
        failures = []
        changed = [f"{process.log_path.name}: {line}" for process in self.processes
                   for line in process.logs().splitlines() if readonly.VIOLATION in line]
        if changed:  # the operator exited with EXIT_READS_CHANGED: the test waiting on it failed too, less clearly
            failures.append("an operator's reader changed objects a cluster read handed out:\n" + "\n".join(changed))
        if forbidden:
            failures.append("the shipped RBAC (deploy/operator/rbac.yaml, deploy/target-cluster/rbac.yaml) forbade "
                            "the operator's requests:\n" + "\n".join(sorted(set(forbidden))))
        if failures:
            pytest.fail("\n".join(failures))


class StopTimedOut(subprocess.TimeoutExpired):
    """An operator that did not stop within its time after SIGTERM; says the last of its log."""

    def __init__(self, cmd: Any, timeout: float, log_tail: str) -> None:
        super().__init__(cmd, timeout)
        self.log_tail = log_tail

    def __str__(self) -> str:
        return f"the operator did not stop within {self.timeout}s of SIGTERM; the last of its log:\n{self.log_tail}"


class OperatorProcess:
    """``engine run`` in a subprocess, its logs in a file, its metrics and probes on free ports.

    It checks its reads (``ENGINE_CHECK_READS=1``, inherited: ``tests/conftest.py``): a reader changing an
    object a read handed out ends it with status 70 and a log line that ``World.close`` fails on."""

    def __init__(self, world: World, *args: str, name: str = "operator",
                 program: Sequence[str] = ("-m", "engine.cli"), tmp: Path | None = None,
                 kubeconfig: Path | None = None) -> None:
        """kubeconfig: the management cluster's (default: the world's; a fault proxy's in front of it)."""
        self.metrics_port, self.probe_port = free_port(), free_port()
        self.log_path = world.tmp / f"{name}.log"
        self._log = self.log_path.open("wb")
        # Its temporary folder is the test's (``tmp``, or its own): what a killed operator leaves stays there.
        private_tmp = tmp if tmp is not None else world.tmp / f"{name}-tmp"
        private_tmp.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"} | {"TMPDIR": str(private_tmp)}
        self.process = subprocess.Popen(
            [sys.executable, *program, "run", "--kubeconfig", str(kubeconfig or world.kubeconfig),
             "--context", "management", "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}",
             "--health-probe-bind-address", f"127.0.0.1:{self.probe_port}", "--log-level", "debug", *args],
            cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, env=env,
        )
        world.processes.append(self)

    def _get(self, port: int, path: str) -> tuple[int, str] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
        except OSError:
            return None

    def ready(self) -> bool:
        return probe_ready(self.probe_port)

    def wait_ready(self) -> None:
        """Wait until it is ready; if it exits or never gets ready, kill it and fail with its log's tail."""
        try:
            wait_for(lambda: self.ready() or self.process.poll() is not None, timeout=STARTUP_PATIENCE,
                     message="the operator to be ready")
        except pytest.fail.Exception:
            self.kill()
            pytest.fail(f"the operator was not ready within {STARTUP_PATIENCE}s:\n{self.logs()[-3000:]}")
        assert self.process.poll() is None, f"the operator exited:\n{self.logs()}"

    def metric(self, name: str) -> float | None:
        answer = self._get(self.metrics_port, "/metrics")
        if answer is None:
            return None
        for line in answer[1].splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        return None

    def leads(self) -> bool:
        return self.metric("c5c3_operator_leader_status") == 1.0

    def logs(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM, and the exit status once it has stopped gracefully."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()  # the test fails, and leaves no process behind
            raise StopTimedOut(self.process.args, timeout, self.logs()[-4000:]) from None
        finally:
            self._log.close()

    def kill(self) -> None:
        """SIGKILL: no graceful stop, the Lease is not released."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


def order(kind: str, name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": API, "kind": kind, "metadata": {"name": name, "namespace": TENANT},
        "spec": {"controlPlaneRef": {"name": "cp", "namespace": "openstack"}, **spec},
    }


EXAMPLES = {
    ("KeystoneUser", ""): "keystoneuser.yaml",
    ("KeystoneUser", "edge-1"): "keystoneuser-edge-1.yaml",
    ("RabbitMQVhost", ""): "rabbitmqvhost.yaml",
    ("RabbitMQVhost", "edge-1"): "rabbitmqvhost.yaml",
}


def example(kind: str, cluster: str = "") -> Obj:
    """The example order of examples/orders/ for a kind on a cluster ("" management, or edge-1)."""
    doc: Obj = yaml.safe_load((ROOT / "examples" / "orders" / EXAMPLES[(kind, cluster)]).read_text())
    return doc


@contextlib.contextmanager
def operator_in_process(management: Any) -> Iterator[Any]:
    """An Operator with the checkout's rules on ``management`` (a KubeCluster on an emulated cluster), run on a
    thread until the block ends; yields it once ready, and stops it and the client afterwards."""
    from engine.operator import Operator, Options

    options = Options(rules=ROOT / "rules", metrics_bind_address="127.0.0.1:0",
                      health_probe_bind_address="127.0.0.1:0", clusters_namespace="", watch_timeout=5.0)
    running = Operator(options, management)
    stop = threading.Event()
    thread = threading.Thread(target=contextvars.copy_context().run, args=(running.run, stop), daemon=True)
    thread.start()
    try:
        wait_for(running.ready, message="the in-process operator to be ready")
        yield running
    finally:
        stop.set()
        thread.join(20)
        with contextlib.suppress(Exception):
            management.stop()
