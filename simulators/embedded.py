"""``engine run`` with no cluster to run against: a management cluster and a target cluster, embedded.

Both clusters are in-memory stores served over the real Kubernetes REST API by the emulator
(``offline.emulator``), so kubectl and the operator reach them as they would reach real API servers. They
get our CRDs, permissive CRDs of the external kinds (``deploy/crds/external/``) and a world to serve orders in:
ControlPlane ``openstack/cp`` assigning ``tenant-a`` on both clusters with what it needs ready, and the
registration Secret of ``edge-1`` (so the multi-cluster path is the real one). K-ORC, ESO and the RabbitMQ
topology operator are simulated on a background thread against the management cluster. A kubeconfig with one
context per cluster (``management``, ``edge-1``) is written to a temporary folder and printed with a few kubectl
commands; then the operator runs against it until SIGTERM or SIGINT.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

import yaml

from engine.clock import SystemClock
from engine.cluster.api import MANAGEMENT_CLUSTER, Obj
from engine.operator import Options, bind_endpoints, lint_clean, run, stop_on_signals
from engine.ops import BindError
from engine.rules.bundle import default_folder
from engine.rules.crd_lint import crd_file_errors
from engine.runtime.clusters import KUBECONFIG_KEY, REGISTRATION_LABEL
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator, write_kubeconfig
from simulators import eso, korc, topology
from simulators.base import Simulator, react

LOG = logging.getLogger("simulators.embedded")

TARGET = "edge-1"
MANAGEMENT_CONTEXT = "management"
CP_NAMESPACE, CP_NAME = "openstack", "cp"
TENANT = "tenant-a"
PUBLIC_ENDPOINT = "https://keystone.example.com/v3"
PUBLISHED_MESSAGING = "rabbitmq.example.com:5671"
REACT_EVERY = 0.5
"""Seconds between two rounds of the simulated controllers."""

READY = {"status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}


def namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def management_world(targets: Sequence[str] = (TARGET,)) -> list[Obj]:
    """What the management cluster holds before the operator starts (registration Secrets aside): ControlPlane
    ``openstack/cp`` assigns ``tenant-a`` on the management cluster and on each of ``targets``."""
    return [
        namespace(CP_NAMESPACE), namespace(TENANT), namespace("c5c3-system"), namespace("c5c3-clusters"),
        {
            "apiVersion": "c5c3.io/v1alpha1", "kind": "ControlPlane",
            "metadata": {"name": CP_NAME, "namespace": CP_NAMESPACE},
            "spec": {
                "namespaceAssignments": [
                    {"namespace": TENANT}, *({"namespace": TENANT, "targetClusterRef": {"name": target}}
                                             for target in targets),
                ],
                "services": {"keystone": {"publicEndpoint": PUBLIC_ENDPOINT}},
                "infrastructure": {
                    "messaging": {"clusterRef": {"name": "cp-rabbitmq"}},
                    "publishedMessagingEndpoint": PUBLISHED_MESSAGING,
                },
            },
            "status": {"conditions": [{"type": "AdminCredentialReady", "reason": "Ready",
                                       "message": "admin credential is ready", **READY}]},
        },
        {
            "apiVersion": "external-secrets.io/v1", "kind": "SecretStore",
            "metadata": {"name": "openbao-tenant-store", "namespace": CP_NAMESPACE},
            "status": {"conditions": [{"type": "Ready", "reason": "Valid", "message": "store validated", **READY}]},
        },
        {
            "apiVersion": "rabbitmq.com/v1beta1", "kind": "RabbitmqCluster",
            "metadata": {"name": "cp-rabbitmq", "namespace": CP_NAMESPACE},
            "status": {
                "defaultUser": {"secretReference": {
                    "name": "cp-rabbitmq-default-user", "namespace": CP_NAMESPACE,
                    "keys": {key: key for key in ("username", "password", "host", "port")},
                }},
                "conditions": [{"type": "AllReplicasReady", "reason": "AllPodsAreReady", **READY}],
            },
        },
        {
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "cp-rabbitmq-default-user", "namespace": CP_NAMESPACE},
            "data": {key: _b64(value) for key, value in {
                "username": "embedded-admin", "password": "embedded-admin-password",
                "host": "cp-rabbitmq.openstack.svc", "port": "5672",
            }.items()},
        },
    ]


def target_world() -> list[Obj]:
    return [namespace(TENANT)]


def registration(name: str, kubeconfig: Obj) -> Obj:
    """The Secret that registers a target cluster on the management cluster."""
    return {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": "c5c3-clusters", "labels": {REGISTRATION_LABEL: "true"}},
        "data": {KUBECONFIG_KEY: _b64(yaml.safe_dump(kubeconfig))},
    }


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def crd_documents(*folders: Path) -> list[Obj]:
    """Every CustomResourceDefinition in the top-level YAML files of the folders."""
    found: list[Obj] = []
    for folder in folders:
        for path in sorted(folder.glob("*.yaml")):
            found.extend(
                doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"
            )
    return found


@dataclass
class Embedded:
    """Two emulated clusters with their world, simulated controllers and a kubeconfig."""

    management: MemoryCluster
    target: MemoryCluster
    management_server: Emulator
    target_server: Emulator
    kubeconfig: Path
    simulators: Sequence[Simulator]

    def react_until(self, stop: threading.Event) -> None:
        """The simulated controllers' loop: a round every REACT_EVERY seconds until ``stop``."""
        while not stop.wait(REACT_EVERY):
            try:
                for note in react(self.simulators):
                    LOG.info("%s", note)
            except Exception:  # a simulated controller must not take the operator down
                LOG.exception("a simulated controller failed")

    def stop(self) -> None:
        self.management_server.stop()
        self.target_server.stop()


