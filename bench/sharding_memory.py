"""Measurement: memory and throughput per replica of real ``engine run --sharded`` processes, for 1, 2 and 4 replicas.

    .venv/bin/python bench/sharding_memory.py [--orders N] [--replicas 1,2,4] [--trace DIR]
        [--targets K --orders-on W,... [--engage]] [--idle-seconds S]

For each replica count: a fresh emulated management cluster with the simulated controllers (the integration
tests' world, in this process) and that many ``engine run --sharded`` processes. Once every replica is ready and
the first leader has placed nothing yet, it notes each process's CPU time, creates N KeystoneUser orders and
waits until every order is Ready and the members hold their shares. Then it reads, per process:

- memory: resident (VmRSS, and its peak VmHWM), proportional (Pss: shared pages split between the processes
  that map them) and private (Private_Clean + Private_Dirty: what stopping the process would give back), from
  /proc; and its ``c5c3_operator_cached_objects`` (objects held in full, by kind);
- throughput: the orders it holds (labelled for it), the passes it ran and the CPU seconds it used from the
  orders' creation until all were Ready, hence its orders per CPU second and CPU milliseconds per order; its CPU
  per second over 5 s with no order before them (Lease renewals, the leader's rounds: a cost per replica, not per
  order); its API requests by verb from the orders' creation until the end (Lease renewals included), and how
  long one took to be answered on average (not watches: the emulated API server's latency as the replica saw it);
  for the round, the orders Ready per second of wall time and the replicas' CPU seconds together;
- the passes by cause (``c5c3_operator_pass_wakes_total``): watch events by the kind of their object, a wait's
  requeue (the rules' 10 s re-checks), retries, events held during the order's previous pass;
- the world's own CPU: this process runs the emulator and the simulated controllers (and the wait for Ready); its
  CPU seconds per wall second while the orders converged (1.0 is a core: above about 0.9 the world, not the
  operator, sets the pace), of which admitting writes (the CRDs' schemas and CEL rules; estimated from every tenth
  admission), with the
  simulated controllers' thread apart, how long their rounds took and the share of a round's time they ran (the
  rest they waited for a core or the interpreter lock: K-ORC and ESO answer late, and the orders' waits re-check).

``--targets K`` registers K target clusters (edge-0, edge-1, ...; the replicas then read the registrations) and
``--orders-on`` spreads the orders over them by weight (``100,99,1``: half on edge-0, one on edge-2, none on the rest);
each replica's figures then also come per cluster (``clusters``, and their mean in ``per_cluster_mean``): the orders
it holds there, its open watch streams with no order and at the end, its connections, the objects it holds, its
requests at start (until the idle window) and while the orders converged, and its watch threads' CPU in the idle
window (per minute) and while converging (``per_cluster.py`` says how each is attributed). ``--engage`` then
registers one more cluster and times each replica until it has as many watches open there as on a target with no
order (what opening a cluster's watches costs and waits). ``watches_on_the_last_target`` lists the streams open
there by resource and label selector, every replica's together.

``--trace DIR`` keeps each replica's log at debug level (every pass with what woke it and how long ago:
``pass woken by event of User 0.012 s ago``) and ``world.jsonl`` (each simulated controller's write, with its time),
to follow an order from the world's write to the pass it woke.

Two shared cores cannot show replicas running side by side, so the wall time to all Ready grows with the
replicas here. ``projected_seconds_with_a_core_each`` is a projection, not a measurement: the most CPU one
replica spent on its share, which bounds the time to converge when each replica has a core of its own and the
API server is not the bottleneck. Run on demand, not in CI; every process it starts is stopped (SIGTERM, then
SIGKILL) before the next round. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "integration"))
sys.path.insert(0, str(ROOT / "bench"))

import per_cluster  # noqa: E402
from integration_kit import API, TENANT, OperatorProcess, World, condition, get, order  # noqa: E402

from engine.cluster.api import Conflict, NotFound  # noqa: E402
from offline.cluster import memory as memory_module  # noqa: E402
from offline.emulator import Emulator  # noqa: E402

ORIGINAL_ADMIT = memory_module.admit

SHARDED = ("--sharded", "--leader-elect-lease-duration", "15s", "--leader-elect-renew-deadline", "10s",
           "--leader-elect-retry-period", "500ms", "--clusters-namespace", "")
"""The default lease duration and renew deadline (with 6 s / 4 s, a loaded machine's emulator answered renewals
late enough that members lapsed and the round failed); rounds every half second, as before."""
SHARD = "sharding.c5c3.io/shard"
TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE = 10
IDLE_SECONDS = 5.0
"""How long the replicas are watched with no order before the orders are created (their idle CPU)."""
"""One admission in this many is timed (``admission_cpu_seconds`` is an estimate from those)."""


def memory_mib(pid: int) -> dict[str, float]:
    """Resident, peak, proportional and private memory of a process, in MiB."""
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    rollup = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])

    def kib(table: dict[str, str], key: str) -> int:
        return int(table[key].split()[0])

    return {"rss": round(kib(status, "VmRSS") / 1024, 1), "peak": round(kib(status, "VmHWM") / 1024, 1),
            "pss": round(kib(rollup, "Pss") / 1024, 1),
            "private": round((kib(rollup, "Private_Clean") + kib(rollup, "Private_Dirty")) / 1024, 1)}


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15 of stat)


def thread_cpu_seconds(thread: threading.Thread) -> float:
    """User plus system CPU time of one thread of this process so far."""
    fields = Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class TimedWorld(World):
    """The integration tests' world, timing its simulated controllers' rounds and (with a trace) noting each write."""

    def __init__(self, tmp: Path, trace: Path | None) -> None:
        self.rounds: list[float] = []
        self.round_cpu = 0.0
        """CPU seconds the simulated controllers' rounds used (the rest of a round's time they waited for a core or
        the interpreter lock)."""
        self.admission_cpu = 0.0
        """CPU seconds the emulated API server spent admitting writes (the CRDs' schemas and CEL rules), estimated
        from every SAMPLEth admission: two clock reads per admission (system calls, made holding the interpreter
        lock, where a loaded machine preempts the thread and the whole world waits) cost more than they measured."""
        self._notes = (trace / "world.jsonl").open("w", encoding="utf-8") if trace is not None else None
        self._lock = threading.Lock()
        super().__init__(tmp)
        admit = ORIGINAL_ADMIT
        admissions = itertools.count()

        def timed_admit(*args: Any, **kwargs: Any) -> Any:
            if next(admissions) % SAMPLE:
                return admit(*args, **kwargs)
            began = time.thread_time()
            try:
                return admit(*args, **kwargs)
            finally:
                spent = time.thread_time() - began
                with self._lock:
                    self.admission_cpu += SAMPLE * spent

        memory_module.admit = timed_admit  # the memory cluster admits through its module's name

    def simulation_thread(self) -> threading.Thread:
        """The thread the simulated controllers run on (the world's ``Controllers``; their rounds are not timed)."""
        assert self.controllers is not None
        return self.controllers._thread

    def _react(self) -> None:
        while not self._halt.wait(0.1):
            began, began_cpu = time.monotonic(), time.thread_time()
            for sim in self.simulators:
                with contextlib.suppress(Exception):
                    for reaction in sim.reactions():
                        try:
                            reaction.apply()
                        except (NotFound, Conflict):
                            continue
                        if self._notes is not None:
                            self._notes.write(json.dumps({"time": time.time(), "by": sim.name,
                                                          "note": reaction.note}) + "\n")
            self.rounds.append(time.monotonic() - began)
            self.round_cpu += time.thread_time() - began_cpu

    def close(self) -> None:
        super().close()
        if self._notes is not None:
            self._notes.close()


def scrape(process: OperatorProcess) -> dict[str, Any]:
    """Objects held in full by kind, passes run (and by cause), the orders it holds and whether it leads."""
    answer = process._get(process.metrics_port, "/metrics")
    held: dict[str, int] = {}
    held_by_cluster: dict[str, int] = {}
    causes: dict[str, int] = {}
    requests: dict[str, int] = {}
    by_cluster: dict[str, dict[str, int]] = {}
    waited = answered = 0.0
    passes = owned = 0
    leads = False
    for line in (answer[1] if answer else "").splitlines():
        value = line.rsplit(" ", 1)[-1]
        if line.startswith("c5c3_operator_pass_wakes_total{"):
            cause = line.split('cause="', 1)[1].split('"', 1)[0]
            kind = line.split('kind="', 1)[1].split('"', 1)[0]
            label = f"{cause} {kind}" if kind else cause
            causes[label] = causes.get(label, 0) + int(float(value))
        elif line.startswith("c5c3_operator_api_requests_total{"):
            verb = line.split('verb="', 1)[1].split('"', 1)[0]
            requests[verb] = requests.get(verb, 0) + int(float(value))
            verbs = by_cluster.setdefault(line.split('cluster="', 1)[1].split('"', 1)[0], {})
            verbs[verb] = verbs.get(verb, 0) + int(float(value))
        elif line.startswith("c5c3_operator_api_request_duration_seconds_sum{") and 'verb="WATCH"' not in line:
            waited += float(value)
        elif line.startswith("c5c3_operator_api_request_duration_seconds_count{") and 'verb="WATCH"' not in line:
            answered += float(value)
        elif line.startswith("c5c3_operator_cached_objects{"):
            kind = line.split('kind="', 1)[1].split('"', 1)[0]
            held[kind] = held.get(kind, 0) + int(float(value))
            cluster = line.split('cluster="', 1)[1].split('"', 1)[0]
            held_by_cluster[cluster] = held_by_cluster.get(cluster, 0) + int(float(value))
        elif line.startswith("c5c3_operator_reconcile_total{"):
            passes += int(float(value))
        elif line.startswith("c5c3_operator_shard_held_orders{"):
            owned += int(float(value))
        elif line.startswith("c5c3_operator_leader_status "):
            leads = float(value) == 1.0
    return {"cached_objects": held, "passes": passes, "passes_by_cause": dict(sorted(causes.items())),
            "requests": dict(sorted(requests.items())), "request_seconds": (waited, answered),
            "orders_held": owned, "leads": leads, "requests_by_cluster": by_cluster,
            "cached_objects_by_cluster": held_by_cluster}


def ready(world: World, names: list[tuple[str, str]], pending: set[tuple[str, str]]) -> bool:
    """Whether every order is Ready: each poll reads only the orders not seen Ready yet (a read copies the object,
    and the world's process pays for it), then, once none is left, every order once more."""
    pending.difference_update([n for n in pending if _is_ready(world, *n)])
    return not pending and all(_is_ready(world, *n) for n in names)


def _is_ready(world: World, cluster: str, name: str) -> bool:
    return condition(get(world.cluster(cluster), API, "KeystoneUser", TENANT, name), "Ready") == "True"


def wait(what: Any, deadline: float, processes: list[OperatorProcess], message: str) -> None:
    while not what():
        if time.monotonic() > deadline or any(p.process.poll() is not None for p in processes):
            for process in processes:  # why: the tail of each replica's warnings and errors
                if process.process.poll() is not None:
                    message += f"; {process.log_path.name} exited with status {process.process.returncode}"
                lines = [line for line in process.logs().splitlines() if '"level": "info"' not in line
                         and '"level": "debug"' not in line]
                sys.stderr.write(f"--- {process.log_path.name}\n" + "\n".join(lines[-5:]) + "\n")
            raise SystemExit(message)
        time.sleep(0.5)


@dataclass(frozen=True)
class Layout:
    """Where the orders sit: ``targets`` registered target clusters (edge-0, edge-1, ...) and, per target, its
    weight in the orders (``weights``: edge-0 first; none: every order on the management cluster)."""

    targets: int = 0
    weights: tuple[int, ...] = ()
    idle_seconds: float = IDLE_SECONDS
    engage: bool = False
    """After the convergence, register one more target cluster (with no order) and time each replica's watches
    opening there (until as many as on a target with no order: needs one)."""

    @property
    def clusters(self) -> list[str]:
        return ["", *(f"edge-{n}" for n in range(self.targets))]

    def placed(self, orders: int) -> list[tuple[str, str]]:
        """(cluster, name) of each order: all on the management cluster, or spread over the weighted targets."""
        if not self.weights:
            return [("", f"o{n:04}") for n in range(orders)]
        clusters = [f"edge-{n}" for n, weight in enumerate(self.weights) for _ in range(weight)]
        return [(clusters[n % len(clusters)], f"o{n:04}") for n in range(orders)]


def member_of(process: OperatorProcess, deadline: float) -> str:
    """The member name a replica joined under (from its log)."""
    while time.monotonic() < deadline:
        found = re.findall(r"joined the shards as member ([a-z0-9-]+)", process.logs())
        if found:
            return str(found[0])
        time.sleep(0.2)
    raise SystemExit(f"{process.log_path.name}: never joined the shards")


def port_of(server: Emulator) -> int:
    return int(server.url.rsplit(":", 1)[1])


def engaged(processes: list[OperatorProcess], clusters: list[str]) -> bool:
    """Whether every replica has opened a watch on every cluster."""
    return all(scrape(p)["requests_by_cluster"].get(c, {}).get("WATCH", 0) > 0 for p in processes for c in clusters)


def round_of(replicas: int, orders: int, timeout: float, trace: Path | None,
             layout: Layout | None = None) -> dict[str, object]:
    layout = layout or Layout()
    per_cluster.track_streams()
    with tempfile.TemporaryDirectory(prefix="sharding-memory-") as tmp:
        if trace is not None:
            (trace := trace / f"replicas-{replicas}").mkdir(parents=True, exist_ok=True)
        world = TimedWorld(Path(tmp), trace)
        clusters = layout.clusters
        for name in clusters[1:]:
            world.register(world.target(name))
            world.assign(name)
        processes: list[OperatorProcess] = []
        level = ("--log-level", "debug" if trace is not None else "info")
        sharded = SHARDED if not layout.targets else SHARDED[:-2]  # with targets, the registrations are read
        py_spy = per_cluster.py_spy_path(ROOT) if layout.targets else None
        try:
            deadline = time.monotonic() + timeout
            processes = [OperatorProcess(world, *sharded, *level, name=f"replica-{n}") for n in range(replicas)]
            wait(lambda: all(p.ready() for p in processes), deadline, processes, f"{replicas}: a replica not ready")
            if layout.targets:
                wait(lambda: engaged(processes, clusters), deadline, processes, f"{replicas}: a cluster not engaged")
                time.sleep(2.0)  # the last watches of the engagements open
            ports = {name: port_of(world.server if not name else world.targets[name].server) for name in clusters}
            members = [member_of(p, deadline) for p in processes] if layout.targets else []
            idle_from = [cpu_seconds(p.process.pid) for p in processes]
            threads_idle_from = [per_cluster.thread_cpu(p.process.pid, TICKS) for p in processes]
            time.sleep(layout.idle_seconds)  # what a replica spends with no order: Lease renewals, the leader's rounds
            cpu_before = [cpu_seconds(p.process.pid) for p in processes]
            threads_before = [per_cluster.thread_cpu(p.process.pid, TICKS) for p in processes]
            idle = [(after - before) / layout.idle_seconds for before, after in zip(idle_from, cpu_before, strict=True)]
            watches_idle = [per_cluster.open_watches(p.process.pid, ports) for p in processes]
            names_idle = [per_cluster.thread_names(p.process.pid, py_spy) for p in processes]
            before_orders = [scrape(p) for p in processes]
            world_before, simulators_before = cpu_seconds(os.getpid()), thread_cpu_seconds(world.simulation_thread())
            rounds_before, round_cpu_before, admission_before = len(world.rounds), world.round_cpu, world.admission_cpu
            started = time.monotonic()
            names = layout.placed(orders)
            for cluster, name in names:
                world.cluster(cluster).create(order("KeystoneUser", name))
            pending = set(names)
            wait(lambda: ready(world, names, pending), deadline, processes,
                 f"{replicas} replica(s): not every order Ready")
            converged = time.monotonic() - started
            cpu = [cpu_seconds(p.process.pid) - before for p, before in zip(processes, cpu_before, strict=True)]
            threads_after = [per_cluster.thread_cpu(p.process.pid, TICKS) for p in processes]
            world_cpu = cpu_seconds(os.getpid()) - world_before
            simulators_cpu = thread_cpu_seconds(world.simulation_thread()) - simulators_before
            rounds = sorted(world.rounds[rounds_before:])
            round_cpu, admission_cpu = world.round_cpu - round_cpu_before, world.admission_cpu - admission_before
            time.sleep(3.0)  # the last echoes settle
            per: list[dict[str, Any]] = []
            for process, spent, before, resting in zip(processes, cpu, before_orders, idle, strict=True):
                seen = scrape(process)
                seen["requests"] = {verb: n - before["requests"].get(verb, 0) for verb, n in seen["requests"].items()}
                waited, answered = seen.pop("request_seconds")
                waited_before, answered_before = before["request_seconds"]
                seen["mean_request_ms"] = (round(1000 * (waited - waited_before) / (answered - answered_before), 1)
                                           if answered > answered_before else None)
                per.append({**memory_mib(process.process.pid), **seen, "cpu_seconds": round(spent, 1),
                            "orders_per_cpu_second": round(seen["orders_held"] / spent, 2) if spent else None,
                            "cpu_ms_per_order": round(1000 * spent / seen["orders_held"], 1) if seen["orders_held"]
                            else None,
                            "idle_cpu_per_second": round(resting, 3)})
            if layout.targets:
                owners = owned_per_cluster(world, names, members)
                for n, (process, row) in enumerate(zip(processes, per, strict=True)):
                    thread_named = {**names_idle[n], **per_cluster.thread_names(process.process.pid, py_spy)}
                    row["clusters"] = cluster_rows(
                        clusters, owners[n], before_orders[n], row, watches_idle[n],
                        per_cluster.open_watches(process.process.pid, ports),
                        per_cluster.connections(process.process.pid, ports),
                        per_cluster.cpu_by_cluster(threads_idle_from[n], threads_before[n], thread_named, clusters),
                        per_cluster.cpu_by_cluster(threads_before[n], threads_after[n], thread_named, clusters),
                        layout.idle_seconds)
            for row in per:
                row.pop("requests_by_cluster")
                row.pop("cached_objects_by_cluster")

            def mean(key: str) -> float:
                return round(sum(float(p[key]) for p in per) / len(per), 1)

            result: dict[str, Any] = {
                "replicas": replicas, "orders": orders, "seconds_to_all_ready": round(converged, 1),
                "projected_seconds_with_a_core_each": round(max(cpu), 1),
                "mean_rss_mib": mean("rss"), "mean_peak_rss_mib": mean("peak"), "mean_pss_mib": mean("pss"),
                "mean_private_mib": mean("private"),
                "mean_cached_objects": round(sum(sum(p["cached_objects"].values()) for p in per) / len(per), 1),
                "mean_cpu_seconds": mean("cpu_seconds"), "total_cpu_seconds": round(sum(cpu), 1),
                "mean_idle_cpu_seconds_per_minute": round(60 * sum(idle) / len(idle), 2),
                "orders_ready_per_second": round(orders / converged, 2) if converged else None,
                "idle_cpu_seconds_over_the_convergence": round(sum(idle) * converged, 1),
                "passes_per_order": round(sum(p["passes"] for p in per) / orders, 1),
                "world": {"cpu_seconds": round(world_cpu, 1),
                          "cpu_per_second": round(world_cpu / converged, 2) if converged else None,
                          "admission_cpu_seconds": round(admission_cpu, 1),
                          "simulated_controllers_cpu_seconds": round(simulators_cpu, 1),
                          "simulator_rounds": len(rounds),
                          "simulator_rounds_on_cpu": round(round_cpu / sum(rounds), 2) if rounds else None,
                          "simulator_round_median_s": round(rounds[len(rounds) // 2], 3) if rounds else None,
                          "simulator_round_max_s": round(rounds[-1], 3) if rounds else None},
                "per_replica": per}
            if layout.targets:
                result["orders_by_cluster"] = {c: sum(1 for cluster, _ in names if cluster == c) for c in clusters}
                result["per_cluster_mean"] = cluster_means(clusters, per)
                result["watches_on_the_last_target"] = {  # every replica's together, by resource and selector
                    f"{path} {selector}".strip(): n
                    for (path, selector), n in sorted(world.targets[clusters[-1]].server.open_watches().items())}
            empty = [c for c in clusters[1:] if not result["orders_by_cluster"][c]]
            if layout.engage and empty:
                result["engaging_a_new_cluster"] = engage_one(world, processes, empty[0], ports, deadline)
            return result
        finally:
            for process in processes:
                if process.process.poll() is None:
                    try:
                        process.stop()
                    except subprocess.TimeoutExpired:
                        process.kill()
            world.close()
            if trace is not None:
                for process in processes:
                    shutil.copy(process.log_path, trace / process.log_path.name)


def owned_per_cluster(world: World, names: list[tuple[str, str]], members: list[str]) -> list[dict[str, int]]:
    """Per replica (in ``members``' order): cluster -> the orders labelled for it there."""
    owned: list[dict[str, int]] = [{} for _ in members]
    for cluster, name in names:
        labels = (get(world.cluster(cluster), API, "KeystoneUser", TENANT, name) or {}).get("metadata", {}).get(
            "labels") or {}
        if labels.get(SHARD) in members:
            counts = owned[members.index(labels[SHARD])]
            counts[cluster] = counts.get(cluster, 0) + 1
    return owned


def cluster_rows(clusters: list[str], owned: dict[str, int], at_start: dict[str, Any], end: dict[str, Any],
                 watches_idle: dict[str, int], watches_end: dict[str, int], connections: dict[str, int],
                 cpu_idle: dict[str, float], cpu_converging: dict[str, float],
                 idle_seconds: float) -> dict[str, dict[str, Any]]:
    """One replica, per cluster: its orders there, watches, objects held, requests, watch threads' CPU."""
    rows: dict[str, dict[str, Any]] = {}
    for cluster in [*clusters, "other"]:
        if cluster == "other":
            rows["other threads"] = {"cpu_idle_seconds_per_minute": round(60 * cpu_idle["other"] / idle_seconds, 2),
                                     "cpu_converging_seconds": cpu_converging["other"]}
            continue
        started = at_start["requests_by_cluster"].get(cluster, {})
        later = end["requests_by_cluster"].get(cluster, {})
        rows[cluster or "management"] = {
            "orders_held": owned.get(cluster, 0),
            "watches_open_idle": watches_idle[cluster], "watches_open_end": watches_end[cluster],
            "connections_end": connections[cluster],
            "cached_objects_end": end["cached_objects_by_cluster"].get(cluster, 0),
            "requests_at_start": {v: started[v] for v in ("LIST", "WATCH", "GET") if v in started},
            "requests_converging": {v: n - started.get(v, 0) for v, n in sorted(later.items())
                                    if n > started.get(v, 0)},
            "watch_cpu_idle_seconds_per_minute": round(60 * cpu_idle.get(cluster, 0.0) / idle_seconds, 2),
            "watch_cpu_converging_seconds": cpu_converging.get(cluster, 0.0)}
    return rows


def cluster_means(clusters: list[str], per: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per cluster, the replicas' mean of its numeric columns."""
    means: dict[str, dict[str, float]] = {}
    for cluster in [c or "management" for c in clusters]:
        rows = [p["clusters"][cluster] for p in per]
        means[cluster] = {key: round(sum(float(r[key]) for r in rows) / len(rows), 2)
                          for key in ("orders_held", "watches_open_idle", "watches_open_end", "cached_objects_end",
                                      "watch_cpu_idle_seconds_per_minute", "watch_cpu_converging_seconds")}
        for verb in ("LIST", "WATCH"):
            means[cluster][f"{verb}_at_start"] = round(
                sum(r["requests_at_start"].get(verb, 0) for r in rows) / len(rows), 2)
    return means


def engage_one(world: World, processes: list[OperatorProcess], like: str, ports: dict[str, int],
               deadline: float) -> dict[str, Any]:
    """Register one more target cluster (no order, not assigned) and time, per replica, until it has as many watches
    open there as on ``like`` (a cluster with no order of its own): what opening a cluster's watches costs."""
    expected = [per_cluster.open_watches(p.process.pid, ports)[like] for p in processes]
    before = [scrape(p)["requests_by_cluster"] for p in processes]
    name = "edge-new"
    began = time.monotonic()
    world.register(world.target(name))
    ports = {**ports, name: port_of(world.targets[name].server)}
    took: list[float | None] = [None] * len(processes)
    while any(t is None for t in took) and time.monotonic() < deadline:
        for n, process in enumerate(processes):
            if took[n] is None and per_cluster.open_watches(process.process.pid, ports)[name] >= expected[n]:
                took[n] = round(time.monotonic() - began, 2)
        time.sleep(0.05)
    time.sleep(2.0)
    requests = [{v: c for v, c in scrape(p)["requests_by_cluster"].get(name, {}).items()
                 if c > b.get(name, {}).get(v, 0)} for p, b in zip(processes, before, strict=True)]
    return {"watches_expected": expected, "seconds_until_open": took, "requests": requests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--replicas", default="1,2,4")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--trace", type=Path, default=None,
                        help="keep each replica's debug log and the world's writes (world.jsonl) in this directory")
    parser.add_argument("--targets", type=int, default=0,
                        help="register this many target clusters (edge-0, edge-1, ...) and report per cluster")
    parser.add_argument("--orders-on", default="",
                        help="the targets' weights in the orders, edge-0 first (2,1: two thirds on edge-0, a third on "
                             "edge-1); none: every order on the management cluster")
    parser.add_argument("--idle-seconds", type=float, default=IDLE_SECONDS,
                        help="how long the replicas are watched with no order (their idle CPU)")
    parser.add_argument("--engage", action="store_true",
                        help="once converged, register one more target cluster and time its watches opening")
    args = parser.parse_args()
    weights = tuple(int(w) for w in args.orders_on.split(",") if w)
    if len(weights) > args.targets or (args.engage and not args.targets):
        parser.error("--orders-on names more targets than --targets registers, or --engage without --targets")
    if args.engage and len([w for w in weights if w]) >= args.targets:
        parser.error("--engage needs a target with no order (more --targets than --orders-on weights)")
    layout = Layout(args.targets, weights, args.idle_seconds, args.engage)
    rounds = [round_of(int(k), args.orders, args.timeout, args.trace, layout) for k in args.replicas.split(",")]
    json.dump(rounds, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
