"""``engine run``: the operator process, wired from its options.

In order: the rule files must lint clean (else exit 1 with the lint lines); JSON logs with a process-wide secret
sink; the metrics and probe addresses bound (an address in use is exit 1 naming the flag and the port); the
management cluster (a kubeconfig, or the pod's service account); the manager over the compiled catalog; the
registration watch that engages target clusters; the metrics and probe endpoints; leader election when asked;
the rule reloader (``engine.runtime.reload``); then the manager runs until SIGTERM or SIGINT. Shutdown is
graceful: no new pass starts, running passes finish, threads stop, the Lease is released (a follower takes over at
once) and every cluster client is closed. A leader that loses its Lease stops starting passes and stays a
candidate with warm caches. With ``--sharded`` every replica is also a shard member (``engine.runtime.sharding``):
it runs passes only for the orders labelled with its name, and one that loses its membership Lease rejoins in the
same process as a new member (decision 0056).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import re
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from prometheus_client import CollectorRegistry

from engine import durations, logs
from engine.cluster import readonly
from engine.cluster.api import MANAGEMENT_CLUSTER, Cluster
from engine.cluster.registry import ClusterSet
from engine.expr.functions import SecretSink, current_sink
from engine.metrics import CacheCollector, CachedKeys, FailingWatchesCollector, Metrics, OrderKindView, OrdersCollector
from engine.ops import BindError, Endpoint, bind, metrics_routes, probe_routes
from engine.reconcile.run import run_pass
from engine.runtime.clusters import DEFAULT_CLUSTERS_NAMESPACE, Registration, Registrations
from engine.runtime.cpu_pinning import pinning_for_this_process
from engine.runtime.events import EventRecorder
from engine.runtime.kinds import Catalog, LabelScopes, MemberProjections, label_scopes, member_projections, shard_scopes
from engine.runtime.leader import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    LeaderElector,
    LeaseSettings,
    PreciseClock,
    default_identity,
)
from engine.runtime.manager import Manager
from engine.runtime.reload import DEFAULT_RELOAD_INTERVAL, RuleReloader, short
from engine.runtime.sharding.assigner import Assigner
from engine.runtime.sharding.labels import MEMBER_LABEL, SHARD_LABEL, owner_of
from engine.runtime.sharding.leading import Leadership
from engine.runtime.sharding.leases import LeaseWatch
from engine.runtime.sharding.member import ShardMember
from engine.runtime.sharding.ring import member_name
from engine.runtime.watch_health import failing_watches
from engine.runtime.watches import WATCH_TIMEOUT

LOG = logging.getLogger("engine.operator")

SHUTDOWN_TIMEOUT = 30.0
"""Seconds running passes get to finish after a stop signal."""


@dataclass(frozen=True)
class Options:
    """Everything ``engine run`` is told; the defaults are the flags' defaults."""

    rules: Path = Path("rules")
    templates: Path | None = None
    kubeconfig: Path | None = None
    context: str | None = None
    max_concurrent_reconciles: int = 8
    """Workers: a pass mostly waits on the API server, so several overlap even under the GIL (decision 0011)."""
    clusters_namespace: str = DEFAULT_CLUSTERS_NAMESPACE
    """Where registration Secrets live; "" turns target clusters off."""
    leader_elect: bool = False
    leader_election_namespace: str = "c5c3-system"
    leader_election_id: str = "c5c3-operator"
    leader_election_identity: str | None = None
    """None: ``<hostname>_<uuid>``."""
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8081"
    log_level: str = "info"
    watch_timeout: float = WATCH_TIMEOUT
    """Seconds one informer watch lasts before it resumes (no flag; tests shorten it)."""
    sharded: bool = False
    """Spread the orders over every replica run so (implies leader election: the leader assigns them)."""
    rules_reload_interval: float = DEFAULT_RELOAD_INTERVAL
    """Seconds between looks at the rule folder for a changed set; 0: never reloaded."""
    cpu_pinning: bool = True
    """Keep the threads on one allowed CPU (``engine.runtime.cpu_pinning``); only in a process of its own."""


