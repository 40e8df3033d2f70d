"""Benchmark: what a pass over a converged KeystoneUser order costs in a real ``engine run`` holding N orders.

    .venv/bin/python bench/converged_live.py 100 [--touch K] [--rounds R] [--project DIR]

Issue 11 item 4 asks that a converged pass at N=10,000 cost at most 1.2x what it costs at N=100.
``bench/converged_pass.py`` measures that in memory, with copies of 100 orders filling the caches;
this one measures it for real. It runs the external harness (``run-engine.sh N`` in the folder
``--harness DIR`` or ``C5C3_BENCH_HARNESS``, the
operator's default flags plus a metrics address on 127.0.0.1), lets all N orders converge, and while
the harness holds the converged world it touches K of the orders, spread over the names, one every
``--spacing`` seconds: a merge patch of one annotation (no spec change, so nothing to write). Each
touch is one watch event and one pass that finds the order converged. From the operator's own
``/proc`` (CPU) and its ``/metrics`` (``c5c3_operator_reconcile_total``,
``c5c3_operator_api_requests_total``, scraped outside the measured window) it reports, per touch, the
operator CPU (minus the idle rate measured just before), the passes and the API requests, for each
of R rounds. Compare two N in one sitting; the ratio is the figure. Everything stays on 127.0.0.1,
every wait has a time limit, and the harness and the operator are stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import harness_location  # bench/, beside this script
import project_engine

ROOT = Path(__file__).resolve().parent.parent
ORDERS = "/apis/c5c3.io/v1alpha1/namespaces/tenant-a/keystoneusers"
WATCHED = ("c5c3_operator_reconcile_total", "c5c3_operator_api_requests_total")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> dict[str, float]:
    """Sums of the watched families (every label set added up)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    sums = dict.fromkeys(WATCHED, 0.0)
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in sums:
            sums[name] += float(line.rsplit(" ", 1)[1])
    return sums


def emulator(work: Path, path: str, method: str = "GET", body: dict[str, Any] | None = None) -> Any:
    url = (work / "emulator_url").read_text().strip() + path
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", "Bearer bench-touch")
    if body is not None:
        request.add_header("Content-Type", "application/merge-patch+json")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def wait_for(predicate: Any, limit: float, what: str) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"converged_live: gave up waiting for {what} after {limit:.0f} s")
        time.sleep(0.5)


