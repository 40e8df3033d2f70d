"""Measurement: memory per replica of real ``engine run --sharded`` processes, for 1, 2 and 4 replicas.

    .venv/bin/python bench/sharding_memory.py [--orders N] [--replicas 1,2,4]

For each replica count: a fresh emulated management cluster with the simulated controllers (the integration
tests' world, in this process), N KeystoneUser orders, and that many ``engine run --sharded`` processes. Once
every order is Ready and the members hold their shares, it reads each process's resident memory (VmRSS, and its
peak VmHWM, from /proc) and its ``c5c3_operator_cached_objects`` (objects held in full, by kind), then stops
them. Prints one JSON document. Two shared cores make the timings noisy; the memory is what it measures.
Run on demand, not in CI; every process it starts is stopped (SIGTERM, then SIGKILL) before the next round.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from conftest import API, TENANT, OperatorProcess, World, condition, get, order  # noqa: E402

SHARDED = ("--sharded", "--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "4s",
           "--leader-elect-retry-period", "500ms", "--clusters-namespace", "", "--log-level", "info")


def memory_kib(pid: int) -> dict[str, int]:
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def cached(process: OperatorProcess) -> dict[str, int]:
    answer = process._get(process.metrics_port, "/metrics")
    held: dict[str, int] = {}
    for line in (answer[1] if answer else "").splitlines():
        if line.startswith("c5c3_operator_cached_objects{"):
            kind = line.split('kind="', 1)[1].split('"', 1)[0]
            held[kind] = held.get(kind, 0) + int(float(line.rsplit(" ", 1)[1]))
    return held


def ready(world: World, names: list[str]) -> bool:
    return all(condition(get(world.management, API, "KeystoneUser", TENANT, n), "Ready") == "True" for n in names)


def round_of(replicas: int, orders: int, timeout: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="sharding-memory-") as tmp:
        world = World(Path(tmp))
        processes: list[OperatorProcess] = []
        try:
            names = [f"o{n:04}" for n in range(orders)]
            for name in names:
                world.management.create(order("KeystoneUser", name))
            started = time.monotonic()
            processes = [OperatorProcess(world, *SHARDED, name=f"replica-{n}") for n in range(replicas)]
            deadline = started + timeout
            while not ready(world, names):
                if time.monotonic() > deadline or any(p.process.poll() is not None for p in processes):
                    raise SystemExit(f"{replicas} replica(s): not every order Ready in time")
                time.sleep(1.0)
            converged = time.monotonic() - started
            time.sleep(3.0)  # the last echoes settle
            per = [{"rss_kib": memory_kib(p.process.pid)["VmRSS"], "peak_kib": memory_kib(p.process.pid)["VmHWM"],
                    "cached_objects": cached(p)} for p in processes]
            return {"replicas": replicas, "orders": orders, "seconds_to_all_ready": round(converged, 1),
                    "per_replica": per,
                    "mean_rss_mib": round(sum(p["rss_kib"] for p in per) / len(per) / 1024, 1),  # type: ignore[misc]
                    "mean_cached_objects": round(sum(sum(p["cached_objects"].values()) for p in per)  # type: ignore[attr-defined]
                                                 / len(per), 1)}
        finally:
            for process in processes:
                if process.process.poll() is None:
                    try:
                        process.stop()
                    except subprocess.TimeoutExpired:
                        process.kill()
            world.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--replicas", default="1,2,4")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    rounds = [round_of(int(k), args.orders, args.timeout) for k in args.replicas.split(",")]
    json.dump(rounds, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