def seconds(text: str) -> float:
    """A flag's duration: Go syntax (``15s``, ``500ms``) or plain seconds."""
    try:
        return float(text)
    except ValueError:
        return durations.parse_seconds(text)


@dataclass(frozen=True)
class LoadedRules:
    """The rule set a start linted and compiled, and the fingerprint taken before (a change made meanwhile is
    reloaded at the first poll)."""

    fingerprint: str
    catalog: Catalog


def lint_clean(options: Options, out: TextIO) -> LoadedRules | None:
    """Lint the rule files, keeping what linting compiled; print each error and return None if there is any."""
    from engine.rules.folder import RuleFolder

    folder = RuleFolder(options.rules, options.templates)
    fingerprint = folder.fingerprint()
    errors, catalog = folder.lint_and_load()
    for error in errors:
        print(error, file=out)
    if errors or catalog is None:
        print(f"engine run: {len(errors)} error(s) in the rule files; not starting", file=out)
        return None
    return LoadedRules(fingerprint, catalog)


def management_cluster(options: Options, metrics: Metrics | None = None) -> Cluster:
    """The management cluster: the kubeconfig's context when given, else the pod's service account."""
    from engine.cluster.kube import kube_cluster_from_kubeconfig, kube_cluster_in_pod

    observer = metrics.api_request_observer("") if metrics is not None else None
    if options.kubeconfig is not None:
        return kube_cluster_from_kubeconfig("", options.kubeconfig, context=options.context, on_request=observer)
    return kube_cluster_in_pod("", on_request=observer)


def target_cluster(registration: Registration, metrics: Metrics | None = None,
                   sink: SecretSink | None = None) -> Cluster:
    """A registered cluster's client, from the kubeconfig its Secret holds (untrusted: inline material only);
    its credentials go to ``sink``, so no log line shows them."""
    from engine.cluster.kube import kube_cluster_from_registration

    observer = metrics.api_request_observer(registration.name) if metrics is not None else None
    return kube_cluster_from_registration(registration.name, registration.kubeconfig,
                                          namespaces=registration.namespaces, on_request=observer,
                                          on_secrets=sink.add_all if sink is not None else None)


def bind_endpoints(options: Options) -> list[Endpoint]:
    """Claim the metrics and probe addresses, not serving yet; BindError (none left bound) when one is taken."""
    bound: list[Endpoint] = []
    try:
        for text, name, flag in ((options.metrics_bind_address, "metrics", "--metrics-bind-address"),
                                 (options.health_probe_bind_address, "probes", "--health-probe-bind-address")):
            endpoint = bind(text, name=name, flag=flag)
            if endpoint is not None:
                bound.append(endpoint)
    except BindError:
        for endpoint in bound:
            endpoint.stop()
        raise
    return bound


def scope_by_labels(cluster: Cluster, scopes: LabelScopes, projected: MemberProjections | None = None) -> Cluster:
    """Have a caching cluster keep only labelled objects of the rules' label-scoped kinds (decision 14), and of the
    kinds in ``projected`` a cache of every object cut to the paths the rules read of it (decision 0040), selected
    by label where it says so (decision 0067)."""
    scope = getattr(cluster, "scope_by_labels", None)
    if callable(scope) and scopes:
        scope(scopes)
    project = getattr(cluster, "project_reads", None)
    if callable(project) and projected is not None:
        project(projected.paths, projected.labels, projected.unstamped)
    return cluster


MEMBER_AGENT = re.compile(r" \(member [^)]*\)$")


def name_member(cluster: Cluster, member: str) -> Cluster:
    """Have a cluster's client name the shard member in its User-Agent (``c5c3-order-engine/<version> (member
    <name>)``): an API server's audit log then shows which replica sent each request (a member that rejoined
    under a new name: the new one). A client without one (the in-memory cluster) is left alone."""
    client: Any = getattr(cluster, "api_client", None)
    agent = getattr(client, "user_agent", None)
    if isinstance(agent, str):
        client.user_agent = f"{MEMBER_AGENT.sub('', agent)} (member {member})"
    return cluster