@contextlib.contextmanager
def embedded_clusters(crds: Path, kubeconfig_out: Path | None = None) -> Iterator[Embedded]:
    """Start both emulators with their world; stop them afterwards."""
    clock = SystemClock()
    management = MemoryCluster(MANAGEMENT_CLUSTER, clock=clock)
    target = MemoryCluster(TARGET, clock=clock)
    for cluster in (management, target):
        for crd in crd_documents(crds, crds / "external"):
            cluster.create(crd)
    for obj in management_world():
        management.seed(obj)
    for obj in target_world():
        target.seed(obj)
    management_server, target_server = Emulator(management), Emulator(target)
    management_server.start()
    target_server.start()
    made: Path | None = None
    try:
        management.seed(registration(TARGET, target_server.kubeconfig(TARGET)))
        if kubeconfig_out is None:
            made = Path(tempfile.mkdtemp(prefix="engine-run-"))
            kubeconfig_out = made / "kubeconfig"
        write_kubeconfig(kubeconfig_out, {MANAGEMENT_CONTEXT: management_server, TARGET: target_server},
                         MANAGEMENT_CONTEXT)
        simulators: list[Simulator] = [
            korc.KorcSimulator(management, clock), eso.EsoSimulator(management, clock),
            topology.TopologySimulator(management, clock),
        ]
        yield Embedded(management, target, management_server, target_server, kubeconfig_out, simulators)
    finally:
        management_server.stop()
        target_server.stop()
        if made is not None:  # the kubeconfig of clusters that are gone; one the user named (--kubeconfig-out) stays
            shutil.rmtree(made, ignore_errors=True)


def local_only(options: Options) -> Options:
    """The metrics and probe addresses of a run on embedded clusters: one without a host (``:8080``, the
    default) listens on 127.0.0.1, not on every interface: a laptop's demo is not served to its network. A host
    given (``0.0.0.0:8080``) is kept."""
    def local(address: str) -> str:
        return f"127.0.0.1{address.strip()}" if address.strip().startswith(":") else address

    return replace(options, metrics_bind_address=local(options.metrics_bind_address),
                   health_probe_bind_address=local(options.health_probe_bind_address))


def banner(embedded: Embedded, out: TextIO) -> None:
    """Where the kubeconfig is and how to use it."""
    path = embedded.kubeconfig
    orders = default_folder("orders")  # the checkout's examples/orders, else the installed copy
    out.write(
        "engine run: no --kubeconfig and not in a pod, so running on embedded clusters:\n"
        f"  management  {embedded.management_server.url}  (context {MANAGEMENT_CONTEXT})\n"
        f"  {TARGET}      {embedded.target_server.url}  (context {TARGET}, registered in c5c3-clusters)\n"
        f"ControlPlane {CP_NAMESPACE}/{CP_NAME} assigns namespace {TENANT} on both; K-ORC, ESO and the RabbitMQ\n"
        "topology operator are simulated. Try, in another shell:\n"
        f"  export KUBECONFIG={path}\n"
        f"  kubectl apply --server-side -f {orders / 'keystoneuser.yaml'} -f {orders / 'rabbitmqvhost.yaml'}\n"
        f"  kubectl wait --for=condition=Ready keystoneuser/workflow rabbitmqvhost/messaging -n {TENANT}\n"
        f"  kubectl --context {TARGET} apply --server-side -f {orders / 'keystoneuser-edge-1.yaml'}\n"
        f"  kubectl --context {TARGET} wait --for=condition=Ready keystoneuser/billing -n {TENANT}\n"
        f"  kubectl get keystoneusers,rabbitmqvhosts -A; kubectl --context {TARGET} get keystoneusers -A\n"
        "Stop with Ctrl-C. Logs follow as JSON lines on stderr.\n"
    )
    out.flush()


def main(options: Options, *, crds: Path, kubeconfig_out: Path | None = None, out: TextIO | None = None,
         stop: threading.Event | None = None) -> int:
    """Claim the operator's addresses, start the embedded clusters, print how to use them, run the operator
    against them. The banner comes only once the operator will start: a CRD a real API server would refuse ends
    it before anything starts, with ``engine lint``'s line for each refusal; so do rules that do not lint clean,
    with their lint lines; an address in use, with one line naming the flag and the port. The addresses without
    a host listen on 127.0.0.1 (``local_only``). The kubeconfig's temporary folder goes at the stop."""
    import sys

    stream = out if out is not None else sys.stdout
    stop = stop if stop is not None else threading.Event()
    options = local_only(options)
    refused = [error for folder in (crds, crds / "external") for path in sorted(folder.glob("*.yaml"))
               for error in crd_file_errors(path)]
    if refused:
        for error in refused:
            print(error, file=sys.stderr)
        print("engine run: a real API server would refuse these CRDs; nothing started", file=sys.stderr)
        return 1
    rules = lint_clean(options, stream)
    if rules is None:
        return 1
    try:
        endpoints = bind_endpoints(options)
    except BindError as exc:
        print(f"engine run: {exc}", file=sys.stderr)
        return 1
    with stop_on_signals(stop), embedded_clusters(crds, kubeconfig_out) as embedded:  # Ctrl-C right after the
        banner(embedded, stream)  # banner stops it as gracefully as later, and the kubeconfig's folder goes
        halt = threading.Event()
        controllers = threading.Thread(target=embedded.react_until, args=(halt,), name="simulated controllers",
                                       daemon=True)
        controllers.start()
        try:
            return run(replace(options, kubeconfig=embedded.kubeconfig, context=MANAGEMENT_CONTEXT), stop=stop,
                       out=stream, endpoints=endpoints, rules=rules)
        finally:
            halt.set()
            controllers.join(5)
