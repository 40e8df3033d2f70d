"""Benchmark: the external harness's KeystoneUser orders against a real kube-apiserver (run on demand).

    .venv/bin/python bench/real_server.py N [--steady-s 15] [--repair-probe 3] [--json OUT]

The same phases and the same JSON summary as the external KeystoneUser harness's ``bench.py``, so
``bench/figures.py`` prints both side by side (``--backend both``), but the API server is a real one:
etcd, kube-apiserver and kube-controller-manager (``offline.realkube``, binaries from
``scripts/kube-binaries``) with our CRDs and the external stand-ins installed, the world of ``engine run``'s
embedded clusters on it (ControlPlane ``openstack/cp`` assigning ``tenant-a``, a ready secret store), and
the simulated K-ORC, ESO and topology operator (``simulators``) acting through a cached client.

Phases: startup (``engine run --kubeconfig`` with ``--clusters-namespace ""`` and ENGINE_ARGS, until it watches
KeystoneUsers and its requests pause for 2 s), converge (N orders ``ku-00000``... created, until all are
Ready), settle, checks (each order Ready at password generation 1, its delivered Secret owned by it), the
repair probe (delivered Secrets deleted and edited, timed until restored), steady. What it counts:

- requests: the operator's, from the server's audit log (the operator connects as its own user; the
  harness and the simulated controllers as another), by verb (GET, LIST, WATCH, POST, PUT, PATCH, DELETE,
  DISCOVERY; the audit log does not tell a merge patch from an apply), attributed to the phase they started in;
- operator CPU and peak RSS from /proc (the operator's session); the harness's CPU (simulated controllers,
  readiness watch, audit log reading) and the API server's (etcd, kube-apiserver, kube-controller-manager);
- time-to-Ready per order: from its create to the first watch event showing it Ready.

The simulated controllers react within ``--react-every`` seconds (the external harness's K-ORC and ESO after 0.2 s),
each writing a round's reactions on ``--controller-workers`` threads; the orders are created on ``--create-workers``
threads (the external harness writes both in-process, without a request).
Timings depend on the machine and its load: compare in one sitting. Everything stays on 127.0.0.1 and stops.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.cluster.api import ApiError, Cluster, Gone, NotFound, Obj  # noqa: E402
from offline.emulator import write_kubeconfig  # noqa: E402
from offline.emulator.requestlog import RequestRecord  # noqa: E402
from offline.realkube import KubeServer, User  # noqa: E402
from simulators import real_world  # noqa: E402
from simulators.embedded import crd_documents, management_world  # noqa: E402

API = "c5c3.io/v1alpha1"
TENANT, CP_NAMESPACE = "tenant-a", "openstack"
OPERATOR, HARNESS = "operator", "bench"
WRITES = ("POST", "PUT", "PATCH", "DELETE")
CLK, PAGE = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")


def log(*parts: object) -> None:
    print(f"[real-server bench {time.strftime('%H:%M:%S')}]", *parts, file=sys.stderr, flush=True)


def order(name: str) -> Obj:
    """The external harness's order."""
    return {"apiVersion": API, "kind": "KeystoneUser", "metadata": {"name": name, "namespace": TENANT},
            "spec": {"controlPlaneRef": {"name": "cp", "namespace": CP_NAMESPACE}, "passwordGeneration": 1}}


def verb_of(record: RequestRecord) -> str:
    """The external harness's verb classes (its PATCH:<content type> are one PATCH here)."""
    parts = urlsplit(record.path)
    segments = [s for s in parts.path.split("/") if s]
    if not segments or segments[0] not in ("api", "apis") or len(segments) <= (2 if segments[0] == "api" else 3):
        return "DISCOVERY" if record.method == "GET" else "OTHER"
    if record.method != "GET":
        return record.method
    if parse_qs(parts.query).get("watch", [""])[0] in ("true", "1"):
        return "WATCH"
    rest = segments[2:] if segments[0] == "api" else segments[3:]
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return "GET" if len(rest) > 1 else "LIST"


