"""Benchmark: Python calls per order in `engine run`'s threads on the external harness (cProfile in every thread).

    .venv/bin/python bench/thread_calls.py N [--project ../main] [--keep DIR] [--top K]

It runs the external harness (`run-engine.sh N --steady-s 1 --no-teardown`) with the operator started under
cProfile in every thread (each thread's profile written when the process ends on the harness's SIGTERM), then
prints the calls per order of the workers, the watch (informer) threads and the rest, and the requests and watch
events per order the harness counted. Call counts are load-independent (what timing changes is only how events
fall into passes: a few percent from run to run), unlike CPU: the measure of issue 11's request and watch paths
(README Performance). The main thread's count is mostly start-up (loading and compiling the rules); the watch
threads' includes the discovery cache's one-time writes (about 80,000 calls in all).
"""

from __future__ import annotations

import argparse
import atexit
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import harness_location  # bench/, beside this script
import project_engine

ROOT = Path(__file__).resolve().parent.parent


def as_engine(out: Path, argv: list[str]) -> int:
    """Run ``engine`` with ``argv``, every thread under its own cProfile; each thread's stats go to ``out``."""
    profiles: list[tuple[str, cProfile.Profile]] = []
    lock = threading.Lock()
    run = threading.Thread.run

    def profiled(self: threading.Thread) -> None:
        profile = cProfile.Profile()
        with lock:
            profiles.append((self.name, profile))
        profile.enable()
        try:
            run(self)
        finally:
            profile.disable()

    def dump() -> None:
        threads = []
        for i, (name, profile) in enumerate(list(profiles)):
            profile.disable()
            try:
                stats = pstats.Stats(profile)
            except TypeError:  # a thread that never ran
                continue
            path = out / f"{i:03d}.prof"
            stats.dump_stats(path)
            threads.append({"thread": name, "calls": stats.total_calls, "file": str(path)})  # type: ignore[attr-defined]
        (out / "threads.json").write_text(json.dumps(threads, indent=1))

    threading.Thread.run = profiled  # type: ignore[method-assign]
    atexit.register(dump)
    from engine.cli import main

    profile = cProfile.Profile()
    profiles.append(("main", profile))
    profile.enable()
    try:
        return main(argv)
    finally:
        profile.disable()


def group(thread: str) -> str:
    if thread.startswith("worker"):
        return "workers"
    if thread.startswith("informer"):
        return "watch threads"
    return "main" if thread == "main" else "other threads"


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--as-engine":
        return as_engine(Path(sys.argv[2]), sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="KeystoneUser orders to create")
    harness_location.add_argument(parser)
    parser.add_argument("--project", type=Path, default=ROOT, help="the checkout whose engine runs (its .venv)")
    parser.add_argument("--keep", type=Path, help="keep the per-thread profiles (and the harness summary) here")
    parser.add_argument("--top", type=int, default=0, help="also print the K functions most called per order")
    args = parser.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="thread-calls-"))
    out.mkdir(parents=True, exist_ok=True)
    project = project_engine.checkout(args.project)  # refused when its venv runs another's code
    python = project / ".venv" / "bin" / "python"
    env = {**os.environ, "ENGINE": f"{python} {Path(__file__).resolve()} --as-engine {out.resolve()}"}
    script = harness_location.resolve(args.harness) / "run-engine.sh"
    done = subprocess.run([str(script), str(args.n), "--steady-s", "1", "--no-teardown"],
                          cwd=project, stdout=subprocess.PIPE, env=env, check=False)
    if done.returncode != 0:
        print(f"the harness failed (exit {done.returncode})", file=sys.stderr)
        return 1
    (out / "summary.json").write_bytes(done.stdout)
    summary = json.loads(done.stdout)
    deadline = time.monotonic() + 120  # the operator writes its profiles after the harness has stopped waiting
    while not (out / "threads.json").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    threads = json.loads((out / "threads.json").read_text())
    calls: Counter[str] = Counter()
    for thread in threads:
        calls[group(thread["thread"])] += thread["calls"]
    n = args.n
    converge = summary["converge"]
    print(f"orders {n} ({'all Ready' if converge['all_ready'] else 'NOT all Ready'}); "
          f"requests per order {converge['requests_per_order']['total']:.3f}")
    for name in ("workers", "watch threads", "other threads", "main"):
        print(f"{name:14} {calls[name] / n:10,.0f} calls per order")
    if args.top:
        stats = pstats.Stats(*[t["file"] for t in threads if group(t["thread"]) in ("workers", "watch threads")])
        rows = sorted(((v[1], k) for k, v in stats.stats.items()), reverse=True)  # type: ignore[attr-defined]
        for count, (file, line, function) in rows[:args.top]:
            print(f"{count / n:10.1f}  {file}:{line}({function})")
    print(f"profiles in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
