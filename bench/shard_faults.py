"""Measurement: how long ``engine run --sharded`` replicas take to converge after an API fault window heals.

    .venv/bin/python bench/shard_faults.py [--replicas 3] [--orders 18] [--window 15] [--restart-delay 0]
        [--faults 500,429,latency,409] [--lease 15s,10s,2s] [--plain]

The integration tests' emulated management world (its simulated controllers in this process) and that many
``engine run --sharded`` processes with the default lease flags, each reaching the management cluster through the
fault proxy (``offline.faults``). N KeystoneUsers are created and converge; then, one after the other, each
fault window (``FAULTS``: 500, 429 with Retry-After 1, 3 s latency, 409 on 70% of writes; 15 s each as issue 32
found them) is switched on and healed. At the heal an order ``after-<fault>`` is created. Converged means: every
replica runs and names the member it serves as, every order (the new one too) is Ready and labelled with the member
rendezvous hashing picks among those members, none draining. Per window it reports the seconds from the heal
until converged, the replicas that exited meanwhile (a supervisor restarts an exited replica after
``--restart-delay`` seconds, as a kubelet would: its CrashLoopBackOff waits 10 s, then 20 s, ...), the members'
rejoins (``c5c3_operator_shard_rejoins_total``) and the requests per second the proxy saw during the window.
``--plain`` runs one ``engine run`` without ``--sharded`` (no Lease at all): the baseline of one replica.

Runs the checkout it is in (its ``engine`` and its test kit): to compare two commits, run it from a worktree of
each in one sitting. Never in CI; every process it starts is stopped before it ends. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from integration_kit import API, TENANT, OperatorProcess, World, condition, get, order  # noqa: E402

from engine.runtime.sharding import ring  # noqa: E402
from offline.faults import FAULTS, FaultProxy, proxied  # noqa: E402

SHARD = "sharding.c5c3.io/shard"
DRAIN = "sharding.c5c3.io/drain"
KIND_KEY = f"{API}/KeystoneUser"
PATIENCE = 300.0


class Replica:
    """One replica slot: the process running in it now, restarted by the supervisor when it exits."""

    def __init__(self, world: World, slot: int, args: list[str]) -> None:
        self.world, self.slot, self.args = world, slot, args
        self.starts = 0
        self.exits = 0
        self.process = self._start()

    def _start(self) -> OperatorProcess:
        self.starts += 1
        return OperatorProcess(self.world, *self.args, name=f"replica-{self.slot}-{self.starts}")

    def supervise(self, delay: float) -> None:
        if self.process.process.poll() is not None:
            self.exits += 1
            time.sleep(delay)
            self.process = self._start()

    def member(self) -> str | None:
        """The member it serves as now: the last it joined under, unless it rejoined since (not serving yet)."""
        if "--sharded" not in self.args:
            return ""
        logs = self.process.logs()
        joined = re.findall(r"joined the shards as member ([a-z0-9-]+)", logs)
        if not joined or logs.rfind("rejoins the shards as member") > logs.rfind("joined the shards as member"):
            return None
        return str(joined[-1])

    def rejoins(self) -> int:
        return int(self.process.metric("c5c3_operator_shard_rejoins_total") or 0)


def unconverged(world: World, replicas: list[Replica], names: list[str]) -> str:
    serving = [r.member() for r in replicas]
    members = {name for name in serving if name is not None}
    if None in serving or any(r.process.process.poll() is not None for r in replicas):
        return "a replica is not serving"
    found = {o["metadata"]["name"]: dict(o["metadata"].get("labels") or {})
             for o in world.management.list(API, "KeystoneUser", TENANT).items if o["metadata"]["name"] in names}
    if len(found) != len(names):
        return "an order is missing"
    for name, labels in found.items():
        want = ring.owner(ring.order_key("", KIND_KEY, TENANT, name), members) if members != {""} else None
        if labels.get(SHARD) != want or DRAIN in labels:
            return f"{name} not on its member"
        if condition(get(world.management, API, "KeystoneUser", TENANT, name), "Ready") != "True":
            return f"{name} not Ready"
    return ""


def wait_converged(world: World, replicas: list[Replica], names: list[str], delay: float) -> float:
    """Seconds until converged (the supervisor restarting exited replicas meanwhile)."""
    began = time.monotonic()
    while why := unconverged(world, replicas, names):
        if time.monotonic() - began > PATIENCE:
            raise SystemExit(f"not converged in {PATIENCE}s: {why}")
        for replica in replicas:
            replica.supervise(delay)
        time.sleep(0.1)
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--orders", type=int, default=18)
    parser.add_argument("--window", type=float, default=15.0, help="seconds each fault window lasts")
    parser.add_argument("--restart-delay", type=float, default=0.0,
                        help="seconds before an exited replica is started again")
    parser.add_argument("--faults", default="500,429,latency,409")
    parser.add_argument("--lease", default="15s,10s,2s", help="lease duration, renew deadline, retry period")
    parser.add_argument("--plain", action="store_true", help="one replica without --sharded")
    options = parser.parse_args()
    lease, renew, retry = options.lease.split(",")
    with tempfile.TemporaryDirectory(prefix="shard-faults-") as tmp:
        world = World(Path(tmp))
        proxy = FaultProxy(world.server.url).start()
        replicas: list[Replica] = []
        try:
            kubeconfig = Path(tmp) / "faulted.kubeconfig"
            kubeconfig.write_text(yaml.safe_dump(proxied(yaml.safe_load(world.kubeconfig.read_text()), proxy)))
            args = ["--clusters-namespace", "", "--kubeconfig", str(kubeconfig), "--log-level", "info"]
            if not options.plain:
                args += ["--sharded", "--leader-elect-lease-duration", lease, "--leader-elect-renew-deadline", renew,
                         "--leader-elect-retry-period", retry]
            names = [f"o{n:02}" for n in range(options.orders)]
            for name in names:
                world.management.create(order("KeystoneUser", name))
            replicas = [Replica(world, slot, args) for slot in range(1 if options.plain else options.replicas)]
            started = wait_converged(world, replicas, names, options.restart_delay)
            windows: list[dict[str, Any]] = []
            for label in options.faults.split(","):
                time.sleep(3.0)  # settled
                exits = sum(r.exits for r in replicas)
                rejoins = sum(r.rejoins() for r in replicas)
                with proxy.window(FAULTS[label]) as seen:
                    deadline = time.monotonic() + options.window
                    while time.monotonic() < deadline:
                        for replica in replicas:
                            replica.supervise(options.restart_delay)
                        time.sleep(0.1)
                names.append(f"after-{label}")
                world.management.create(order("KeystoneUser", names[-1]))
                seconds = wait_converged(world, replicas, names, options.restart_delay)
                windows.append({
                    "fault": label, "seconds_to_converge": round(seconds, 1),
                    "replica_exits": sum(r.exits for r in replicas) - exits,
                    "rejoins": sum(r.rejoins() for r in replicas) - rejoins,
                    "requests_per_second": round(seen.per_second(), 1),
                })
            report = {
                "when": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                         text=True, check=False).stdout.strip(),
                "load_average": os.getloadavg(),
                "replicas": len(replicas), "sharded": not options.plain, "orders": options.orders,
                "window_seconds": options.window,
                "lease": options.lease, "restart_delay": options.restart_delay,
                "seconds_to_converge_at_start": round(started, 1), "windows": windows,
            }
            print(json.dumps(report, indent=2))
        finally:
            for replica in replicas:
                replica.process.kill()
            proxy.stop()
            world.close()


if __name__ == "__main__":
    main()
