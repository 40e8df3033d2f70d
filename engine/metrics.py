"""The operator's Prometheus metrics, owned per registry (never the global one).

Only the runtime and the CLI record metrics: a pass reports its step outcomes in its Result and the runtime's
outcome switch records them here. Building the families per registry keeps tests and scenarios free of
duplicate-series errors. ``Metrics`` lists every exposed name; docs/operations/monitoring.md says how to read them.
"""

from __future__ import annotations

import collections
import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily, Metric

from engine.clock import parse_time
from engine.outcome import StepOutcome

DEFAULT_PREFIX = "c5c3_operator"
"""The metric name prefix (an operator name, not a kind name)."""

DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
QUEUE_BUCKETS = (0.001, 0.01, 0.1, 1.0, 10.0, 60.0, 300.0, 1000.0)
REQUEST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


_Family = TypeVar("_Family", Counter, Gauge, Histogram)


class _Children:
    """A labelled family's children by their label values, each found once: the family's ``labels()`` builds its
    key from the values under the family's lock on every call (about a dozen Python calls), and every pass records
    a few of the same children. For families never cleared (a cleared family makes new children)."""

    __slots__ = ("_family", "_found")

    def __init__(self, family: Any) -> None:
        self._family = family
        self._found: dict[tuple[str, ...], Any] = {}

    def __call__(self, *values: str) -> Any:
        child = self._found.get(values)
        if child is None:
            child = self._found.setdefault(values, self._family.labels(*values))
        return child


class PassResult(StrEnum):
    """How a pass ended, as the ``result`` label of the passes counter."""

    SUCCESS = "success"
    REQUEUE_AFTER = "requeue_after"
    ERROR = "error"
    TERMINAL_ERROR = "terminal_error"


