"""Benchmark: the five throughput figures of `engine run` on the external KeystoneUser harness (run on demand).

    .venv/bin/python bench/figures.py N --harness DIR [--json OUT] [harness options...]
    .venv/bin/python bench/figures.py N --project ../main       # the same harness on another checkout
    .venv/bin/python bench/figures.py N --backend both          # and the same orders on a real kube-apiserver
    .venv/bin/python bench/figures.py --from OUT.json [--from REAL.json]   # the figures of earlier runs

It runs the external harness (its folder given by ``--harness DIR`` or ``C5C3_BENCH_HARNESS``;
`run-engine.sh N --steady-s 15 --repair-probe 3`, the operator with its
default flags unless ENGINE_ARGS says otherwise) and prints, from its JSON summary, the figures below.
``--backend real`` runs the same orders against a real kube-apiserver with etcd instead (`bench/real_server.py`:
the simulated K-ORC, ESO and topology operator, requests counted from the server's audit log; needs the
binaries of `scripts/kube-binaries`), ``--backend both`` runs the emulator's harness and then the real server in
one sitting and prints each figure for both (``--json OUT`` keeps OUT and OUT with ``.real`` before its suffix):

1. requests per order to converge (exact; by verb),
2. operator CPU per order while converging (ms; and with the settle phase's late passes),
3. time-to-Ready per order (median, p95, max; seconds),
4. the operator's peak RSS (MiB),
5. requests in the steady window, and the slowest repair of a deleted or edited delivered Secret.

Timings depend on the machine and its load: compare two commits in one sitting, as ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import harness_location  # bench/, beside this script
import project_engine

ROOT = Path(__file__).resolve().parent.parent


def figures(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The five figures (and their detail) of one harness summary, as printable rows."""
    n = int(summary["n"])
    converge = summary["converge"]
    per_order = converge["requests_per_order"]
    verbs = ", ".join(f"{verb} {count:g}" for verb, count in sorted(per_order["by_verb"].items()))
    cpu = converge["operator_cpu_s"]
    harness_cpu = converge.get("harness_cpu_s")
    server_cpu = converge.get("server_cpu_s")
    harness = ("the simulated controllers and the readiness watch" if server_cpu is not None
               else "the emulator and the simulated K-ORC and ESO")
    wall = converge["requests"]["seconds"]
    settle_cpu = summary.get("settle", {}).get("operator_cpu_s", 0.0)
    ttr = converge["time_to_ready_s"]
    steady = summary.get("steady", {}).get("requests", {}).get("total")
    repair = summary.get("repair") or {}
    restored = [p.get("restored_s") for p in repair.get("delete", []) + repair.get("edit", [])]
    slowest = None if not restored or None in restored else max(restored)
    return [
        ("orders", f"{n} ({'all Ready' if converge['all_ready'] else 'NOT all Ready'}; "
                   f"checks {summary['checks']['orders_ok']}/{summary['checks']['orders_checked']} ok)"),
        ("requests per order to converge", f"{per_order['total']:.2f} (writes {per_order['writes']:.2f}: {verbs})"),
        ("operator CPU per order", f"{cpu / n * 1000:.1f} ms converging; "
                                   f"{(cpu + settle_cpu) / n * 1000:.1f} ms with the settle phase"),
        ("harness CPU per order", "not reported" if harness_cpu is None else
            f"{harness_cpu / n * 1000:.1f} ms ({harness}); operator and harness "
            f"used {(cpu + harness_cpu) / max(wall, 1e-9):.2f} of the {summary['host']['cpus']} CPUs while converging"),
        *([("API server CPU per order", f"{server_cpu / n * 1000:.1f} ms (etcd, kube-apiserver, "
            "kube-controller-manager)")] if server_cpu is not None else []),
        ("time-to-Ready", f"median {ttr['median']:.2f} s, p95 {ttr['p95']:.2f} s, max {ttr['max']:.2f} s "
                          f"(all Ready after {converge['wall_s_to_all_ready']:.2f} s)"),
        ("peak RSS", f"{summary['operator_process']['peak_rss_mib']:.1f} MiB"),
        ("steady state", f"{steady if steady is not None else '?'} requests in "
                         f"{summary.get('steady', {}).get('seconds', 0):g} s; slowest repair "
                         f"{'not measured' if slowest is None else f'{slowest:.2f} s'}"),
        ("machine", f"{summary['host']['cpus']} CPUs, Python {summary['host']['python']}"),
    ]


