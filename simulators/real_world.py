"""The embedded world on real API servers: what ``engine run`` without a cluster gives, on kube-apiservers.

``real_world`` takes running real servers (``offline.realkube``: the first is the management cluster, the
others are target clusters), installs our CRDs and the external stand-ins on each, seeds the management cluster as
the embedded world does (``simulators.embedded``, with a registration Secret per target cluster) and runs the
simulated K-ORC, ESO and topology operator against it on a thread. ``python -m offline.realkube --world``
reaches it through the lab's entry point ``real-world``. The simulated controllers act through any Cluster; on a
real server they read through a cached client whose reads after its own write wait until its cache holds it
(``KubeCluster``), so a controller never decides twice on a state it already changed.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from engine.clock import SystemClock
from engine.cluster.api import MANAGEMENT_CLUSTER, AlreadyExists, Cluster, Obj
from engine.cluster.kube import KubeCluster
from engine.cluster.kube.config import api_client_from_kubeconfig
from simulators import eso, korc, topology
from simulators.base import Reaction, Simulator, react
from simulators.embedded import crd_documents, management_world, registration, target_world

LOG = logging.getLogger("simulators.real_world")

CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
SERVED_PATIENCE = 60.0
"""Seconds the installed CRDs may take to be established and served (well under a second on an idle server)."""
REACT_EVERY = 0.1
"""Seconds between two rounds of the simulated controllers (a round reads caches only)."""


class RealServer(Protocol):
    """A running real API server (``offline.realkube.KubeServer``), as far as the world needs one."""

    def kubeconfig(self, name: str = ..., *, namespace: str | None = None, user: str = ...) -> Obj: ...


def client(name: str, kubeconfig: Obj, *, cache: bool, **options: Any) -> KubeCluster:
    """A client of one server; ``cache``: reads from watches (the simulated controllers) or live (tests)."""
    return KubeCluster(name, api_client_from_kubeconfig(kubeconfig), cache=cache, **options)


def install_crds(kubeconfig: Obj, crds: Sequence[Obj], *, patience: float = SERVED_PATIENCE) -> None:
    """Create the CRDs (those there already stay) and wait until each is established and discovery serves every
    version it serves; a CRD the server refuses raises its error (Invalid, with the server's causes)."""
    installer = client("", kubeconfig, cache=False, unserved_recheck=0.0)  # asks discovery until it serves them
    try:
        for crd in crds:
            with contextlib.suppress(AlreadyExists):
                installer.create(crd)
        deadline = time.monotonic() + patience
        for crd in crds:
            name = crd["metadata"]["name"]
            _wait(functools.partial(_established, installer, name), deadline, f"CRD {name} to be established")
            spec = crd["spec"]
            for version in spec.get("versions") or ():
                if version.get("served", True):
                    api_version, kind = f"{spec['group']}/{version['name']}", spec["names"]["kind"]
                    _wait(functools.partial(installer.serves, api_version, kind), deadline,
                          f"{kind}.{api_version} served")
    finally:
        installer.stop()


def _established(cluster: Cluster, name: str) -> bool:
    conditions = (cluster.get(*CRD, None, name).get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _wait(what: Callable[[], bool], deadline: float, message: str) -> None:
    while not what():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited too long for {message}")
        time.sleep(0.05)


def seed(cluster: Cluster, obj: Obj) -> Obj:
    """Create ``obj`` as given, its status included: a real server drops the status of a create where the kind
    has a status subresource, so it is written there after. The object as stored."""
    created = cluster.create({key: value for key, value in obj.items() if key != "status"})
    status = obj.get("status")
    if not status or not cluster.resource_info(obj["apiVersion"], obj["kind"]).status_subresource:
        return created
    meta = created["metadata"]
    return cluster.patch(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"], {"status": status},
                         status=True)


class Controllers:
    """The simulated controllers on a thread: a round (``react``) every ``every`` seconds until ``stop``. A failing
    round is logged and counted (``failures``), never fatal: the next round decides again.

    ``workers`` > 1 applies each controller's reactions of a round on that many threads (a real server answers a
    write in milliseconds, so one thread writing for hundreds of objects would hold the orders back). Only for
    worlds whose objects do not compete: two Users asking for one Keystone name in one round are then not told
    apart in order."""

    def __init__(self, simulators: Sequence[Simulator], *, every: float = REACT_EVERY, workers: int = 1) -> None:
        self.simulators = list(simulators)
        self.every = every
        self.failures = 0
        self.last_failure = ""
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="simulated controller") if workers > 1 else None
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, name="simulated controllers", daemon=True)

    def start(self) -> Controllers:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._halt.set()
        if self._thread.is_alive():
            self._thread.join(10)
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def _run(self) -> None:
        while not self._halt.wait(self.every):
            try:
                for note in react(self.simulators) if self._pool is None else self._react_on(self._pool):
                    LOG.info("%s", note)
            except Exception as error:  # a simulated controller must not stop the others
                self.failures += 1
                self.last_failure = f"{type(error).__name__}: {error}"
                LOG.exception("a simulated controller failed")

    def _react_on(self, pool: ThreadPoolExecutor) -> list[str]:
        """``react``, each controller's reactions applied at once on the pool (the controllers in turn)."""
        notes: list[str] = []
        for sim in self.simulators:
            done = pool.map(react, [[_Once(sim.name, reaction)] for reaction in sim.reactions()])
            notes.extend(note for found in done for note in found)
        return notes


