"""Simulation: what sharding gives each replica, for 1, 2 and 4 replicas (run on demand, not in CI).

    .venv/bin/python bench/sharding_sim.py [--orders N] [--kib K]

Two cores cannot show several operator processes scaling, so this runs the real sharding code
(membership Leases, the leader's assigner, the members' label-selected order watches and their
admission) in one process on a simulated clock over the in-memory cluster, with a stand-in pass.
For each replica count it reports, per replica: the orders its order watch holds (count and JSON
KiB), the passes it runs when every order changes once (its share of the work: throughput scales
with the replicas as far as the passes are the cost), and the orders that move when one more
member joins and when one leaves. The client's read cache of orders and the children's caches are
scoped by the shard too (decision 0032); ``sharding_memory.py`` measures real processes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prometheus_client import CollectorRegistry  # noqa: E402

from engine.clock import Clock  # noqa: E402
from engine.cluster.api import Obj  # noqa: E402
from engine.cluster.registry import ClusterSet  # noqa: E402
from engine.metrics import Metrics  # noqa: E402
from engine.outcome import Request, Result  # noqa: E402
from engine.runtime.kinds import Index, Log  # noqa: E402
from engine.runtime.leader import LeaseSettings  # noqa: E402
from engine.runtime.manager import Manager  # noqa: E402
from engine.runtime.sharding.assigner import Assigner  # noqa: E402
from engine.runtime.sharding.labels import DRAIN_LABEL, MEMBER_LABEL, SHARD_LABEL  # noqa: E402
from engine.runtime.sharding.member import ShardMember  # noqa: E402
from offline.clock import SimulatedClock  # noqa: E402
from offline.cluster.memory import MemoryCluster  # noqa: E402

API = "example.io/v1"
NS = "c5c3-system"


@dataclass(frozen=True)
class OrderWatch:
    api_version: str = API
    kind: str = "Widget"
    clusters: str = "all"
    order_kind: str = f"{API}/Widget"
    is_order: bool = True
    uses_index: bool = False
    origin: str = "bench"

    def passes(self, old: Obj | None, new: Obj | None) -> bool:
        return True

    def requests(self, obj: Obj, cluster: str, index: Index) -> list[Request]:
        return [Request(self.order_kind, cluster, obj["metadata"]["namespace"], obj["metadata"]["name"])]


@dataclass(frozen=True)
class Widgets:
    api_version: str = API
    kind: str = "Widget"
    watches: tuple[OrderWatch, ...] = (OrderWatch(),)
    label_scopes: tuple[tuple[str, str, str], ...] = ()
    index_origin: str = "bench"

    @property
    def key(self) -> str:
        return f"{self.api_version}/{self.kind}"

    def index_keys(self, order: Obj, cluster: str) -> list[str]:
        return []


class CountingPass:
    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, kind: Any, request: Request, *, clusters: ClusterSet, clock: Clock, log: Log) -> Result:
        self.runs += 1
        return Result()


class Replica:
    def __init__(self, name: str, cluster: MemoryCluster, clock: SimulatedClock) -> None:
        kind = Widgets()
        catalog = {kind.key: kind}
        settings = LeaseSettings(NS, name, name, lease_duration=15, renew_deadline=10, retry_period=2,
                                 labels=((MEMBER_LABEL, "true"),))
        self.member = ShardMember(ClusterSet(cluster), catalog, settings, clock=clock)
        self.work = CountingPass()
        self.manager: Manager[Any] = Manager(catalog, ClusterSet(cluster), clock=clock,
                                             metrics=Metrics(CollectorRegistry()), run_pass=self.work,
                                             order_selector=self.member.selector)
        self.member.elector.step()

    def settle(self) -> None:
        """Run what is queued, each pass admitted by the member as the threaded workers do."""
        queue = self.manager.queue
        self.manager.sources.pump()
        while (request := queue.pop_ready()) is not None:
            try:
                if self.member.admit(request) == "run":
                    self.manager.controller.run_pass(request)
            finally:
                queue.done(request)
            self.manager.sources.pump()

    def held(self) -> tuple[int, float]:
        objects = [o for i in self.manager.sources.informers() for o in i.cached().values()]
        return len(objects), sum(len(json.dumps(o)) for o in objects) / 1024


def owners(cluster: MemoryCluster) -> dict[str, str]:
    return {o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get(SHARD_LABEL, "")
            for o in cluster.list(API, "Widget").items}


def settle_all(assigner: Assigner, replicas: list[Replica], cluster: MemoryCluster) -> None:
    for _ in range(6):
        assigner.step()
        for replica in replicas:
            replica.settle()
        if not any(DRAIN_LABEL in (o["metadata"].get("labels") or {}) for o in cluster.list(API, "Widget").items):
            assigner.step()
            for replica in replicas:
                replica.settle()
            return


def simulate(count: int, orders: int, kib: int) -> dict[str, Any]:
    clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    cluster = MemoryCluster("", clock=clock, permissive=True)
    payload = "x" * (kib * 1024)
    for n in range(orders):
        cluster.create({"apiVersion": API, "kind": "Widget", "metadata": {"name": f"o{n:05}", "namespace": "ns"},
                        "spec": {"payload": payload}})
    kind = Widgets()
    assigner = Assigner(ClusterSet(cluster), {kind.key: kind}, NS, clock=clock, lease_duration=15)
    replicas = [Replica(f"r{n}", cluster, clock) for n in range(count)]
    for replica in replicas:
        replica.manager.start()
    settle_all(assigner, replicas, cluster)
    held = [r.held() for r in replicas]
    for replica in replicas:
        replica.work.runs = 0
    for order in cluster.list(API, "Widget").items:  # every order changes once
        order["spec"]["touched"] = True
        cluster.update(order)
    for replica in replicas:
        replica.settle()
    passes = [r.work.runs for r in replicas]
    before = owners(cluster)
    replicas.append(Replica(f"r{count}", cluster, clock))
    replicas[-1].manager.start()
    settle_all(assigner, replicas, cluster)
    joined = owners(cluster)
    moved_on_join = sum(1 for k in before if before[k] != joined[k])
    gone = replicas.pop(0)
    gone.member.leave()
    settle_all(assigner, replicas, cluster)
    left = owners(cluster)
    moved_on_leave = sum(1 for k in joined if joined[k] != left[k])
    return {
        "replicas": count,
        "orders held per replica (mean, max)": (statistics.mean(h[0] for h in held), max(h[0] for h in held)),
        "KiB held per replica (mean, max)": (round(statistics.mean(h[1] for h in held)),
                                             round(max(h[1] for h in held))),
        "passes per replica for one change of every order (mean, max)": (statistics.mean(passes), max(passes)),
        "moved when one joins": moved_on_join,
        "moved when one leaves": moved_on_leave,
    }


def main() -> None:
    logging.disable(logging.WARNING)  # joins and leaves are logged; the figures are the output
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=2000)
    parser.add_argument("--kib", type=int, default=2, help="payload per order")
    args = parser.parse_args()
    for count in (1, 2, 4):
        print(json.dumps(simulate(count, args.orders, args.kib)))


if __name__ == "__main__":
    main()
