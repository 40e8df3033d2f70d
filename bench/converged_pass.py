"""Benchmark: what one pass over a converged KeystoneUser order costs (run on demand, not in CI).

    .venv/bin/python bench/converged_pass.py [--orders N] [--passes M] [--crowd C] [--project DIR]

It converges N orders on the in-memory cluster with the demo's simulated K-ORC and ESO, then runs
M passes per order and reports, per pass: API calls by verb (the counts are exact and must show no
write), wall and CPU time (also as a ratio against compiling the rules once, so the number
travels across machines), and the in-memory store's object count. Timings are informative, never
asserted.

The measured passes read as ``engine run`` reads: from informer stores (``engine.cluster.kube.store``,
filled from the converged cluster), not from the in-memory API server, whose lists walk every object
of a kind. ``--crowd C`` then adds C copies of every order and child (renamed, with their own name
label) to those stores, so the caches hold (C+1) x N orders' objects while the same N orders are
measured: compare ``--crowd 0`` with ``--crowd 99`` for the cost of a pass at 100x the orders (issue
11 item 4: at most 1.2x). ``--project DIR`` runs another checkout's engine (a commit to compare).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from collections import Counter
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry

ROOT = Path(__file__).resolve().parent.parent
if "--project" in sys.argv:
    ROOT = Path(sys.argv[sys.argv.index("--project") + 1]).resolve()
sys.path.insert(0, str(ROOT))

from engine.cluster.api import NotFound, Obj, ObjectList  # noqa: E402
from engine.cluster.kube.store import Store, interned  # noqa: E402
from engine.cluster.registry import ClusterSet  # noqa: E402
from engine.cluster.selectors import parse_fields, parse_labels  # noqa: E402
from engine.expr import jinja  # noqa: E402
from engine.metrics import Metrics  # noqa: E402
from engine.outcome import Request  # noqa: E402
from engine.reconcile.run import run_pass  # noqa: E402
from engine.rules.catalog import load_catalog  # noqa: E402
from engine.runtime.manager import Manager  # noqa: E402
from offline.clock import SimulatedClock  # noqa: E402
from offline.cluster.faults import FaultyCluster  # noqa: E402
from offline.cluster.memory import MemoryCluster  # noqa: E402
from simulators import eso, korc  # noqa: E402
from simulators.base import pending, react  # noqa: E402
from simulators.demo import WORLD  # noqa: E402

try:
    from offline.paused import ProfilePaused
except ImportError:  # a --project checkout older than the module: this checkout's copy, which needs ClusterWrapper only
    import importlib.util
    _spec = importlib.util.spec_from_file_location("paused", Path(__file__).resolve().parent.parent / "engine" /
                                                   "testing" / "paused.py")
    assert _spec is not None and _spec.loader is not None
    _paused = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_paused)
    ProfilePaused = _paused.ProfilePaused


class CachedReads:
    """The cluster as ``engine run``'s KubeCluster reads it in a converged pass: gets and lists from one
    informer store per kind (filled from the converged in-memory cluster); everything else goes through."""

    def __init__(self, inner: MemoryCluster) -> None:
        self.inner = inner
        self.stores: dict[tuple[str, str], Store] = {}
        self.plain: dict[tuple[str, str], Store] = {}
        """The stores without the crowd (``crowd`` fills ``stores`` with copies of these plus the crowd)."""

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def store(self, api_version: str, kind: str) -> Store:
        key = (api_version.rpartition("/")[0], kind)
        if key not in self.stores:
            answer = self.inner.list(api_version, kind)
            self.stores[key] = Store()
            self.stores[key].replace([interned(item) for item in answer.items], answer.resource_version)
        return self.stores[key]

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, *, live: bool = False,
            carries: object = ()) -> Obj:
        if live:
            return self.inner.get(api_version, kind, namespace, name, live=True)
        store = self.store(api_version, kind)
        found = store.get((namespace or "", name)) or store.get(("", name))
        if found is None:
            raise NotFound(f'{kind} "{name}" not found')
        return found

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, labels: object = None,
             fields: str | None = None, live: bool = False, reads: object = None) -> ObjectList:
        """``reads`` (the paths a list input reads, decision 40) is ignored: the stores hold whole objects."""
        if live or fields:
            return self.inner.list(api_version, kind, namespace, labels=labels, fields=fields,  # type: ignore[arg-type]
                                   live=live)
        items, position = self.store(api_version, kind).select(namespace, parse_labels(labels),  # type: ignore[arg-type]
                                                               parse_fields(None))
        return ObjectList(items, position)

    def crowd(self, copies: int, name_label: str, order_kind: str) -> int:
        """Keep the stores as they are (``plain``) and make crowded ones: the same objects plus ``copies`` renamed
        copies of every order and of every object carrying the order name label (selected with ``use``)."""
        added = 0
        self.plain = self.stores
        self.crowded: dict[tuple[str, str], Store] = {}
        for key, store in self.plain.items():
            originals, position = store.select(None, parse_labels(None), parse_fields(None))
            objects = list(originals)
            for obj in originals:
                labels = (obj.get("metadata") or {}).get("labels") or {}
                if key[1] != order_kind and name_label not in labels:
                    continue
                for i in range(copies):
                    twin = json.loads(json.dumps(obj))
                    twin["metadata"]["name"] = f"{obj['metadata']['name']}-crowd{i}"
                    if name_label in labels:
                        twin["metadata"]["labels"][name_label] = f"{labels[name_label]}-crowd{i}"
                    twin["metadata"]["uid"] = f"{obj['metadata'].get('uid')}-crowd{i}"
                    objects.append(interned(twin))
                    added += 1
            self.crowded[key] = Store()
            self.crowded[key].replace(objects, position)
        return added

    def use(self, crowded: bool) -> None:
        self.stores = self.crowded if crowded else self.plain


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=50)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--crowd", type=int, default=0)
    parser.add_argument("--count-calls", action="store_true",
                        help="also count the Python function calls of one pass per order (the first, then converged"
                             " plain and crowded): exact")
    parser.add_argument("--rounds", type=int, default=3,
                        help="with --crowd: alternating plain and crowded rounds, the fastest of each compared")
    parser.add_argument("--cold-templates", action="store_true",
                        help="crowded rounds find no rendered text parsed already (as with more orders than "
                             "the parsed-text cache holds)")
    parser.add_argument("--project", type=Path, default=None, help="the checkout whose engine runs (default: this one)")
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
    unprofiled = ProfilePaused(memory, cluster_name="")
    faulty = FaultyCluster(unprofiled, cluster_name="")  # type: ignore[arg-type]
    clusters = ClusterSet(faulty)
    manager = Manager(catalog, clusters, clock=clock, metrics=Metrics(CollectorRegistry()))
    manager.start()
    namespace = next(o["metadata"]["name"] for o in WORLD
                     if o["kind"] == "Namespace" and o["metadata"]["name"] != "openstack")
    for i in range(args.orders):
        memory.create({"apiVersion": "c5c3.io/v1alpha1", "kind": "KeystoneUser",
                       "metadata": {"name": f"order-{i}", "namespace": namespace},
                       "spec": {"controlPlaneRef": {"name": "cp", "namespace": "openstack"}}})
    requests = [Request(kind.key, "", namespace, f"order-{i}") for i in range(args.orders)]
    sims = [korc.KorcSimulator(memory, clock), eso.EsoSimulator(memory, clock)]
    counting = None
    if args.count_calls:
        import cProfile
        counting = unprofiled.profile = cProfile.Profile()
        counting.enable()
    for _ in range(200):
        manager.settle(max_passes=100_000)
        if not pending(sims):
            break
        unprofiled.pause(lambda: react(sims))
        manager.advance(dt.timedelta(seconds=1), max_passes=100_000)
    if counting is not None:
        import pstats
        counting.disable()
        unprofiled.profile = None
        calls = pstats.Stats(counting).total_calls  # type: ignore[attr-defined]
        print(f"function calls per order while converging, the in-memory cluster's and the simulators' own not"
              f" counted: {calls / args.orders:.0f}")
    ready = sum(
        any(c["type"] == "Ready" and c["status"] == "True" for c in o.get("status", {}).get("conditions", []))
        for o in memory.list("c5c3.io/v1alpha1", "KeystoneUser", namespace).items)
    if ready != args.orders:
        print(f"only {ready} of {args.orders} orders converged", file=sys.stderr)
        return 1

    cached = CachedReads(memory)
    reading = FaultyCluster(cached, cluster_name="")  # type: ignore[arg-type]
    reads = ClusterSet(reading)
    for request in requests:  # fills the stores of every kind a pass reads
        run_pass(kind, request, clusters=reads, clock=clock)
    crowd = cached.crowd(args.crowd, kind.children.name_label, kind.kind)
    cached_objects = sum(len(store) for store in cached.crowded.values())
    limit = jinja._PARSED.limit

    def cold(on: bool) -> None:
        """No rendered text is found parsed already (on) or the parsed-text cache works as usual (off)."""
        jinja._PARSED.limit = 0 if on else limit
        if on:
            jinja._PARSED._objects.clear()

    def measure(crowded: bool) -> tuple[float, float]:
        """Wall and CPU seconds of ``passes`` passes over every order, reading the plain or the crowded stores
        (crowded: with --cold-templates, no rendered text is found parsed already, as with more orders than the
        parsed-text cache holds)."""
        cached.use(crowded)
        cold(crowded and args.cold_templates)
        for request in requests:  # warm-up, unmeasured: the plain rounds find their texts parsed again
            run_pass(kind, request, clusters=reads, clock=clock)
        reading.calls.clear()
        started, cpu_started = time.perf_counter(), time.process_time()
        for _ in range(args.passes):
            for request in requests:
                run_pass(kind, request, clusters=reads, clock=clock)
        return time.perf_counter() - started, time.process_time() - cpu_started

    if args.count_calls:
        import cProfile
        import pstats
        for crowded in (False, True):
            cached.use(crowded)
            cold(crowded and args.cold_templates)
            for request in requests:
                run_pass(kind, request, clusters=reads, clock=clock)
            profile = cProfile.Profile()
            profile.enable()
            for request in requests:
                run_pass(kind, request, clusters=reads, clock=clock)
            profile.disable()
            calls = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
            print(f"function calls per pass ({'crowded' if crowded else 'plain'}): {calls / len(requests):.0f}")
    rounds = [(measure(False), measure(True)) for _ in range(args.rounds)] if args.crowd else []
    cached.use(bool(args.crowd))
    elapsed, cpu = measure(bool(args.crowd)) if not rounds else min(r[1] for r in rounds)
    total = args.orders * args.passes
    verbs = Counter(call.verb for call in reading.calls)
    objects = sum(len(memory.list(i.api_version, i.kind).items) for i in memory.resources() if i.namespaced)
    if rounds:
        plain_cpu, crowded_cpu = min(r[0][1] for r in rounds), min(r[1][1] for r in rounds)
        crowded_orders = (args.crowd + 1) * args.orders
        cold = " (templates cold)" if args.cold_templates else ""
        print(f"CPU per pass, fastest of {len(rounds)} alternating rounds: {plain_cpu / total * 1000:.2f} ms with"
              f" {args.orders} orders' objects cached, {crowded_cpu / total * 1000:.2f} ms with {crowded_orders}{cold}:"
              f" {crowded_cpu / plain_cpu:.2f}x")
    print(f"orders converged: {ready}; passes measured: {total}")
    print("API calls per converged pass: " + ", ".join(f"{v} {n / total:.1f}" for v, n in sorted(verbs.items())))
    writes = sum(n for v, n in verbs.items() if v in ("create", "update", "patch", "apply", "delete"))
    print(f"writes per converged pass: {writes / total:.1f} (must be 0)")
    print(f"one converged pass costs {elapsed / total / compile_seconds:.3f}x compiling the rules once"
          f" ({elapsed / total * 1000:.2f} ms here; CPU {cpu / total * 1000:.2f} ms)")
    print(f"objects in the store: {objects} ({objects / args.orders:.1f} per order); in the read caches"
          f" {cached_objects}, of which {crowd} crowd copies ({cached_objects / args.orders:.1f} per measured order)")
    return 0 if writes == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
