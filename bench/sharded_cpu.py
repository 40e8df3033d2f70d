"""Benchmark: one replica against R `--sharded` replicas, side by side in one sitting (issue 29 item 1).

    .venv/bin/python bench/sharded_cpu.py N --harness DIR [--replicas 3] [--rounds 2] [--placement packed]
        [--one-sharded] [--count-passes] [--json OUT]

Alternates the external KeystoneUser harness (its ``bench.py``) with one ``engine run`` (default flags), then R
``--sharded`` replicas (the issue's lease flags: 6 s, 4 s, 1 s), ``--rounds`` times; ``--one-sharded`` adds one
``--sharded`` replica alone to each round. Prints each run's operator CPU per order (all replicas, converge),
requests per order, median time-to-Ready, the CPU the replicas used of the wall time and the harness's CPU per order
(its API emulator wakes every open watch for every event, so it grows with the replicas' watches), then each
variant's median CPU per order and its ratio to one replica's. ``--count-passes`` also prints the passes per order
all replicas ran over the whole run (``c5c3_operator_reconcile_total``, read every half second from each replica's
metrics on 127.0.0.1; the reading costs each replica a little CPU, so compare CPU between runs that all count).
Each run also prints the CPU each replica's threads were kept on, from its log (decision 73). Placement (how the
processes share the CPUs) moves the figures more than most code changes (decisions 78, 82), so it is chosen, not
left to chance:

- ``default``: each process places itself (decision 73's pinning draws its CPU at random), as a deployment does;
- ``packed``: the harness on the first CPU this process may use, every replica on the last one (``taskset``), one
  replica's runs too: the harness's work apart from the operator's, the same placement for every variant.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import harness_location  # bench/, beside this script
import pass_counts
import project_engine

ROOT = Path(__file__).resolve().parent.parent
LEASE_FLAGS = "--leader-elect-lease-duration 6s --leader-elect-renew-deadline 4s --leader-elect-retry-period 1s"
PINNING_LOGGER = "engine.runtime.cpu_pinning"
KEPT = re.compile(r"threads on CPU (\d+) of")
MOVED = re.compile(r"threads from CPU (\d+) to CPU (\d+)")
SHARDED_STARTUP_S = 30
"""Seconds the harness gives sharded replicas to start: with LEASE_FLAGS they have joined and have a leader well
within it."""


def operator_command(engine: Path, ports: Sequence[int], sharded: bool, cpu: int | None) -> str:
    """The shell command the harness runs as the operator: one process per metrics port (0: metrics off), each on
    ``cpu`` when given."""
    def one(port: int) -> str:
        metrics = f"127.0.0.1:{port}" if port else "0"
        command = (f"{shlex.quote(str(engine))} run --kubeconfig \"$KUBECONFIG\" --clusters-namespace \"\" "
                   f"--metrics-bind-address {metrics} --health-probe-bind-address 0")
        if sharded:
            command += f" --sharded {LEASE_FLAGS}"
        return f"taskset -c {cpu} {command}" if cpu is not None else command
    if len(ports) == 1:
        return one(ports[0])
    return " & ".join(one(port) for port in ports) + " & wait"


def harness_command(args: argparse.Namespace, ports: Sequence[int], sharded: bool) -> list[str]:
    """The harness's command line for one run of a process per metrics port, placed as ``args.placement`` says."""
    harness = harness_location.resolve(args.harness, needs="bench.py")
    cpus = sorted(os.sched_getaffinity(0))
    packed = args.placement == "packed" and len(cpus) > 1
    python = args.project / ".venv" / "bin" / "python"
    command = [str(python if python.exists() else sys.executable), str(harness / "bench.py"), "--n", str(args.n),
               "--extra-crds", str(args.project / "deploy" / "crds"),
               "--extra-crds", str(args.project / "deploy" / "crds" / "external"), "--cwd", str(args.project),
               "--operator", operator_command(args.project / ".venv" / "bin" / "engine", ports, sharded,
                                              cpus[-1] if packed else None),
               "--steady-s", "5"]
    if sharded:  # Lease renewals never let the start look quiet: the harness would wait out its 90 s default
        command += ["--startup-timeout", str(SHARDED_STARTUP_S)]
    return ["taskset", "-c", str(cpus[0]), *command] if packed else command


