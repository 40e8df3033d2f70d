"""The manager: one queue, one controller and the event sources of every engaged cluster.

It runs the same way in two modes: **deterministic** (``engine test``, ``engine demo``: one thread, a simulated
clock, nothing happens unless asked, so the same calls run the same passes in the same order) and **threaded**
(``engine run``: a thread per informer and ``max_concurrent_reconciles`` workers on the real clock). One code path
for both is what lets scenarios test the runtime production runs. ``Manager`` says how each mode is driven, how
errors back off and how a rule reload swaps the catalog between passes.
"""

from __future__ import annotations

import collections
import contextvars
import datetime as dt
import logging
import threading
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any, Generic, Protocol, TypeVar, cast, runtime_checkable

from engine.clock import Clock
from engine.cluster.api import MANAGEMENT_CLUSTER, Cluster
from engine.cluster.registry import ClusterSet
from engine.metrics import Metrics
from engine.outcome import Request, Result
from engine.reconcile.memo import ValueMemos, remembering
from engine.runtime.controller import Admit, Controller, EventSink, default_log
from engine.runtime.echoes import Echoes
from engine.runtime.kinds import Log, OrderKind, RunPass
from engine.runtime.queue import COALESCE, TokenBucket, Wake, WorkQueue
from engine.runtime.watches import RECHECK_INTERVAL, WATCH_TIMEOUT, Sources

DEFAULT_MAX_PASSES = 1000
"""``settle``'s bound on passes at one instant."""

K = TypeVar("K", bound=OrderKind)


@runtime_checkable
class MovableClock(Clock, Protocol):
    """A clock that can be moved forward (the simulated clock); ``advance`` needs one."""

    def set(self, moment: dt.datetime) -> None: ...


class SettleLoop(RuntimeError):
    """``settle`` ran more passes at one instant than allowed: some order keeps waking itself."""

    def __init__(self, request: Request, runs: int, passes: int, at: dt.datetime) -> None:
        super().__init__(
            f"more than {passes} passes at {at.isoformat()} without settling: "
            f"{request} ran {runs} times (it keeps being queued again)"
        )
        self.request = request
        self.runs = runs
        self.passes = passes
        self.at = at


