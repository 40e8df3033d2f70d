"""Benchmark: what unrelated Secrets cost the operator's memory (run on demand, not in CI).

    .venv/bin/python bench/secret_memory.py [--secrets N] [--size KiB] [--root PATH]

It serves the embedded management world (``simulators.embedded``) over HTTP with the emulator,
starts ``engine run`` against it as a subprocess (from ``--root``: point it at an older checkout to
compare), converges one order of each kind, and samples the operator's resident memory (VmRSS);
then writes N unrelated Secrets of ``size`` KiB (half in the ControlPlane's namespace, where the
children live, half in a namespace of their own), waits, touches the orders so passes read
Secrets again, and samples again. Reported: both figures and their difference. Never asserted.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.clock import SystemClock  # noqa: E402
from engine.cluster.api import MANAGEMENT_CLUSTER, NotFound, Obj  # noqa: E402
from offline.cluster.memory import MemoryCluster  # noqa: E402
from offline.emulator import Emulator, write_kubeconfig  # noqa: E402
from simulators import eso, korc, topology  # noqa: E402
from simulators.base import react  # noqa: E402
from simulators.embedded import crd_documents, management_world  # noqa: E402

API = "c5c3.io/v1alpha1"
TENANT = "tenant-a"
ORDERS = (("KeystoneUser", "bench-user"), ("RabbitMQVhost", "bench-vhost"))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def settled_rss(pid: int, seconds: float) -> float:
    """The highest of a few samples over ``seconds`` (the garbage collector makes single samples noisy)."""
    samples = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        samples.append(rss_mib(pid))
        time.sleep(0.5)
    return max(samples)


def ready(cluster: MemoryCluster, kind: str, name: str) -> bool:
    try:
        obj = cluster.get(API, kind, TENANT, name)
    except NotFound:
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def wait(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--secrets", type=int, default=500)
    parser.add_argument("--size", type=int, default=100, help="KiB of data per Secret")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose engine run is measured")
    parser.add_argument("--settle", type=float, default=15.0, help="seconds to wait before each sample")
    args = parser.parse_args()

    management = MemoryCluster(MANAGEMENT_CLUSTER, clock=SystemClock())
    for crd in crd_documents(ROOT / "deploy" / "crds", ROOT / "deploy" / "crds" / "external"):
        management.create(crd)
    for obj in management_world():
        management.seed(obj)
    management.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bulk"}})
    server = Emulator(management)
    server.start()
    simulators = [korc.KorcSimulator(management, SystemClock()), eso.EsoSimulator(management, SystemClock()),
                  topology.TopologySimulator(management, SystemClock())]
    halt = threading.Event()

    def react_loop() -> None:
        while not halt.wait(0.2):
            with contextlib.suppress(Exception):
                react(simulators)

    threading.Thread(target=react_loop, daemon=True).start()
    tmp = Path(tempfile.mkdtemp(prefix="bench-secret-memory-"))
    kubeconfig = tmp / "kubeconfig"
    write_kubeconfig(kubeconfig, {"management": server}, "management")
    log = (tmp / "operator.log").open("wb")
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    env["PYTHONPATH"] = str(args.root)
    process = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "run", "--kubeconfig", str(kubeconfig), "--context", "management",
         "--clusters-namespace", "", "--metrics-bind-address", f"127.0.0.1:{free_port()}",
         "--health-probe-bind-address", f"127.0.0.1:{free_port()}"],
        cwd=args.root, stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    try:
        for kind, name in ORDERS:
            management.create({"apiVersion": API, "kind": kind, "metadata": {"name": name, "namespace": TENANT},
                               "spec": {"controlPlaneRef": {"name": "cp", "namespace": "openstack"}}})
        for kind, name in ORDERS:
            wait(lambda k=kind, n=name: ready(management, k, n), 120, f"{kind} {name} Ready")
        before = settled_rss(process.pid, args.settle)
        blob = base64.b64encode(os.urandom(args.size * 1024 * 3 // 4)).decode()
        for i in range(args.secrets):
            management.create({"apiVersion": "v1", "kind": "Secret",
                               "metadata": {"name": f"unrelated-{i}", "namespace": ("openstack", "bulk")[i % 2]},
                               "data": {"blob": blob}})
        for kind, name in ORDERS:  # wake the orders: their passes read Secrets again
            obj: Obj = management.get(API, kind, TENANT, name)
            obj["metadata"].setdefault("annotations", {})["bench/touched"] = str(time.time())
            management.update(obj)
        after = settled_rss(process.pid, args.settle)
        for kind, name in ORDERS:
            assert ready(management, kind, name), f"{kind} {name} is no longer Ready"
    finally:
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(20)
        halt.set()
        server.stop()
        log.close()
    print(f"engine run from {args.root}")
    print(f"{args.secrets} unrelated Secrets of {args.size} KiB")
    print(f"operator RSS before: {before:.1f} MiB, after: {after:.1f} MiB, difference: {after - before:+.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