BACKENDS = {"emulator": "emulator (external harness)", "real": "real kube-apiserver"}


def run_emulator(args: argparse.Namespace, harness: list[str]) -> dict[str, Any] | None:
    """The external harness's summary (None when it failed)."""
    extra = [a for a in harness if a != "--"]
    script = harness_location.resolve(args.harness) / "run-engine.sh"
    command = [str(script), str(args.n), "--steady-s", "15", "--repair-probe", "3", *extra]
    done = subprocess.run(command, cwd=args.project, stdout=subprocess.PIPE, env=os.environ, check=False)
    if done.returncode != 0:
        print(f"the harness failed (exit {done.returncode})", file=sys.stderr)
        return None
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def run_real(args: argparse.Namespace) -> dict[str, Any] | None:
    """``bench/real_server.py``'s summary of the same orders on a real kube-apiserver (None when it failed)."""
    python = args.project / ".venv" / "bin" / "python"
    command = [str(python if python.exists() else sys.executable), str(args.project / "bench" / "real_server.py"),
               str(args.n), "--steady-s", "15", "--repair-probe", "3"]
    done = subprocess.run(command, cwd=args.project, stdout=subprocess.PIPE, env=os.environ, check=False)
    if not done.stdout.strip():
        print(f"the real-server run failed (exit {done.returncode})", file=sys.stderr)
        return None
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def kept(path: Path, backend: str, both: bool) -> Path:
    return path.with_suffix(".real" + path.suffix) if both and backend == "real" else path


def print_figures(summaries: list[tuple[str, dict[str, Any]]]) -> None:
    """One summary as rows; several as each figure with a line per backend."""
    if len(summaries) == 1:
        for label, value in figures(summaries[0][1]):
            print(f"{label:32} {value}")
        return
    rows = [dict(figures(summary)) for _, summary in summaries]
    for label in dict.fromkeys(label for row in sorted(rows, key=len, reverse=True) for label in row):
        print(label)
        for (backend, _), row in zip(summaries, rows, strict=True):
            print(f"  {backend:30} {row.get(label, '-')}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", help="KeystoneUser orders to create")
    harness_location.add_argument(parser)
    parser.add_argument("--project", type=Path, default=ROOT,
                        help="the checkout whose .venv/bin/engine runs (default: this one; e.g. another commit's)")
    parser.add_argument("--backend", choices=("emulator", "real", "both"), default="emulator",
                        help="the external harness's emulator (default), a real kube-apiserver, or both in one sitting")
    parser.add_argument("--json", type=Path, help="also keep the JSON summary here")
    parser.add_argument("--from", dest="sources", type=Path, action="append",
                        help="print the figures of a saved summary (repeatable: side by side)")
    args, harness = parser.parse_known_args()  # the rest goes to the external harness
    summaries: list[tuple[str, dict[str, Any]]] = []
    if args.sources:
        for source in args.sources:
            summary = json.loads(source.read_text())
            summaries.append((BACKENDS["real" if summary.get("backend") == BACKENDS["real"] else "emulator"], summary))
    elif args.n is None:
        parser.error("N is required unless --from is given")
    else:
        args.project = project_engine.checkout(args.project)  # refused when its venv runs another's code
        backends = ["emulator", "real"] if args.backend == "both" else [args.backend]
        for backend in backends:
            found = run_emulator(args, harness) if backend == "emulator" else run_real(args)
            if found is None:
                return 1
            if args.json is not None:
                kept(args.json, backend, len(backends) > 1).write_text(json.dumps(found, indent=2))
            summaries.append((BACKENDS[backend], found))
    print_figures(summaries)
    return 0 if all(summary["converge"]["all_ready"] for _, summary in summaries) else 1


if __name__ == "__main__":
    sys.exit(main())