def run(args: argparse.Namespace, variant: str, replicas: int, sharded: bool) -> dict[str, Any] | None:
    """One harness run's summary, with the variant's name and the passes its replicas ran (None: the harness failed)."""
    ports = pass_counts.free_ports(replicas) if args.count_passes else [0] * replicas
    command = harness_command(args, ports, sharded)
    print(f"running {variant} ...", file=sys.stderr, flush=True)
    with pass_counts.Scraper(ports if args.count_passes else []) as scraper:
        done = subprocess.run(command, cwd=args.project, stdout=subprocess.PIPE, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        print(f"{variant}: the harness failed (exit {done.returncode})", file=sys.stderr)
        return None
    summary: dict[str, Any] = json.loads(done.stdout)
    summary["variant"] = variant
    summary["passes"] = scraper.passes()
    return summary


def cpus_chosen(log: str) -> str:
    """Where the replicas' threads ran, from their log (decision 73): each start's CPU ("0,0,1"), then each move;
    "none logged" when they had one CPU to run on."""
    kept, moved = [], []
    for line in log.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("logger") != PINNING_LOGGER:
            continue
        message = str(record.get("message", ""))
        if start := KEPT.search(message):
            kept.append(start[1])
        elif move := MOVED.search(message):
            moved.append(f"{move[1]}>{move[2]}")
    if not kept and not moved:
        return "none logged"  # one allowed CPU (a packed run's taskset): nothing to choose
    return ",".join(kept) + (f"; moved {' '.join(moved)}" if moved else "")


def cpus_of(summary: dict[str, Any]) -> str:
    """``cpus_chosen`` of the run's operator log (in the harness's work folder; "?" when it is gone)."""
    try:
        return cpus_chosen((Path(summary["workdir"]) / "operator.log").read_text(errors="replace"))
    except (KeyError, OSError):
        return "?"


def row(summary: dict[str, Any]) -> dict[str, Any]:
    """The figures of one run that item 1 compares."""
    n = int(summary["n"])
    converge = summary["converge"]
    cpu = float(converge["operator_cpu_s"])
    return {
        "variant": summary["variant"],
        "all_ready": bool(converge["all_ready"]),
        "checks_ok": f"{summary['checks']['orders_ok']}/{summary['checks']['orders_checked']}",
        "cpu_ms_per_order": round(cpu / n * 1000, 2),
        "requests_per_order": converge["requests_per_order"]["total"],
        "median_time_to_ready_s": converge["time_to_ready_s"]["median"],
        "cpu_of_wall": round(cpu / max(float(converge["wall_s_observed"]), 1e-9), 2),
        "harness_cpu_ms_per_order": round(float(converge["harness_cpu_s"]) / n * 1000, 2),
        "passes_per_order": None if summary.get("passes") is None else round(summary["passes"] / n, 2),
        "cpus": cpus_of(summary),
    }


def report(rows: list[dict[str, Any]]) -> None:
    """Each run, then each variant's median CPU per order and its ratio to one replica's."""
    for r in rows:
        print(f"{r['variant']:24} CPU {r['cpu_ms_per_order']:6.2f} ms/order  requests {r['requests_per_order']:6.3f}"
              f"/order  median to Ready {r['median_time_to_ready_s']:6.2f} s  CPU of wall {r['cpu_of_wall']:.2f}"
              f"  harness CPU {r['harness_cpu_ms_per_order']:6.2f} ms/order  passes {r['passes_per_order']}/order"
              f"  checks {r['checks_ok']}{'' if r['all_ready'] else '  NOT all Ready'}  CPUs {r['cpus']}")
    medians = {v: statistics.median(r["cpu_ms_per_order"] for r in rows if r["variant"] == v)
               for v in dict.fromkeys(r["variant"] for r in rows)}
    one = medians.get("one replica")
    for variant, median in medians.items():
        ratio = f" = {median / one:.2f}x one replica" if one else ""
        print(f"median {variant:20} {median:6.2f} ms/order{ratio}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="KeystoneUser orders each run creates")
    harness_location.add_argument(parser)
    parser.add_argument("--project", type=Path, default=ROOT,
                        help="the checkout whose .venv/bin/engine runs (default: this one)")
    parser.add_argument("--replicas", type=int, default=3, help="sharded replicas in the sharded runs (default 3)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each variant, alternating (default 2)")
    parser.add_argument("--placement", choices=("default", "packed"), default="packed",
                        help="packed (default): harness on the first CPU, replicas on the last; default: as they pick")
    parser.add_argument("--one-sharded", action="store_true", help="also one --sharded replica alone, each round")
    parser.add_argument("--count-passes", action="store_true",
                        help="serve each replica's metrics on 127.0.0.1 and count the passes all replicas ran")
    parser.add_argument("--json", type=Path, help="also keep every run's figures here")
    args = parser.parse_args()
    args.project = project_engine.checkout(args.project)  # refused when its venv runs another's code
    variants = [("one replica", 1, False)]
    if args.one_sharded:
        variants.append(("one sharded replica", 1, True))
    variants.append((f"{args.replicas} sharded replicas", args.replicas, True))
    rows: list[dict[str, Any]] = []
    for _ in range(args.rounds):
        for variant, replicas, sharded in variants:
            summary = run(args, variant, replicas, sharded)
            if summary is None:
                return 1
            rows.append(row(summary))
    if args.json is not None:
        args.json.write_text(json.dumps({"placement": args.placement, "n": args.n, "runs": rows}, indent=2))
    report(rows)
    return 0 if all(r["all_ready"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