def counted(records: list[RequestRecord], start: float, end: float, n: int) -> dict[str, Any]:
    """The requests started in [start, end): totals, per order and by verb, as the external harness reports them."""
    verbs = Counter(verb_of(r) for r in records if start <= r.started < end)
    total, writes = sum(verbs.values()), sum(verbs[v] for v in WRITES)
    return {"seconds": round(end - start, 3), "total": total, "writes": writes, "by_verb": dict(sorted(verbs.items())),
            "per_order": {"total": round(total / n, 3), "writes": round(writes / n, 3),
                          "by_verb": {k: round(v / n, 3) for k, v in sorted(verbs.items())}}}


class Session:
    """CPU seconds and peak RSS of every process of one session (the operator's, started as its leader)."""

    def __init__(self, leader: int) -> None:
        self.leader, self.peak_rss = leader, 0

    def cpu(self) -> float:
        total = 0.0
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    rest = stat.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{pid}/status") as status:
                    hwm = next((int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:")), 0)
            except (OSError, ValueError, IndexError):
                continue
            if int(rest[3]) == self.leader:
                total += sum(int(x) for x in rest[11:15]) / CLK
                self.peak_rss = max(self.peak_rss, hwm, int(rest[21]) * PAGE)
        return total


def process_cpu(pids: list[int]) -> float:
    """CPU seconds so far of these processes (the API server's)."""
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError), open(f"/proc/{pid}/stat") as stat:
            total += sum(int(x) for x in stat.read().rsplit(")", 1)[1].split()[11:13]) / CLK
    return total


def harness_cpu() -> float:
    times = os.times()
    return times.user + times.system


class Readiness:
    """When each created order was first seen Ready (a watch of the orders, relisting after Gone)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.created: dict[str, float] = {}
        self.ready: dict[str, float] = {}
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, name="readiness", daemon=True)
        self._thread.start()

    def _see(self, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        conditions = (obj.get("status") or {}).get("conditions") or ()
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            with self._lock:
                if name in self.created and name not in self.ready:
                    self.ready[name] = time.monotonic()

    def _run(self) -> None:
        version: str | None = None
        while not self._halt.is_set():
            try:
                if version is None:
                    listed = self.cluster.list(API, "KeystoneUser", TENANT)
                    for obj in listed.items:
                        self._see(obj)
                    version = listed.resource_version
                for event in self.cluster.watch(API, "KeystoneUser", TENANT, resource_version=version, timeout=5,
                                                bookmarks=True):
                    version = event["object"]["metadata"].get("resourceVersion") or version
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._see(event["object"])
                    if self._halt.is_set():
                        break
            except Gone:
                version = None  # too old: list again
            except ApiError:
                time.sleep(0.1)

    def count(self) -> int:
        with self._lock:
            return len(self.ready)

    def stop(self) -> None:
        self._halt.set()
        self._thread.join(10)


def distribution(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    p95 = ordered[max(0, min(len(ordered) - 1, round(0.95 * len(ordered) + 0.5) - 1))]
    return {"min": round(ordered[0], 3), "median": round(statistics.median(ordered), 3), "p95": round(p95, 3),
            "max": round(ordered[-1], 3), "n": len(ordered)}


def checks(cluster: Cluster, names: list[str]) -> dict[str, Any]:
    """Each order Ready at password generation 1, its delivered Secret there and controlled by it."""
    problems: Counter[str] = Counter()
    ok = 0
    for name in names:
        bad = []
        try:
            obj = cluster.get(API, "KeystoneUser", TENANT, name)
            secret = cluster.get("v1", "Secret", TENANT, f"{name}-credentials")
        except NotFound:
            problems["order or delivered Secret missing"] += 1
            continue
        status = obj.get("status") or {}
        if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()):
            bad.append("not Ready")
        if status.get("passwordGeneration") != 1:
            bad.append("status.passwordGeneration != 1")
        owners = [r for r in secret["metadata"].get("ownerReferences") or () if r.get("controller")]
        if [r.get("uid") for r in owners] != [obj["metadata"]["uid"]]:
            bad.append("delivered Secret not controlled by the order")
        problems.update(bad)
        ok += not bad
    return {"orders_ok": ok, "orders_checked": len(names), "problems": dict(problems)}


def repair_probe(cluster: Cluster, names: list[str], rounds: int, timeout: float = 15.0) -> dict[str, Any]:
    """Delete one delivered Secret and edit another's password, per round; seconds until each is restored."""
    found: dict[str, list[dict[str, Any]]] = {"delete": [], "edit": []}
    for i in range(rounds):
        for mode, name in (("delete", names[2 * i]), ("edit", names[2 * i + 1])):
            secret_name = f"{name}-credentials"
            wanted = dict(cluster.get("v1", "Secret", TENANT, secret_name).get("data") or {})
            started = time.monotonic()
            if mode == "delete":
                cluster.delete("v1", "Secret", TENANT, secret_name)
            else:
                cluster.patch("v1", "Secret", TENANT, secret_name,
                              {"data": {"password": base64.b64encode(b"tampered").decode()}})
            restored = None
            while time.monotonic() - started < timeout:
                time.sleep(0.05)
                with contextlib.suppress(NotFound):
                    if dict(cluster.get("v1", "Secret", TENANT, secret_name).get("data") or {}) == wanted:
                        restored = round(time.monotonic() - started, 3)
                        break
            found[mode].append({"order": name, "restored_s": restored})
            time.sleep(0.5)
    return found


@contextlib.contextmanager
def operator_process(kubeconfig: Path, work: Path) -> Iterator[subprocess.Popen[bytes]]:
    command = [sys.executable, "-m", "engine.cli", "run", "--kubeconfig", str(kubeconfig), "--clusters-namespace", "",
               "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
               *os.environ.get("ENGINE_ARGS", "").split()]
    with (work / "operator.log").open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            yield process
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(10)


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="real-server-bench-"))
    n, names = args.n, [f"ku-{i:05d}" for i in range(args.n)]
    users = {name: User(name, ("system:masters",)) for name in (OPERATOR, HARNESS)}
    summary: dict[str, Any] = {"backend": "real kube-apiserver", "n": n, "workdir": str(work), "problems": [],
                               "host": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
                               "params": {"react_every": args.react_every,
                                          "controller_workers": args.controller_workers,
                                          "create_workers": args.create_workers,
                                          "engine_args": os.environ.get("ENGINE_ARGS", "")}}
    with KubeServer("bench", users=users, audit_users=(OPERATOR,)) as server:
        as_harness = server.kubeconfig("bench", user=HARNESS)
        crds = ROOT / "deploy" / "crds"
        real_world.install_crds(as_harness, crd_documents(crds, crds / "external"))
        cluster = real_world.client("", as_harness, cache=False)
        lab = real_world.client("", as_harness, cache=True)
        for obj in management_world(targets=()):
            real_world.seed(cluster, obj)
        controllers = real_world.Controllers(
            real_world.simulators_on(lab), every=args.react_every, workers=args.controller_workers).start()
        readiness = Readiness(cluster)
        kubeconfig = work / "kubeconfig"
        write_kubeconfig(kubeconfig, {"bench": _As(server, OPERATOR)}, "bench")
        audit, server_pids = server.audit_log, list(server.pids().values())
        server_cpu0, harness_cpu0 = process_cpu(server_pids), harness_cpu()
        t0 = time.time()
        try:
            with operator_process(kubeconfig, work) as process:
                session = Session(process.pid)
                deadline, quiet_since, seen = time.monotonic() + args.startup_timeout, time.monotonic(), -1
                while time.monotonic() < deadline and process.poll() is None:
                    records = audit.records() + audit.open_records()
                    watching = any("/keystoneusers" in r.path and verb_of(r) == "WATCH" for r in records)
                    if len(records) != seen:
                        seen, quiet_since = len(records), time.monotonic()
                    if watching and time.monotonic() - quiet_since >= 2.0:
                        break
                    time.sleep(0.1)
                else:
                    raise RuntimeError(f"the operator did not start within {args.startup_timeout} s "
                                       f"(exit {process.poll()}); its log: {work / 'operator.log'}")
                t_started, cpu_started = time.time(), session.cpu()
                summary["startup"] = {"seconds": round(t_started - t0, 3)}
                log(f"operator up after {summary['startup']['seconds']} s")

                harness_before = harness_cpu()
                t_converge, m_converge = time.time(), time.monotonic()

                def create(name: str) -> None:
                    readiness.created[name] = time.monotonic()
                    cluster.create(order(name))

                with ThreadPoolExecutor(args.create_workers) as creating:
                    list(creating.map(create, names))
                created_in = time.time() - t_converge
                deadline, last_log = time.monotonic() + args.converge_timeout, 0.0
                while readiness.count() < n and time.monotonic() < deadline and process.poll() is None:
                    if time.monotonic() - last_log > 10:
                        log(f"converging: {readiness.count()}/{n} Ready after {time.time() - t_converge:.1f} s")
                        last_log = time.monotonic()
                    time.sleep(0.05)
                t_converged, cpu_converged = time.time(), session.cpu()
                times = [readiness.ready[k] - readiness.created[k] for k in names if k in readiness.ready]
                requests = counted(audit.records() + audit.open_records(), t_converge, t_converged, n)
                summary["converge"] = {
                    "all_ready": len(times) == n, "ready": len(times), "create_burst_s": round(created_in, 3),
                    "wall_s_to_all_ready": (round(max(readiness.ready.values()) - m_converge, 3) if len(times) == n
                                            else None),
                    "time_to_ready_s": distribution(times), "requests_per_order": requests.pop("per_order"),
                    "requests": requests, "operator_cpu_s": round(cpu_converged - cpu_started, 3),
                    "harness_cpu_s": round(harness_cpu() - harness_before, 3),
                    "server_cpu_s": round(process_cpu(server_pids) - server_cpu0, 3),
                }
                if len(times) != n:
                    summary["problems"].append(f"only {len(times)}/{n} orders Ready")
                log(f"converge: {len(times)}/{n} Ready, {requests['total']} requests "
                    f"({requests['total'] / n:.1f}/order)")

                time.sleep(args.settle_s)
                summary["settle"] = {"operator_cpu_s": round(session.cpu() - cpu_converged, 3),
                                     "requests": counted(audit.records(), t_converged, time.time(), n)}
                summary["checks"] = checks(cluster, names)
                if args.repair_probe and len(names) >= 2 * args.repair_probe:
                    summary["repair"] = repair_probe(cluster, names, args.repair_probe)
                t_steady = time.time()
                time.sleep(args.steady_s)
                steady = counted(audit.records() + audit.open_records(), t_steady, time.time(), n)
                summary["steady"] = {"seconds": steady["seconds"], "requests": steady}
                summary["operator_process"] = {"peak_rss_mib": round(session.peak_rss / 2**20, 1),
                                               "cpu_s_total": round(session.cpu(), 3),
                                               "exited_early": process.poll() is not None}
        finally:
            readiness.stop()
            controllers.stop()
            cluster.stop()
            lab.stop()
        summary["server_process"] = {"cpu_s_total": round(process_cpu(server_pids) - server_cpu0, 3),
                                     "note": "etcd, kube-apiserver, kube-controller-manager"}
        summary["harness_process"] = {"cpu_s": round(harness_cpu() - harness_cpu0, 3),
                                      "note": "simulated K-ORC, ESO and topology operator, readiness watch, audit log"}
        summary["simulated_controllers"] = {"failed_rounds": controllers.failures, "last": controllers.last_failure}
    return summary