class Metrics:
    """Every metric family of one operator, registered in one injected registry.

    Exposed names, with ``<p>`` the prefix (default ``c5c3_operator``):

    - ``<p>_reconcile_duration_seconds{sub_reconciler}``: histogram, one observation per step outcome.
    - ``<p>_reconcile_errors_total{sub_reconciler,condition_type}``: +1 per step outcome that errored.
    - ``<p>_reconcile_total{result}``: passes by result (success, requeue_after, error, terminal_error).
    - ``<p>_pass_wakes_total{cause,kind}``: passes by what queued the order: ``event`` (kind: the object whose watch
      event it was), ``requeue`` (a pass's requeue after: a wait's re-check), ``retry`` (backoff after an error),
      ``held`` (kind: an event held during the order's previous pass that it did not see), ``gate``, ``added``.
    - ``<p>_workqueue_depth``: gauge, requests waiting in the queue (timers not included).
    - ``<p>_workqueue_queue_duration_seconds``: histogram, time from queued to picked up.
    - ``<p>_active_workers``: gauge, passes running now.
    - ``<p>_leader_status``: gauge, 1 while this replica leads, else 0.
    - ``<p>_api_requests_total{cluster,verb,code}``: HTTP requests to the API servers.
    - ``<p>_api_request_duration_seconds{cluster,verb,code}``: histogram, time until each request's answer.
    - ``<p>_events_total{result}``: Warning Events on orders: created, series, dropped, failed.
    - ``process_*`` (with ``process=True``): CPU seconds, resident and virtual memory, open and max file descriptors,
      start time, from prometheus_client's ProcessCollector on this registry.
    - ``<p>_cluster_registrations_refused_total{reason}``: registration Secrets refused, once per content: their data
      holds no kubeconfig (no-kubeconfig, empty, binary) or the kubeconfig is refused (exec, auth-provider,
      token-file, file-path, unknown-key, malformed).
    - ``<p>_watch_event_errors_total{kind}``: +1 per watch event whose index or mapping expression failed (skipped).
    - ``<p>_watch_failures_total{cluster,kind,reason}``: +1 per failure of a watch: ``gone`` (410), ``ended`` (the
      stream ended before its first event), ``error`` (any other).
    - ``<p>_watches_failing{cluster}``: watches failing now (``engine.cluster.retry.FAILING_AFTER`` failures in a row,
      no event since), computed at scrape time (``FailingWatchesCollector``); every engaged cluster has a sample.
    - ``<p>_orders{kind,condition,status,reason}``, ``<p>_order_time_to_ready_seconds{kind}`` and
      ``<p>_order_not_ready_seconds{kind}``: computed at scrape time from the orders the runtime last saw
      (``OrdersCollector``, registered by the operator).
    - ``<p>_shard_members``, ``<p>_shard_orders{member}``, ``<p>_shard_moves_total{how}`` (``engine run --sharded``,
      the leader's view): live members, orders labelled per member, label writes (assigned, moved after a drain,
      reassigned from a lapsed member, unserved: from a member no longer serving its kind, drain asked);
      ``<p>_shard_drains_total``: orders this replica handed back; ``<p>_shard_held_orders{member}``: orders this
      replica holds now (every member, not only the leader); ``<p>_shard_fenced_writes_total``: writes this replica's
      passes did not send because its tenure had lapsed; ``<p>_shard_rejoins_total``: membership Leases of this
      replica that lapsed, after which it rejoined as a new member.
    - ``<p>_cached_objects{cluster,kind}``: objects this replica holds in full in its caches (the clients' read caches
      and the runtime's watches, each object once), computed at scrape time (``CacheCollector``); what sharding makes
      fall with the replicas (decision 0032).
    - ``<p>_rules_reload_total{result}``: changed rule sets loaded or refused (lint errors) while running.
    - ``<p>_rules_info{hash}``: 1 for the rule set served now (the first 16 hex digits of its content hash).
    """

    def __init__(self, registry: CollectorRegistry, prefix: str = DEFAULT_PREFIX, *, process: bool = False) -> None:
        """process=True adds the process's own metrics (the operator's registry; not the tests' many)."""
        self.registry = registry
        self.prefix = prefix

        def family(kind: type[_Family], name: str, documentation: str, labels: Sequence[str] = (),
                   **options: Any) -> _Family:
            """One metric family named ``<prefix>_<name>``, registered in this registry."""
            return kind(f"{prefix}_{name}", documentation, labels, registry=registry, **options)

        self.reconcile_duration = family(
            Histogram, "reconcile_duration_seconds", "Duration of one step (sub-reconciler) of a pass.",
            ["sub_reconciler"], buckets=DURATION_BUCKETS)
        self.reconcile_errors = family(
            Counter, "reconcile_errors_total",
            "Steps (sub-reconcilers) that ended in an error, by the condition they own.",
            ["sub_reconciler", "condition_type"])
        self.passes = family(Counter, "reconcile_total", "Passes run, by how they ended.", ["result"])
        self.pass_wakes = family(
            Counter, "pass_wakes_total",
            "Passes run, by what queued the order: a watch event (kind: its object's kind), a pass's requeue (a wait's"
            " re-check), a retry after an error, an event held during the order's previous pass, or added otherwise.",
            ["cause", "kind"])
        self.queue_depth = family(
            Gauge, "workqueue_depth", "Requests waiting in the work queue (delayed requests not included).")
        self.queue_latency = family(
            Histogram, "workqueue_queue_duration_seconds",
            "Time a request waited in the work queue before a worker picked it up.", buckets=QUEUE_BUCKETS)
        self.active_workers = family(Gauge, "active_workers", "Passes running now.")
        self.leader_status = family(Gauge, "leader_status", "1 while this replica holds the leader lease, else 0.")
        self.api_requests = family(
            Counter, "api_requests_total",
            "HTTP requests to the API servers, by cluster (\"\" is the management cluster), verb and status code.",
            ["cluster", "verb", "code"])
        self.api_request_duration = family(
            Histogram, "api_request_duration_seconds",
            "Time from sending a request to an API server until its answer (headers; a watch's opening).",
            ["cluster", "verb", "code"], buckets=REQUEST_BUCKETS)
        self.registrations_refused = family(
            Counter, "cluster_registrations_refused_total",
            "Registration Secrets refused (no usable kubeconfig in their data, or a refused kubeconfig), by why.",
            ["reason"])
        self.watch_event_errors = family(
            Counter, "watch_event_errors_total",
            "Watch events skipped because an index or mapping expression failed on the object, by its kind.", ["kind"])
        self.watch_failures = family(
            Counter, "watch_failures_total",
            "Failures of the operator's watches, by cluster, watched kind and reason: gone (410), ended (the stream "
            "ended before its first event), error (any other).", ["cluster", "kind", "reason"])
        self.events = family(
            Counter, "events_total",
            "Warning Events on orders: created, added to a series, dropped (rate limit, full queue) or failed.",
            ["result"])
        self.shard_members = family(Gauge, "shard_members", "Live shard members (the leader's view; 0 elsewhere).")
        self.shard_orders = family(
            Gauge, "shard_orders", "Orders labelled for each shard member (the leader's view).", ["member"])
        self.shard_moves = family(
            Counter, "shard_moves_total",
            "Shard label writes by the leader: assigned, moved (after a drain), reassigned (a lapsed member's), "
            "unserved (from a member that no longer serves its kind), drain.",
            ["how"])
        self.shard_drains = family(
            Counter, "shard_drains_total", "Orders this replica handed back when asked to drain them.")
        self.shard_held_orders = family(
            Gauge, "shard_held_orders",
            "Orders this replica holds as a shard member now (its label-selected watches of orders, at scrape time).",
            ["member"])
        self.shard_fenced_writes = family(
            Counter, "shard_fenced_writes_total",
            "Writes a pass of this replica did not send: its shard tenure had lapsed (decision 0033).")
        self.shard_rejoins = family(
            Counter, "shard_rejoins_total",
            "Membership Leases of this replica that lapsed, after which it rejoined under a new name (decision 0056).")
        self.rules_reloads = family(
            Counter, "rules_reload_total",
            "Changed rule sets seen while running, by result: loaded, or refused (they do not lint clean).", ["result"])
        self.rules_info = family(
            Gauge, "rules_info", "1 for the rule set served now, labelled with its content hash.", ["hash"])
        if process:
            ProcessCollector(registry=registry)
        # What every pass records, through children found once (these families are never cleared).
        self._durations = _Children(self.reconcile_duration)
        self._errors = _Children(self.reconcile_errors)
        self._results = _Children(self.passes)
        self._wakes = _Children(self.pass_wakes)

    def record_outcomes(self, outcomes: Iterable[StepOutcome]) -> None:
        """One duration observation per step outcome; one error count per errored one."""
        for outcome in outcomes:
            self._durations(outcome.metric).observe(outcome.seconds)
            if outcome.error:
                self._errors(outcome.metric, outcome.condition).inc()

    def record_pass(self, result: PassResult) -> None:
        self._results(result.value).inc()

    def record_wake(self, cause: str, kind: str) -> None:
        self._wakes(cause, kind).inc()

    def set_queue_depth(self, depth: int) -> None:
        self.queue_depth.set(depth)

    def observe_queue_latency(self, seconds: float) -> None:
        self.queue_latency.observe(max(seconds, 0.0))

    def api_request_observer(self, cluster: str) -> Callable[[str, str, float], None]:
        """What a cluster client calls after each request: counts it and observes its latency."""

        # (verb, code) -> the counter's and the histogram's child: a labels() call per request takes a lock and
        # builds a key (a few verbs and codes, so this stays small).
        children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

        def observe(verb: str, code: str, seconds: float) -> None:
            pair = children.get((verb, code))
            if pair is None:
                pair = children.setdefault((verb, code), (
                    self.api_requests.labels(cluster=cluster, verb=verb, code=code),
                    self.api_request_duration.labels(cluster=cluster, verb=verb, code=code)))
            pair[0].inc()
            pair[1].observe(max(seconds, 0.0))

        return observe

    def record_watch_event_error(self, kind: str) -> None:
        self.watch_event_errors.labels(kind=kind).inc()

    def record_watch_failure(self, cluster: str, kind: str, reason: str) -> None:
        self.watch_failures.labels(cluster=cluster, kind=kind, reason=reason).inc()

    def set_leader(self, leading: bool) -> None:
        self.leader_status.set(1 if leading else 0)

    def set_shards(self, members: Iterable[str], owned: Mapping[str, int]) -> None:
        """The leader's view after a round: live members, and orders labelled per member (members gone: 0)."""
        live = list(members)
        self.shard_members.set(len(live))
        self.shard_orders.clear()
        for member in sorted({*live, *owned}):
            self.shard_orders.labels(member=member).set(owned.get(member, 0))

    def record_refused_registration(self, reason: str) -> None:
        self.registrations_refused.labels(reason=reason).inc()

    def record_rules_reload(self, result: str) -> None:
        self.rules_reloads.labels(result=result).inc()

    def set_rules_hash(self, digest: str) -> None:
        """Only the served set's series reads 1."""
        self.rules_info.clear()
        self.rules_info.labels(hash=digest).set(1)