class ScopedEngager:
    """Where registered clusters go: the manager, each client scoped and named as the member is *now*, under the
    lock a rejoin takes to re-scope every engaged client, so no client keeps the scopes of a lapsed name."""

    def __init__(self, operator: Operator) -> None:
        self._operator = operator

    def engage(self, name: str, cluster: Cluster, *, namespaces: Sequence[str] | None = None) -> None:
        operator = self._operator
        with operator.scoping:
            if operator.member is not None:
                name_member(cluster, operator.agent)
            scope_by_labels(cluster, operator.scopes, operator.projected)
            operator.manager.engage(name, cluster, namespaces=namespaces)

    def disengage(self, name: str) -> None:
        self._operator.manager.disengage(name)

    def unusable(self, name: str, why: str) -> None:
        self._operator.manager.unusable(name, why)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop`` (on the main thread only: elsewhere signals cannot be caught).

    The signal's number goes to a pipe as the wakeup fd, written by the interpreter's C handler on whichever thread
    the kernel handed the signal to; a thread of its own reads it, sets ``stop`` and logs. The Python handler does
    nothing: it runs on the main thread only, which may be blocked in ``stop.wait()`` for good when another thread
    took the signal, and wherever it lands it may hold a lock ``stop.set()`` needs (decisions 0079, 0081)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)

    def handler(signum: int, frame: Any) -> None:
        """The wakeup fd carries the signal; a callable handler is what keeps the C handler installed."""

    def relay() -> None:
        try:
            while received := os.read(read_end, 64):
                # The fd hears every signal that has a Python handler, not only these two.
                for signum in [signum for signum in received if signum in STOP_SIGNALS]:
                    stop.set()
                    LOG.info("received %s; stopping", signal.Signals(signum).name)
        finally:
            os.close(read_end)  # the relay owns the read end: no close races a read still under way

    relaying = threading.Thread(target=relay, name="signal relay", daemon=True)
    relaying.start()
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)  # full: a signal is on its way
    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old_handler in previous.items():
            signal.signal(sig, old_handler)
        signal.set_wakeup_fd(previous_fd)  # an enclosing block's pipe again, or none
        os.close(write_end)  # the relay reads the end of the pipe, closes its end and returns
        relaying.join(1)