@dataclass
class _Once:
    """One reaction as a simulator of its own, for ``react``'s skipping of reactions whose object moved on."""

    name: str
    reaction: Reaction

    def reactions(self) -> list[Reaction]:
        return [self.reaction]


def simulators_on(cluster: Cluster) -> list[Simulator]:
    """K-ORC, ESO and the topology operator acting on one cluster, on the wall clock."""
    clock = SystemClock()
    return [korc.KorcSimulator(cluster, clock), eso.EsoSimulator(cluster, clock),
            topology.TopologySimulator(cluster, clock)]


@dataclass
class RealWorld:
    """The world on real servers: a live client per cluster (by context name), the running controllers, and a
    sentence saying what the world is (the launcher prints it)."""

    clusters: dict[str, KubeCluster]
    management: KubeCluster
    controllers: Controllers
    description: str = ""


def description(management: str, targets: Sequence[str]) -> str:
    """What ``real_world`` made, in a sentence."""
    where = f"{management} and {', '.join(targets)} (registered in c5c3-clusters)" if targets else management
    return (f"With the embedded world: our CRDs and the external stand-ins, ControlPlane openstack/cp assigning "
            f"tenant-a on {where}; K-ORC, ESO and the RabbitMQ topology operator are simulated here.")


@contextlib.contextmanager
def real_world(servers: Mapping[str, RealServer], crds: Path, *, user: str = "admin") -> Iterator[RealWorld]:
    """Install and seed the world on running servers (the first is the management cluster, each other one a target
    cluster of that name, reached with ``user``'s token) and run the simulated controllers until the block ends."""
    names = list(servers)
    if not names:
        raise ValueError("the world needs a management cluster")
    management_name, targets = names[0], names[1:]
    documents = crd_documents(crds, crds / "external")
    for name, server in servers.items():
        install_crds(server.kubeconfig(name, user=user), documents)
    live = {name: client(MANAGEMENT_CLUSTER if name == management_name else name,
                         server.kubeconfig(name, user=user), cache=False) for name, server in servers.items()}
    lab: KubeCluster | None = None
    controllers: Controllers | None = None
    try:
        for obj in management_world(targets):
            seed(live[management_name], obj)
        for target in targets:
            for obj in target_world():
                seed(live[target], obj)
            seed(live[management_name], registration(target, servers[target].kubeconfig(target, user=user)))
        lab = client(MANAGEMENT_CLUSTER, servers[management_name].kubeconfig(management_name, user=user), cache=True)
        controllers = Controllers(simulators_on(lab)).start()
        yield RealWorld(live, live[management_name], controllers, description(management_name, targets))
    finally:
        if controllers is not None:
            controllers.stop()
        for cluster in [*live.values(), *([lab] if lab is not None else [])]:
            with contextlib.suppress(Exception):
                cluster.stop()