class _As:
    """A server whose kubeconfig names one of its users (the operator's)."""

    def __init__(self, server: KubeServer, user: str) -> None:
        self.server, self.user = server, user

    def kubeconfig(self, name: str = "kube", *, namespace: str | None = None) -> Obj:
        return self.server.kubeconfig(name, namespace=namespace, user=self.user)


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parse.add_argument("n", type=int, help="KeystoneUser orders to create")
    parse.add_argument("--steady-s", type=float, default=15.0)
    parse.add_argument("--settle-s", type=float, default=5.0)
    parse.add_argument("--repair-probe", type=int, default=3, help="rounds of delete+edit of delivered Secrets")
    parse.add_argument("--startup-timeout", type=float, default=120.0)
    parse.add_argument("--converge-timeout", type=float, default=900.0)
    parse.add_argument("--react-every", type=float, default=0.2,
                       help="seconds between two rounds of the simulated controllers (default 0.2)")
    parse.add_argument("--controller-workers", type=int, default=8,
                       help="threads each simulated controller writes a round's reactions on (default 8)")
    parse.add_argument("--create-workers", type=int, default=8,
                       help="threads the N orders are created on (default 8; the external harness creates in-process)")
    parse.add_argument("--json", type=Path, help="also write the JSON summary here")
    return parse


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    summary = run(args)
    text = json.dumps(summary, indent=2)
    if args.json is not None:
        args.json.write_text(text)
    print(text)
    return 0 if summary["converge"]["all_ready"] and not summary["problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