class Operator:
    """The running operator's parts, built from options and a management cluster."""

    def __init__(
        self,
        options: Options,
        management: Cluster,
        *,
        target_factory: Callable[[Registration], Cluster] = target_cluster,
        metrics: Metrics | None = None,
        rules: LoadedRules | None = None,
    ) -> None:
        """rules: the set ``engine run`` linted already (else the rule folder is loaded here)."""
        from engine.rules.folder import RuleFolder

        self.options = options
        self.management = management
        self.metrics = metrics if metrics is not None else Metrics(CollectorRegistry(), process=True)
        self.registry = self.metrics.registry
        self.clock = PreciseClock()
        folder = RuleFolder(options.rules, options.templates)
        if rules is None:
            rules = LoadedRules(folder.fingerprint(), folder.load())  # fingerprint first: see LoadedRules
        loaded, catalog = rules.fingerprint, rules.catalog
        clusters = ClusterSet(management)
        self.identity = options.leader_election_identity or default_identity()
        self.events = EventRecorder(clusters, clock=self.clock, instance=self.identity, metrics=self.metrics)
        self.scoping = threading.Lock()
        """Held while the clients' scopes follow a rejoined member's new name, and while a cluster is engaged."""
        self.member: ShardMember | None = None
        self.assigner: Assigner | None = None
        self.lease_watch: LeaseWatch | None = None
        """A shard member's watch of the Leases, which its leader election and the assigner read each round."""
        self.agent = ""
        """The member name the clients' User-Agent carries (a shard member's, once it serves under it)."""
        if options.sharded:
            self.member, self.assigner = self._shards(options, catalog, clusters)
            self.lease_watch = LeaseWatch(management, options.leader_election_namespace)
            self.assigner.leases = self.lease_watch.leases
            self.agent = self.member.name
            name_member(management, self.agent)
        self.scopes: LabelScopes = self._label_scopes(catalog)
        self.projected = member_projections(catalog, SHARD_LABEL) if self.member is not None else None
        scope_by_labels(management, self.scopes, self.projected)

        def scoped_target(registration: Registration) -> Cluster:
            target = target_factory(registration)
            if self.member is not None:
                name_member(target, self.agent)
            return scope_by_labels(target, self.scopes, self.projected)

        self.manager: Manager[Any] = Manager(
            catalog, clusters, clock=self.clock, metrics=self.metrics,
            log=logging.getLogger("engine.runtime"), max_concurrent_reconciles=options.max_concurrent_reconciles,
            watch_timeout=options.watch_timeout, events=self.events.record,
            order_selector=self.member.selector if self.member is not None else None,
            run_pass=self.member.passes(run_pass) if self.member is not None else None,
        )
        if self.assigner is not None:
            self.assigner.orders = self.manager.sources.keys_of  # the leader places orders from keys, not objects
            sources = self.manager.sources
            self.assigner.changes = lambda: sources.keys_changes  # a round skips when none changed
        if self.member is not None:
            self.member.namespaces_of = self.manager.watched_namespaces  # a registration's namespaces only
        self.registry.register(OrdersCollector(self.metrics.prefix, self.order_views, self.clock.now))
        self.registry.register(CacheCollector(self.metrics.prefix, self.cached_keys))
        if self.member is not None:
            self.metrics.shard_held_orders.labels(member=self.member.name).set_function(self.held_orders)
        self.reloader = RuleReloader(folder, self.replace_rules, loaded=loaded, metrics=self.metrics,
                                     log=logging.getLogger("engine.rules"),
                                     interval=options.rules_reload_interval)
        self.registrations = (
            Registrations(management, options.clusters_namespace, ScopedEngager(self), scoped_target,
                          metrics=self.metrics)
            if options.clusters_namespace else None
        )
        self.registry.register(FailingWatchesCollector(self.metrics.prefix, self.failing_watches))
        self.leading: threading.Event | None = None
        self.elector: LeaderElector | None = None
        if options.leader_elect or options.sharded:
            leading = self.leading = threading.Event()
            started, stopped = leading.set, leading.clear
            if self.member is not None:  # a shard member keeps the keys-only views only while it leads
                leadership = Leadership(self.manager.sources)
                leading = self.leading = leadership.leading
                started, stopped = leadership.started, leadership.stopped
            self.elector = LeaderElector(
                management,
                LeaseSettings(
                    options.leader_election_namespace, options.leader_election_id,
                    self.identity,
                    lease_duration=options.lease_duration, renew_deadline=options.renew_deadline,
                    retry_period=options.retry_period,
                ),
                clock=self.clock, on_started_leading=started, on_stopped_leading=stopped,
                metrics=self.metrics, watched=self.lease_watch.lease if self.lease_watch is not None else None,
            )
        else:
            self.metrics.set_leader(True)

    def order_views(self) -> list[OrderKindView]:
        """Each order kind of the running rules with the orders its informers last saw, on every cluster: what
        the orders metrics count at scrape time."""
        catalog = self.manager.catalog
        seen: dict[str, list[Any]] = {}
        for informer in self.manager.sources.informers():
            key = f"{informer.api_version}/{informer.kind}"
            if key in catalog and not informer.keys_only:
                seen.setdefault(key, []).extend(informer.cached().values())
        return [OrderKindView(kind.kind, (*kind.conditions.types, kind.conditions.ready_type),
                              kind.conditions.ready_type, kind.conditions.reasons, seen.get(key, []))
                for key, kind in catalog.items()]

    def cached_keys(self) -> CachedKeys:
        """The keys of what each cache holds in full: every cluster client's read caches, the runtime's watches
        (not the keys-only ones), per cluster and kind."""
        for informer in self.manager.sources.informers():
            if not informer.keys_only:
                yield informer.cluster_name, informer.kind, informer.cached().keys()
        for name, cluster in self.manager.clusters:
            held = getattr(cluster, "cached_keys", None)
            for kind, keys in held() if callable(held) else ():
                yield name, kind, keys

    def held_orders(self) -> int:
        """The orders this shard member holds now: those its order watches (selected by its label) last saw
        carrying its label (an order drained away leaves them)."""
        name = self.member.name if self.member is not None else ""
        return sum(1 for view in self.order_views() for order in view.orders if owner_of(order) == name)

    def _shards(self, options: Options, catalog: Any, clusters: ClusterSet) -> tuple[ShardMember, Assigner]:
        """This replica's shard membership (a Lease of its own) and the assigner it runs while leading."""
        def fresh_name() -> str:
            return member_name(self.identity, uuid.uuid4().hex[:6])

        name = fresh_name()
        settings = LeaseSettings(
            options.leader_election_namespace, name, name, lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline, retry_period=options.retry_period,
            labels=((MEMBER_LABEL, "true"),),
        )
        member = ShardMember(clusters, catalog, settings, clock=self.clock, metrics=self.metrics,
                             rename=fresh_name, on_rejoin=self.rejoined, on_serving=self.serving,
                             rules_hash=lambda: short(self.reloader.loaded))
        assigner = Assigner(clusters, catalog, options.leader_election_namespace, clock=self.clock,
                            lease_duration=options.lease_duration, metrics=self.metrics)
        return member, assigner

    def _label_scopes(self, catalog: Catalog) -> LabelScopes:
        """What the clusters' read caches hold of each kind: the rules' label-scoped kinds (decision 14) and, for
        a shard member, of each order kind only its own orders and of its children's kinds only what it stamped
        (decision 0032)."""
        scopes = dict(label_scopes(catalog))
        if self.member is not None:
            scopes.update(shard_scopes(catalog, self.member.selector))
            for kind in catalog.values():
                key = (kind.api_version, kind.kind)
                scopes[key] = (*scopes.get(key, ()), self.member.selector)
        return scopes

    def rejoined(self, lapsed: str, name: str) -> None:
        """The shard member lapsed and rejoins as ``name`` (before its Lease is sought): every client's caches of the
        lapsed name's orders and children are dropped and those of the new name scoped in, the runtime's watches
        select the new name's orders, and the held-orders gauge follows."""
        with self.scoping:
            self.scopes = self._label_scopes(self.manager.catalog)
            for _, cluster in self.manager.clusters:
                scope_by_labels(cluster, self.scopes, self.projected)
            assert self.member is not None
            self.manager.select_orders(self.member.selector)
        with contextlib.suppress(KeyError):
            self.metrics.shard_held_orders.remove(lapsed)
        self.metrics.shard_held_orders.labels(member=name).set_function(self.held_orders)

    def serving(self, name: str) -> None:
        """The shard member starts passes as ``name``: every client's User-Agent names it from now on (a request of
        a pass under a lapsed name, all of which have ended, never carries it)."""
        with self.scoping:
            self.agent = name
            for _, cluster in self.manager.clusters:
                name_member(cluster, name)

    def replace_rules(self, catalog: Catalog) -> None:
        """Serve a reloaded rule set: a shard member first (it may refuse: the next poll tries again) and the
        assigner, then the clusters' caches follow its label scopes, the manager its kinds."""
        if self.member is not None:
            self.member.replace_rules(catalog)
        if self.assigner is not None:
            self.assigner.replace_catalog(catalog)
        scopes = self._label_scopes(catalog)
        projected = member_projections(catalog, SHARD_LABEL) if self.member is not None else None
        if scopes != self.scopes or projected != self.projected:
            self.scopes, self.projected = scopes, projected
            for _, cluster in self.manager.clusters:
                scope_by_labels(cluster, scopes, projected)
        self.manager.replace_catalog(catalog)
        thaw_collector()  # the replaced rules may be among the objects frozen at start-up (decision 0046)

    def ready(self) -> bool:
        """Caches synced: the manager's informers, the registrations, the management client's own cache."""
        if self.registrations is not None and not self.registrations.synced.is_set():
            return False
        has_synced = getattr(self.management, "has_synced", None)
        return self.manager.ready() and (has_synced is None or bool(has_synced()))

    def failing_watches(self) -> dict[str, int]:
        """Cluster name -> how many of its watches are failing now (``engine.runtime.watch_health``)."""
        return failing_watches(self.manager.sources, self.manager.clusters, self.registrations)

    def watching(self) -> bool:
        """/readyz: no watch of the management cluster is failing."""
        return self.failing_watches().get(MANAGEMENT_CLUSTER, 0) == 0

    def serve(self, endpoints: list[Endpoint]) -> list[Endpoint]:
        """Serve /metrics and the probes on the bound endpoints."""
        routes = {
            "metrics": metrics_routes(self.registry),
            "probes": probe_routes({"/healthz": {"ping": lambda: True},
                                    "/readyz": {"caches-synced": self.ready, "watches": self.watching}}),
        }
        return [endpoint.start(routes[endpoint.name]) for endpoint in endpoints]

    def run(self, stop: threading.Event, endpoints: list[Endpoint] | None = None) -> int:
        """Run until ``stop`` is set, then shut down gracefully. ``endpoints``: already bound (else bound
        here first, so an address in use fails before anything else starts). The exit status: 0."""
        endpoints = self.serve(endpoints if endpoints is not None else bind_endpoints(self.options))
        threads: list[threading.Thread] = []
        if self.registrations is not None:
            threads.append(threading.Thread(target=self.registrations.run, args=(stop,),
                                            kwargs={"watch_timeout": self.options.watch_timeout},
                                            name="registrations", daemon=True))
        if self.options.rules_reload_interval > 0:
            threads.append(threading.Thread(target=self.reloader.run, args=(stop,), name="rule reloader",
                                            daemon=True))
        # The Leases are renewed until the workers have stopped, not just until ``stop``: a pass still running
        # after a stop signal finishes under a valid tenure (its writes pass the shard fence, no other replica
        # starts the order meanwhile); they are released below, once nothing reconciles any more.
        renewals = threading.Event()
        renewing: list[threading.Thread] = []
        if self.lease_watch is not None:
            renewing.append(threading.Thread(target=self.lease_watch.run, args=(renewals,), name="shard Lease watch",
                                             daemon=True))
        if self.elector is not None:
            renewing.append(threading.Thread(target=self.elector.run, args=(renewals,), name="leader election",
                                             daemon=True))
        gate, admit = self.leading, None
        if self.member is not None and self.assigner is not None and self.leading is not None:
            gate, admit = self.member.active, self.member.admit
            renewing.append(threading.Thread(target=self.member.run, args=(renewals,), name="shard membership",
                                             daemon=True))
            threads.append(threading.Thread(target=self.assigner.run,
                                            args=(stop, self.leading, self.options.retry_period),
                                            name="shard assigner", daemon=True))
        reads_done = threading.Event()
        reads_checked = readonly.guard(reads_done)  # tests only (ENGINE_CHECK_READS=1): a changed read ends the process
        events_done = threading.Event()
        recorder = threading.Thread(target=self.events.run, args=(events_done,), name="event recorder", daemon=True)
        recorder.start()
        for thread in renewing + threads:
            thread.start()
        LOG.info("operator started: %d kind(s), %d worker(s)%s", len(self.manager.catalog),
                 self.options.max_concurrent_reconciles,
                 ", leader election on" if self.elector is not None else "")
        try:
            self.manager.run(stop, shutdown_timeout=SHUTDOWN_TIMEOUT, leading=gate, admit=admit)
        finally:
            stop.set()
            reads_done.set()
            if reads_checked is not None:
                reads_checked.join()  # its last check sees every pass: the workers have stopped
            renewals.set()
            for thread in renewing:
                thread.join(5)
            if self.member is not None:
                self.member.leave()  # the workers have stopped: hand the orders back (not a lapsed tenure's)
            if self.registrations is not None:
                self.registrations.stop()
            for thread in threads:
                thread.join(5)
            events_done.set()  # the recorder writes what the last passes queued, then ends
            recorder.join(5)
            if self.elector is not None:
                self.elector.release()
            for endpoint in endpoints:
                endpoint.stop()
            stop_client = getattr(self.management, "stop", None)
            if callable(stop_client):
                stop_client()
            LOG.info("operator stopped")
        return 0