TIME_TO_READY_BUCKETS = (5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 21600.0, 86400.0)
"""Seconds: from a few seconds (the converge path) to a day (an order waiting on a person)."""
STATUSES = frozenset({"True", "False", "Unknown"})


@dataclass(frozen=True)
class OrderKindView:
    """What the orders collector reads of one order kind: its conditions and the orders last seen."""

    kind: str
    condition_types: tuple[str, ...]
    """The sub-conditions, then the aggregate."""
    ready_type: str
    reasons: frozenset[str]
    orders: Iterable[dict[str, Any]]


class OrdersCollector:
    """Orders by condition, time to Ready and time not Ready, computed at scrape time from the orders the
    runtime last saw (its watch caches: no API call). Labels are bounded by the rules (order data is untrusted):
    only declared condition types are counted, a reason the rules do not declare as ``Other``, a status other than
    True/False as Unknown.

    - ``<p>_orders{kind,condition,status,reason}``: gauge, orders by each declared condition's status and
      reason (``status="Unknown",reason=""``: the order carries no such condition yet).
    - ``<p>_order_time_to_ready_seconds{kind}``: gauge histogram over the orders Ready now: seconds from
      creation to their Ready condition's last transition to True.
    - ``<p>_order_not_ready_seconds{kind}``: gauge histogram over the orders not Ready now: seconds since
      their Ready condition's last transition (since creation when they have none), for "not Ready for long"."""

    def __init__(self, prefix: str, views: Callable[[], Iterable[OrderKindView]], clock: Callable[[], dt.datetime]
                 ) -> None:
        self.prefix = prefix
        self._views = views
        self._now = clock

    def describe(self) -> list[Metric]:
        return []  # computed at scrape time: registering must not run a scrape

    def collect(self) -> Iterator[Metric]:
        p = self.prefix
        orders = GaugeMetricFamily(f"{p}_orders", "Orders last seen, by kind and each condition's status and reason.",
                                   labels=["kind", "condition", "status", "reason"])
        to_ready = GaugeHistogramMetricFamily(
            f"{p}_order_time_to_ready_seconds",
            "Orders Ready now, by the seconds from their creation to their Ready condition's last transition.",
            labels=["kind"])
        not_ready = GaugeHistogramMetricFamily(
            f"{p}_order_not_ready_seconds",
            "Orders not Ready now, by the seconds since their Ready condition's last transition (else creation).",
            labels=["kind"])
        now = self._now()
        for view in self._views():
            counts: collections.Counter[tuple[str, str, str]] = collections.Counter()
            ready_ages: list[float] = []
            waiting_ages: list[float] = []
            for order in view.orders:
                conditions = _conditions(order)
                for ctype in view.condition_types:
                    found = conditions.get(ctype)
                    status = str(found.get("status")) if found is not None else "Unknown"
                    reason = str(found.get("reason") or "") if found is not None else ""
                    counts[(ctype, status if status in STATUSES else "Unknown",
                            reason if reason in view.reasons or reason == "" else "Other")] += 1
                ready = conditions.get(view.ready_type)
                created = _time((order.get("metadata") or {}).get("creationTimestamp"))
                moved = _time(ready.get("lastTransitionTime")) if ready is not None else None
                if ready is not None and ready.get("status") == "True":
                    if created is not None and moved is not None:
                        ready_ages.append(max((moved - created).total_seconds(), 0.0))
                elif (since := moved or created) is not None:
                    waiting_ages.append(max((now - since).total_seconds(), 0.0))
            for (ctype, status, reason), count in sorted(counts.items()):
                orders.add_metric([view.kind, ctype, status, reason], count)
            to_ready.add_metric([view.kind], _buckets(ready_ages), sum(ready_ages))
            not_ready.add_metric([view.kind], _buckets(waiting_ages), sum(waiting_ages))
        return iter([orders, to_ready, not_ready])