def operator_cpu(pid: int) -> float:
    """The operator's user + system CPU seconds, from /proc (no scrape inside a measured window)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def touch_round(port: int, pid: int, work: Path, names: list[str], mark: str, spacing: float,
                idle_s: float, quiet_s: float) -> dict[str, float]:
    """One round: the idle rate first, then one annotation per name, then a quiet wait; the metrics are
    scraped only outside the measured windows (a scrape computes gauges over every order)."""
    passes, requests = "c5c3_operator_reconcile_total", "c5c3_operator_api_requests_total"
    before = scrape(port)
    t0, cpu0 = time.monotonic(), operator_cpu(pid)
    time.sleep(idle_s)
    t1, cpu1 = time.monotonic(), operator_cpu(pid)
    idle_rate = (cpu1 - cpu0) / (t1 - t0)
    for name in names:
        emulator(work, f"{ORDERS}/{name}", "PATCH", {"metadata": {"annotations": {"bench.c5c3.io/touch": mark}}})
        time.sleep(spacing)
    time.sleep(quiet_s)
    t2, cpu2 = time.monotonic(), operator_cpu(pid)
    after = scrape(port)
    k = len(names)
    if after[passes] - before[passes] < k:
        raise SystemExit(f"converged_live: {after[passes] - before[passes]:.0f} passes for {k} touches "
                         f"within {quiet_s} s; raise --quiet-s")
    cpu = cpu2 - cpu1 - idle_rate * (t2 - t1)
    return {"cpu_ms_per_touch": round(1000 * cpu / k, 3),
            "passes_per_touch": round((after[passes] - before[passes]) / k, 3),
            "requests_per_touch": round((after[requests] - before[requests]) / k, 3),
            "idle_cpu_ms_per_s": round(1000 * idle_rate, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("orders", type=int, help="KeystoneUser orders the harness creates and converges")
    parser.add_argument("--touch", type=int, default=100, help="orders touched per round (default 100)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of touches (default 3)")
    parser.add_argument("--spacing", type=float, default=0.05, help="seconds between touches (default 0.05)")
    parser.add_argument("--idle-s", type=float, default=3.0, help="idle window measured before each round")
    parser.add_argument("--quiet-s", type=float, default=5.0, help="wait after the last touch, inside the window")
    parser.add_argument("--converge-timeout", type=float, default=2400)
    parser.add_argument("--project", type=Path, default=ROOT, help="checkout whose .venv runs the operator")
    harness_location.add_argument(parser)
    args = parser.parse_args()
    harness = harness_location.resolve(args.harness)
    args.project = project_engine.checkout(args.project)  # refused when its venv runs another's code

    work = Path(tempfile.mkdtemp(prefix="converged-live-"))
    port = free_port()
    env = dict(os.environ, ENGINE_ARGS=f"{os.environ.get('ENGINE_ARGS', '')} --metrics-bind-address 127.0.0.1:{port}")
    hold = args.rounds * (args.touch * args.spacing + args.quiet_s + args.idle_s + 10) + 30
    command = [str(harness / "run-engine.sh"), str(args.orders), "--steady-s", "1", "--settle-s", "2", "--no-teardown",
               "--converge-timeout", str(args.converge_timeout), "--hold-s", str(hold), "--workdir", str(work)]
    with open(work / "bench.json", "w") as out, open(work / "bench.err", "w") as err:
        harness = subprocess.Popen(command, cwd=args.project, env=env, stdout=out, stderr=err, start_new_session=True)
        try:
            figures = measure(args, work, port, harness)
            figures["harness"] = harness_summary(harness, work, hold)
            print(json.dumps(figures, indent=2))
        finally:
            stop(harness, work)


def harness_summary(harness: subprocess.Popen[bytes], work: Path, hold: float) -> dict[str, Any]:
    """The harness's own figures for the run (converging N orders): it prints them once its hold ends."""
    try:
        harness.wait(hold + 120)
    except subprocess.TimeoutExpired:
        return {"error": "the harness did not finish its hold"}
    summary = json.loads((work / "bench.json").read_text() or "{}")
    converge = summary.get("converge") or {}
    checks = summary.get("checks") or {}
    cpu_s = converge.get("operator_cpu_s")
    return {"summary": str(work / "bench.json"), "problems": summary.get("problems"),
            "orders_ok": f"{checks.get('orders_ok')}/{checks.get('orders_checked')}",
            "wall_s_to_all_ready": converge.get("wall_s_to_all_ready"),
            "requests_per_order": (converge.get("requests_per_order") or {}).get("total"),
            "operator_cpu_ms_per_order": round(1000 * cpu_s / summary["n"], 1) if cpu_s and summary.get("n") else None,
            "peak_rss_mib": (summary.get("operator_process") or {}).get("peak_rss_mib")}


def measure(args: argparse.Namespace, work: Path, port: int, harness: subprocess.Popen[bytes]) -> dict[str, Any]:
    wait_for(lambda: "holding" in (work / "bench.err").read_text() or harness.poll() is not None,
             args.converge_timeout + 300, "the harness to converge and hold")
    if harness.poll() is not None:
        raise SystemExit(f"converged_live: the harness stopped early; see {work / 'bench.err'}")
    found = subprocess.run(["pgrep", "-f", f"engine run --kubeconfig {work}/"], capture_output=True, text=True)
    pid = int(found.stdout.split()[0])
    names = sorted(item["metadata"]["name"] for item in emulator(work, ORDERS)["items"])
    picked = names[:: max(1, len(names) // args.touch)][: args.touch]
    rounds = [touch_round(port, pid, work, picked, f"r{i}", args.spacing, args.idle_s, args.quiet_s)
              for i in range(args.rounds)]
    cpu = [r["cpu_ms_per_touch"] for r in rounds]
    return {"orders": args.orders, "touched": len(picked), "rounds": rounds,
            "cpu_ms_per_touch_median": statistics.median(cpu), "cpu_ms_per_touch_min": min(cpu),
            "operator_peak_rss_mib": peak_rss_mib(pid), "workdir": str(work)}


def peak_rss_mib(pid: int) -> float:
    """VmHWM: the operator's peak resident memory so far (converging included)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def stop(harness: subprocess.Popen[bytes], work: Path) -> None:
    """SIGINT: the harness's own cleanup stops the operator it started; anything left is killed."""
    if harness.poll() is None:
        os.kill(harness.pid, signal.SIGINT)
        try:
            harness.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(harness.pid, signal.SIGKILL)
    subprocess.run(["pkill", "-KILL", "-f", f"engine run --kubeconfig {work}/"], check=False)


if __name__ == "__main__":
    main()