YOUNG_COLLECTION_THRESHOLD = 20_000
"""The collector's first-generation threshold in a process that runs only the operator (Python's default: 700):
the caches and the passes allocate many objects that live on, each young collection walked every one of them."""


def tune_collector() -> None:
    """In a process that runs only the operator, once it has started (decision 0046): the start-up objects (the
    compiled rules, the clients, the modules) are collected once, then frozen out of the cyclic collector, which
    no longer walks them in every full collection, and young collections run less often. A rule reload
    unfreezes them (``thaw_collector``): the rules it replaces become collectable again."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])


def thaw_collector() -> None:
    """Objects frozen at start-up (if any) go back to the collector's oldest generation: a rule reload replaced
    some of them."""
    gc.unfreeze()


def run(
    options: Options,
    *,
    management: Cluster | None = None,
    stop: threading.Event | None = None,
    out: TextIO | None = None,
    target_factory: Callable[[Registration], Cluster] | None = None,
    endpoints: list[Endpoint] | None = None,
    own_process: bool = False,
    rules: LoadedRules | None = None,
) -> int:
    """``engine run``: 0 after a graceful stop, 1 when the rules do not lint clean, an address is taken or
    the cluster is unusable. ``endpoints``: the metrics and probe addresses, bound by the caller already.
    own_process: the process runs nothing else (the command line), so the garbage collector is tuned for it
    once the operator has started (``tune_collector``). ``rules``: the set the caller linted already
    (``lint_clean``), else they are linted here."""
    out = out if out is not None else sys.stdout
    rules = rules if rules is not None else lint_clean(options, out)
    if rules is None:
        return _unbind(endpoints or [])
    sink = SecretSink()
    token = current_sink.set(sink)  # workers copy this context: every generated password reaches the log filter
    try:
        return _run_with_sink(options, sink, rules, management=management, stop=stop, target_factory=target_factory,
                              endpoints=endpoints, own_process=own_process)
    finally:
        current_sink.reset(token)  # a caller running the operator in-process gets its own context back


def _run_with_sink(options: Options, sink: SecretSink, rules: LoadedRules, *, management: Cluster | None,
                   stop: threading.Event | None, target_factory: Callable[[Registration], Cluster] | None,
                   endpoints: list[Endpoint] | None, own_process: bool = False) -> int:
    logs.configure(options.log_level, sink=sink)
    from engine.cluster.kube import sweep_discovery_dirs, sweep_private_dirs

    swept = [*sweep_private_dirs(), *sweep_discovery_dirs()]
    for path in swept:
        LOG.debug("removed %s (client keys or API discovery cache of an operator that did not stop)", path)
    if swept:
        LOG.info(f"cleaned up {len(swept)} temporary folder{'s' if len(swept) > 1 else ''} left by an earlier "
                 "engine run that was killed before it could clean up (nothing to do)")
    stop = stop if stop is not None else threading.Event()
    if endpoints is None:
        try:
            endpoints = bind_endpoints(options)
        except BindError as exc:
            LOG.error("cannot start: %s", exc)
            return 1
    metrics = Metrics(CollectorRegistry(), process=True)
    try:
        cluster = management if management is not None else management_cluster(options, metrics)
    except Exception as exc:
        LOG.error("cannot reach the management cluster: %s", exc)
        return _unbind(endpoints)
    try:
        operator = Operator(options, cluster, metrics=metrics, rules=rules,
                            target_factory=target_factory or functools.partial(target_cluster, metrics=metrics,
                                                                                   sink=sink))
    except ValueError as exc:  # leader election durations out of order
        LOG.error("cannot start: %s", exc)
        return _unbind(endpoints)
    if own_process:
        tune_collector()
        if options.cpu_pinning:
            pin_to_one_cpu(stop)
    with stop_on_signals(stop):
        return operator.run(stop, endpoints)


def pin_to_one_cpu(stop: threading.Event) -> None:
    """Keep this process's threads on one of its allowed CPUs, chosen now and looked at again until ``stop``
    (decision 0073); nothing where only one CPU is allowed."""
    pinning = pinning_for_this_process()
    if pinning is None:
        return
    pinning.start(stop)
    threading.Thread(target=pinning.run, args=(stop,), name="cpu pinning", daemon=True).start()


def _unbind(endpoints: list[Endpoint]) -> int:
    """Release addresses bound for a start that did not happen; the exit status of a failed start."""
    for endpoint in endpoints:
        endpoint.stop()
    return 1