def _conditions(order: dict[str, Any]) -> dict[str, dict[str, Any]]:
    status = order.get("status")
    listed = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(listed, list):
        return {}
    return {str(c.get("type")): c for c in listed if isinstance(c, dict)}


def _time(value: object) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def _buckets(values: list[float]) -> list[tuple[str, float]]:
    """Cumulative bucket counts (``le`` as text, ``+Inf`` last), as a histogram exposes them."""
    out = [(str(bound), float(sum(1 for v in values if v <= bound))) for bound in TIME_TO_READY_BUCKETS]
    return [*out, ("+Inf", float(len(values)))]


CachedKeys = Iterable[tuple[str, str, Iterable[tuple[str, str]]]]
"""(cluster, kind, the (namespace, name) keys of the objects of that kind one cache holds), per cache."""


class CacheCollector:
    """``<p>_cached_objects{cluster,kind}``: distinct objects held in full by the replica's caches, at scrape time."""

    def __init__(self, prefix: str, caches: Callable[[], CachedKeys]) -> None:
        self.prefix = prefix
        self._caches = caches

    def describe(self) -> list[Metric]:
        return []  # computed at scrape time: registering must not run a scrape

    def collect(self) -> Iterator[Metric]:
        held: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for cluster, kind, keys in self._caches():
            held.setdefault((cluster, kind), set()).update(keys)
        family = GaugeMetricFamily(f"{self.prefix}_cached_objects",
                                   "Objects held in full by this replica's caches, by cluster and kind.",
                                   labels=["cluster", "kind"])
        for (cluster, kind), keys in sorted(held.items()):
            family.add_metric([cluster, kind], len(keys))
        return iter([family])


class FailingWatchesCollector:
    """``<p>_watches_failing{cluster}``: the watches failing now on each engaged cluster, at scrape time."""

    def __init__(self, prefix: str, failing: Callable[[], Mapping[str, int]]) -> None:
        """failing: cluster name -> how many of its watches fail now (0 for a cluster whose watches all work)."""
        self.prefix = prefix
        self._failing = failing

    def describe(self) -> list[Metric]:
        return []  # computed at scrape time: registering must not run a scrape

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(f"{self.prefix}_watches_failing",
                                   "Watches failing now (failures in a row, no event since), by cluster.",
                                   labels=["cluster"])
        for cluster, count in sorted(self._failing().items()):
            family.add_metric([cluster], count)
        return iter([family])
