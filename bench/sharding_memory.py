"""Measurement: memory and throughput per replica of real ``engine run --sharded`` processes, for 1, 2 and 4 replicas.

    .venv/bin/python bench/sharding_memory.py [--orders N] [--replicas 1,2,4] [--trace DIR]

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
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from conftest import API, TENANT, OperatorProcess, World, condition, get, order  # noqa: E402

from engine.cluster.api import Conflict, NotFound  # noqa: E402

SHARDED = ("--sharded", "--leader-elect-lease-duration", "15s", "--leader-elect-renew-deadline", "10s",
           "--leader-elect-retry-period", "500ms", "--clusters-namespace", "")
"""The default lease duration and renew deadline (with 6 s / 4 s, a loaded machine's emulator answered renewals
late enough that members lapsed and the round failed); rounds every half second, as before."""
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
        admit = self.management._admit
        admissions = itertools.count()

        def timed_admit(*args: Any) -> Any:
            if next(admissions) % SAMPLE:
                return admit(*args)
            began = time.thread_time()
            try:
                return admit(*args)
            finally:
                spent = time.thread_time() - began
                with self._lock:
                    self.admission_cpu += SAMPLE * spent

        self.management._admit = timed_admit  # type: ignore[method-assign]

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
    causes: dict[str, int] = {}
    requests: dict[str, int] = {}
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
        elif line.startswith("c5c3_operator_api_request_duration_seconds_sum{") and 'verb="WATCH"' not in line:
            waited += float(value)
        elif line.startswith("c5c3_operator_api_request_duration_seconds_count{") and 'verb="WATCH"' not in line:
            answered += float(value)
        elif line.startswith("c5c3_operator_cached_objects{"):
            kind = line.split('kind="', 1)[1].split('"', 1)[0]
            held[kind] = held.get(kind, 0) + int(float(value))
        elif line.startswith("c5c3_operator_reconcile_total{"):
            passes += int(float(value))
        elif line.startswith("c5c3_operator_shard_held_orders{"):
            owned += int(float(value))
        elif line.startswith("c5c3_operator_leader_status "):
            leads = float(value) == 1.0
    return {"cached_objects": held, "passes": passes, "passes_by_cause": dict(sorted(causes.items())),
            "requests": dict(sorted(requests.items())), "request_seconds": (waited, answered),
            "orders_held": owned, "leads": leads}


def ready(world: World, names: list[str], pending: set[str]) -> bool:
    """Whether every order is Ready: each poll reads only the orders not seen Ready yet (a read copies the object,
    and the world's process pays for it), then, once none is left, every order once more."""
    pending.difference_update([n for n in pending if _is_ready(world, n)])
    return not pending and all(_is_ready(world, n) for n in names)


def _is_ready(world: World, name: str) -> bool:
    return condition(get(world.management, API, "KeystoneUser", TENANT, name), "Ready") == "True"


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


def round_of(replicas: int, orders: int, timeout: float, trace: Path | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="sharding-memory-") as tmp:
        if trace is not None:
            (trace := trace / f"replicas-{replicas}").mkdir(parents=True, exist_ok=True)
        world = TimedWorld(Path(tmp), trace)
        processes: list[OperatorProcess] = []
        level = ("--log-level", "debug" if trace is not None else "info")
        try:
            deadline = time.monotonic() + timeout
            processes = [OperatorProcess(world, *SHARDED, *level, name=f"replica-{n}") for n in range(replicas)]
            wait(lambda: all(p.ready() for p in processes), deadline, processes, f"{replicas}: a replica not ready")
            idle_from = [cpu_seconds(p.process.pid) for p in processes]
            time.sleep(IDLE_SECONDS)  # what a replica spends with no order: Lease renewals, the leader's rounds
            cpu_before = [cpu_seconds(p.process.pid) for p in processes]
            idle = [(after - before) / IDLE_SECONDS for before, after in zip(idle_from, cpu_before, strict=True)]
            before_orders = [scrape(p) for p in processes]
            world_before, simulators_before = cpu_seconds(os.getpid()), thread_cpu_seconds(world._thread)
            rounds_before, round_cpu_before, admission_before = len(world.rounds), world.round_cpu, world.admission_cpu
            started = time.monotonic()
            names = [f"o{n:04}" for n in range(orders)]
            for name in names:
                world.management.create(order("KeystoneUser", name))
            pending = set(names)
            wait(lambda: ready(world, names, pending), deadline, processes,
                 f"{replicas} replica(s): not every order Ready")
            converged = time.monotonic() - started
            cpu = [cpu_seconds(p.process.pid) - before for p, before in zip(processes, cpu_before, strict=True)]
            world_cpu = cpu_seconds(os.getpid()) - world_before
            simulators_cpu = thread_cpu_seconds(world._thread) - simulators_before
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

            def mean(key: str) -> float:
                return round(sum(float(p[key]) for p in per) / len(per), 1)

            return {"replicas": replicas, "orders": orders, "seconds_to_all_ready": round(converged, 1),
                    "projected_seconds_with_a_core_each": round(max(cpu), 1),
                    "mean_rss_mib": mean("rss"), "mean_pss_mib": mean("pss"), "mean_private_mib": mean("private"),
                    "mean_cached_objects": round(sum(sum(p["cached_objects"].values()) for p in per) / len(per), 1),
                    "mean_cpu_seconds": mean("cpu_seconds"), "total_cpu_seconds": round(sum(cpu), 1),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--replicas", default="1,2,4")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--trace", type=Path, default=None,
                        help="keep each replica's debug log and the world's writes (world.jsonl) in this directory")
    args = parser.parse_args()
    rounds = [round_of(int(k), args.orders, args.timeout, args.trace) for k in args.replicas.split(",")]
    json.dump(rounds, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