class _MergingAdapter(logging.LoggerAdapter[Log]):
    """Adds the request to every record and keeps the call's own ``extra`` (order, kind, cluster, ...);
    the stock adapter of Python 3.11 would drop it."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(self.extra or {}), **(kwargs.get("extra") or {})}
        return msg, kwargs


def _default_run_pass() -> RunPass[K]:
    # Imported when needed: the pass is the reconcile layer's, the runtime only calls it.
    from engine.reconcile.run import run_pass

    return cast(RunPass[K], run_pass)


class Manager(Generic[K]):
    """Watches, queue, workers and timers for every kind in a catalog, on every engaged cluster.

    It runs the same way in two modes.

    **Deterministic** (``engine test``, ``engine demo``): one thread, a simulated clock, nothing happens unless asked.
    ``start`` lists every watched kind and queues every order present; ``settle`` runs passes until nothing is due at
    the current instant; ``advance`` moves the clock timer by timer, settling at each instant a timer fires;
    ``reconcile`` runs one pass now. Given the same calls, the same passes run in the same order (FIFO queue, timers
    by due time then by the order they were set, informers in a fixed order).

    **Threaded** (``engine run``): ``run(stop)`` starts one thread per informer and ``max_concurrent_reconciles``
    workers on the real clock, until ``stop`` is set.

    **Backoff.** A pass that ends in an error is retried after a per-order delay of 5 ms, doubling with each
    consecutive failure (5 ms, 10 ms, 20 ms, ...) up to 1000 s; a pass that does not fail resets it. In threaded mode
    an overall token bucket (10 retries per second, burst 100) may delay retries further. In deterministic mode the
    delay is simulated time, so ``settle`` at one instant never spins on a failing order, and ``advance`` retries it
    when its delay is up. A ``TerminalError`` (the rule file is wrong) is logged and counted, not retried.

    **Rule reload.** ``replace_catalog`` swaps the catalog between passes: a pass takes its kind once, when it starts,
    so it ends on the rules it began with; the watches follow and every order is queued again (decision 0023).
    """

    def __init__(
        self,
        catalog: Mapping[str, K],
        clusters: ClusterSet,
        *,
        clock: Clock,
        metrics: Metrics,
        log: Log | None = None,
        run_pass: RunPass[K] | None = None,
        max_concurrent_reconciles: int = 1,
        watch_timeout: float = WATCH_TIMEOUT,
        recheck_interval: float = RECHECK_INTERVAL,
        events: EventSink | None = None,
        order_selector: str | None = None,
    ) -> None:
        """run_pass: None for ``engine.reconcile.run.run_pass`` (tests inject a fake).
        watch_timeout, recheck_interval: threaded mode only (seconds).
        events: where refusals and failures go to be recorded as Events (None: not recorded).
        order_selector: watch only the orders this label selector matches (a shard member's); None: all."""
        if max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be at least 1")
        self.catalog = catalog
        self.clusters = clusters
        self.clock = clock
        self.metrics = metrics
        self.log: Log = log if log is not None else default_log()
        self._run_pass: RunPass[K] = run_pass if run_pass is not None else _default_run_pass()
        self.max_concurrent_reconciles = max_concurrent_reconciles
        self._watch_timeout = watch_timeout
        self._recheck = recheck_interval
        self.value_memos = ValueMemos()
        """Each order's stable values from its earlier passes (decision 52): this manager's clusters' only."""
        self.queue = WorkQueue(clock, metrics=metrics)
        self.controller = Controller(self.queue, self._pass, metrics=metrics, log=self.log)
        self.controller.events = events
        self.sources = Sources(catalog, self.queue, log=self.log, metrics=metrics)
        self.sources.order_selector = order_selector
        self.last_result: Result | None = None
        """The Result of the last pass run by ``reconcile``."""
        self._started = False
        self._threaded = False
        self._synced: set[int] = set()
        self._namespaces: dict[str, tuple[str, ...] | None] = {}

    # -- deterministic ----------------------------------------------------------

    def start(self) -> None:
        """Build the sources of every engaged cluster and pump once: every order present is queued."""
        self._build()
        self.sources.pump()

    def settle(self, max_passes: int = DEFAULT_MAX_PASSES) -> int:
        """Run passes until nothing is due now: no queued request, no timer due at this instant.

        Fires due timers and pumps events before each pass. Raises SettleLoop, naming the
        order that ran most, instead of running pass ``max_passes + 1``. Returns passes run.
        """
        self._require_started()
        runs: collections.Counter[Request] = collections.Counter()
        passes = 0
        while True:
            self.queue.fire_due()
            self.sources.pump()
            if self.queue.depth == 0:
                return passes
            if passes >= max_passes:
                looping, count = runs.most_common(1)[0] if runs else (self.queue.waiting()[0], 0)
                raise SettleLoop(looping, count, max_passes, self.clock.now())
            ran = self.controller.process_next()
            if ran is not None:
                runs[ran] += 1
                passes += 1

    def advance(self, delta: dt.timedelta, max_passes: int = DEFAULT_MAX_PASSES) -> int:
        """Settle, then move the clock to now+delta timer by timer, settling at each instant a
        timer fires and at the end. Returns passes run."""
        if delta < dt.timedelta(0):
            raise ValueError(f"cannot advance by a negative duration ({delta})")
        clock = self._movable_clock()
        passes = self.settle(max_passes)
        end = clock.now() + delta
        while (due := self.queue.next_timer()) is not None and due <= end:
            clock.set(max(due, clock.now()))
            passes += self.settle(max_passes)
        clock.set(end)
        return passes + self.settle(max_passes)

    def reconcile(self, request: Request, *, pass_done: Callable[[], object] | None = None) -> Result:
        """Run one pass of ``request`` now, whatever the queue holds; its result goes through the
        outcome switch like any pass's. The request's queued entry, if any, stays.

        pass_done: called between the pass and the pump of the watches that follows it, so a
        caller counting calls can tell the pass's own from the watches the runtime re-opens."""
        self._require_started()
        result = self.controller.run_pass(request)
        self.last_result = result
        if pass_done is not None:
            pass_done()
        self.sources.pump()
        return result

    # -- clusters ---------------------------------------------------------------

    def watched_namespaces(self, cluster: str) -> tuple[str, ...] | None:
        """The namespaces watched on an engaged cluster (its registration's); None: every namespace."""
        return self._namespaces.get(cluster)

    def engage(self, name: str, cluster: Cluster, *, namespaces: Sequence[str] | None = None) -> None:
        """Add (or replace) a target cluster: build its sources, list it and queue its orders.

        namespaces: watch only these namespaces there (a registration's); None: every namespace."""
        self.clusters.engage(name, cluster)
        self._namespaces[name] = tuple(namespaces) if namespaces is not None else None
        if not self._started:
            return
        self.sources.add_cluster(name, self.clusters.resolve(name), self._namespaces[name])
        if not self._threaded:
            self.sources.pump(name)

    def disengage(self, name: str) -> None:
        """Remove a target cluster and its sources; its queued requests are dropped by their pass."""
        self.clusters.disengage(name)
        self._namespaces.pop(name, None)
        self.sources.remove_cluster(name)

    def unusable(self, name: str, why: str) -> None:
        """A registration names a cluster that cannot be engaged: registered, not reachable, no sources."""
        self.disengage(name)
        self.clusters.unusable(name, why)

    # -- shards -----------------------------------------------------------------

    def select_orders(self, selector: str) -> None:
        """Run the orders this label selector matches from now on (a shard member that rejoined under a new name):
        the watches of the old selector close and what they held is dropped, the new one's open and queue what they
        list; the stable values remembered of earlier passes are forgotten. Requests still queued for the old
        selector's orders are skipped by the member's admission."""
        self.value_memos = ValueMemos()
        self.sources.reselect(selector)
        if self._started and not self._threaded:
            self.sources.pump()

    # -- rules ------------------------------------------------------------------

    def replace_catalog(self, catalog: Mapping[str, K]) -> int:
        """Serve a reloaded rule set: a pass takes its kind from the catalog once, when it starts, so
        passes running now finish on the old rules and every later pass uses the new ones; the watches
        follow the new set and every order is queued again (its next pass applies the new rules).
        Returns the orders queued."""
        self.catalog = catalog
        self.sources.replace_catalog(catalog)
        if not self._started:
            return 0
        if not self._threaded:
            self.sources.pump()
        return self.sources.requeue_orders()

    # -- threaded ---------------------------------------------------------------

    def run(self, stop: threading.Event, *, shutdown_timeout: float = 30.0,
            leading: threading.Event | None = None, admit: Admit | None = None) -> None:
        """Run the operator until ``stop`` is set: informer threads, worker threads, then a
        graceful stop (no new passes; running ones finish, up to ``shutdown_timeout`` seconds).

        leading: passes start only while it is set (leader election); informers run regardless,
        so a follower's caches are warm when it takes over. Workers run in a copy of the caller's
        context, so context variables it set (the secret sink) reach every pass.
        admit: asked before each pass (a shard member's ownership check and drain)."""
        self._threaded = True
        self.queue.rate_limiter.bucket = TokenBucket()
        self.queue.coalesce = COALESCE
        self.controller.recover = True
        self.sources.recover = True
        echoes = Echoes(lambda request, kind: self.queue.add(request, Wake("held", kind)))
        self.sources.echoes = self.controller.echoes = echoes
        self.sources.defer_unused = True
        self._build()
        self.sources.start(watch_timeout=self._watch_timeout, recheck=self._recheck)
        halt = threading.Event()
        workers = [
            threading.Thread(
                target=contextvars.copy_context().run, args=(self.controller.work, halt),
                kwargs={"gate": leading, "admit": admit}, name=f"worker {n}", daemon=True,
            )
            for n in range(self.max_concurrent_reconciles)
        ]
        for worker in workers:
            worker.start()
        self.log.info("started %d worker(s) on %d informer(s)", len(workers), len(self.sources.informers()))
        try:
            stop.wait()
        finally:
            halt.set()
            self.queue.shutdown()
            for worker in workers:
                worker.join(shutdown_timeout / len(workers))
            self.sources.stop()
            self.log.info("stopped")

    def ready(self) -> bool:
        """Whether the management cluster's caches have synced: each of its informers has listed
        once (or found its kind unserved). Target clusters never hold readiness back."""
        if not self._started:
            return False
        # A shard leader's keys-only views open with its term, the watches an order kind needs with its first order
        # (their reads wait for their first list): they hold no probe back.
        management = [i for i in self.sources.informers(MANAGEMENT_CLUSTER) if not i.keys_only and not i.on_demand]
        for informer in management:
            if informer.listed:
                self._synced.add(id(informer))
        return all(
            id(i) in self._synced or not self._serves(i.api_version, i.kind) for i in management
        )

    # -- internals --------------------------------------------------------------

    def _serves(self, api_version: str, kind: str) -> bool:
        try:
            return self.clusters.management.serves(api_version, kind)
        except Exception:  # an unreachable cluster is not ready
            return True

    def _build(self) -> None:
        if self._started:
            return
        self._started = True
        for name, cluster in self.clusters:
            self.sources.add_cluster(name, cluster, self._namespaces.get(name))

    def _pass(self, request: Request) -> Result:
        kind = self.catalog.get(request.kind)
        if kind is None:
            self.log.error("%s: no rules for kind %r; dropped", request, request.kind)
            return Result()
        log = _MergingAdapter(self.log, {"request": str(request)})
        with remembering(self.value_memos):
            return self._run_pass(kind, request, clusters=self.clusters, clock=self.clock, log=log)

    def _movable_clock(self) -> MovableClock:
        if not isinstance(self.clock, MovableClock):
            raise TypeError("advance needs a clock that can be moved (offline.clock.SimulatedClock)")
        return self.clock

    def _require_started(self) -> None:
        if not self._started:
            raise RuntimeError("the manager is not started: call start() first")
