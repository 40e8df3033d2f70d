"""Benchmark: what one pass over a converged KeystoneUser order costs (run on demand, not in CI).

    .venv/bin/python bench/converged_pass.py [--orders N] [--passes M]

It converges N orders on the in-memory cluster with the demo's simulated K-ORC and ESO, then runs
M passes per order and reports, per pass: API calls by verb (the counts are exact and must show no
write), wall time (a ratio against compiling the rules once, so the number travels across
machines), and the in-memory store's object count. Timings are informative, never asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from collections import Counter
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.cluster.faults import FaultyCluster  # noqa: E402
from engine.cluster.memory import MemoryCluster  # noqa: E402
from engine.cluster.registry import ClusterSet  # noqa: E402
from engine.metrics import Metrics  # noqa: E402
from engine.outcome import Request  # noqa: E402
from engine.reconcile.run import run_pass  # noqa: E402
from engine.rules.catalog import load_catalog  # noqa: E402
from engine.runtime.manager import Manager  # noqa: E402
from engine.testing.clock import SimulatedClock  # noqa: E402
from simulators import eso, korc  # noqa: E402
from simulators.base import pending, react  # noqa: E402
from simulators.demo import WORLD  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=50)
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()

    started = time.perf_counter()
    catalog = load_catalog(ROOT / "rules")
    compile_seconds = time.perf_counter() - started
    kind = catalog["c5c3.io/v1alpha1/KeystoneUser"]

    clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    memory = MemoryCluster("", clock=clock, permissive=True)
    for crd in sorted((ROOT / "deploy" / "crds").glob("*.yaml")):
        memory.create(yaml.safe_load(crd.read_text()))
    for obj in WORLD:
        memory.seed(obj)
    faulty = FaultyCluster(memory, cluster_name="")
    clusters = ClusterSet(faulty)
    manager = Manager(catalog, clusters, clock=clock, metrics=Metrics(CollectorRegistry()))
    manager.start()
    namespace = next(o["metadata"]["name"] for o in WORLD
                     if o["kind"] == "Namespace" and o["metadata"]["name"] != "openstack")
    for i in range(args.orders):
        memory.create({"apiVersion": "c5c3.io/v1alpha1", "kind": "KeystoneUser",
                       "metadata": {"name": f"order-{i}", "namespace": namespace},
                       "spec": {"controlPlaneRef": {"name": "cp", "namespace": "openstack"}}})
    sims = [korc.KorcSimulator(memory, clock), eso.EsoSimulator(memory, clock)]
    for _ in range(200):
        manager.settle(max_passes=100_000)
        if not pending(sims):
            break
        react(sims)
        manager.advance(dt.timedelta(seconds=1), max_passes=100_000)
    ready = sum(
        any(c["type"] == "Ready" and c["status"] == "True" for c in o.get("status", {}).get("conditions", []))
        for o in memory.list("c5c3.io/v1alpha1", "KeystoneUser", namespace).items)
    if ready != args.orders:
        print(f"only {ready} of {args.orders} orders converged", file=sys.stderr)
        return 1

    faulty.calls.clear()
    requests = [Request(kind.key, "", namespace, f"order-{i}") for i in range(args.orders)]
    started = time.perf_counter()
    for _ in range(args.passes):
        for request in requests:
            run_pass(kind, request, clusters=clusters, clock=clock)
    elapsed = time.perf_counter() - started
    total = args.orders * args.passes
    verbs = Counter(call.verb for call in faulty.calls)
    objects = sum(len(memory.list(i.api_version, i.kind).items) for i in memory.resources() if i.namespaced)
    print(f"orders converged: {ready}; passes measured: {total}")
    print("API calls per converged pass: " + ", ".join(f"{v} {n / total:.1f}" for v, n in sorted(verbs.items())))
    writes = sum(n for v, n in verbs.items() if v in ("create", "update", "patch", "apply", "delete"))
    print(f"writes per converged pass: {writes / total:.1f} (must be 0)")
    print(f"one converged pass costs {elapsed / total / compile_seconds:.3f}x compiling the rules once"
          f" ({elapsed / total * 1000:.2f} ms here)")
    print(f"objects in the store: {objects} ({objects / args.orders:.1f} per order)")
    return 0 if writes == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
