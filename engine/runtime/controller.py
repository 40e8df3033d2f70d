"""The controller: runs passes off the work queue and applies the one outcome switch.

Queue policy lives in one place, as in controller-runtime's ``reconcileHandler``:

- the pass ended in an error: retry with backoff (``add_rate_limited``), unless it
  is a ``TerminalError``, which no retry can fix: log it, count it, ``forget``;
- it asked to come back (``requeue_after``): ``forget`` the backoff, ``schedule`` it
  (replacing any timer an earlier pass set: this pass saw the latest state);
- otherwise: ``forget``, and drop any pending timer; the next event brings it back.

Metrics and logs of a pass are recorded here too, never in the pass itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Literal

from engine.metrics import Metrics, PassResult
from engine.outcome import EventNote, Request, Result, TerminalError
from engine.runtime.echoes import CURRENT_PASS, Echoes
from engine.runtime.kinds import Log
from engine.runtime.queue import ADDED, GATE, ShutDown, WorkQueue

PassRunner = Callable[[Request], Result]
"""Runs one pass of one order (the manager binds the kind, clusters and clock)."""
EventSink = Callable[[Request, EventNote], None]
"""Takes a pass's refusal or failure to record as an Event on the order; must return at once."""
Admission = Literal["run", "skip", "retry"]
Admit = Callable[[Request], Admission]
"""Asked before each pass in threaded mode (sharding): run it, skip it (timers dropped), or retry with backoff."""


class Controller:
    """Workers over one queue: take a request, run its pass, apply the outcome switch, mark it done."""

    def __init__(
        self,
        queue: WorkQueue,
        run: PassRunner,
        *,
        metrics: Metrics,
        log: Log,
        recover: bool = False,
    ) -> None:
        """recover=True: a pass that raises (a bug) is logged and retried with backoff, as a
        production operator must survive it; False (tests, scenarios): the exception propagates."""
        self.queue = queue
        self._run = run
        self._metrics = metrics
        self._log = log
        self.recover = recover
        self.events: EventSink | None = None
        """Where a pass's Event note goes (the operator's recorder); None: nowhere (tests, scenarios)."""
        self.echoes: Echoes | None = None
        """Threaded mode: the ledger told of each pass, so events its order gets meanwhile that the pass
        already saw do not run it again; None: every such event does (deterministic runs)."""
        self._active = 0
        self._active_lock = threading.Lock()

    def handle(self, request: Request, result: Result) -> PassResult:
        """The outcome switch: record the pass, then queue the order again as its result asks."""
        try:
            self._metrics.record_outcomes(result.outcomes)
            if result.event is not None and self.events is not None:
                self.events(request, result.event)
        finally:  # a failing Event sink or metric (a bug) is raised, but never costs the order its requeue
            outcome = self._queue_again(request, result)
        self._metrics.record_pass(outcome)
        return outcome

    def _queue_again(self, request: Request, result: Result) -> PassResult:
        """The queue policy of the module's docstring, for one pass's result."""
        if result.error is not None:
            if isinstance(result.error, TerminalError):
                self._log.error("%s: terminal error, not retried: %s", request, result.error)
                self.queue.forget(request)
                outcome = PassResult.TERMINAL_ERROR
            else:
                delay = self.queue.add_rate_limited(request)
                self._log.warning("%s: %s (retry in %s)", request, result.error, delay)
                outcome = PassResult.ERROR
        elif result.requeue_after is not None:
            self.queue.forget(request)
            self.queue.schedule(request, result.requeue_after)
            outcome = PassResult.REQUEUE_AFTER
        else:
            self.queue.forget(request)
            self.queue.schedule(request, None)
            outcome = PassResult.SUCCESS
        return outcome

    def run_pass(self, request: Request) -> Result:
        """Run one pass of ``request`` now and apply the outcome switch; the queue entry is untouched."""
        self._note_wake(request)
        self._set_active(+1)
        passing = CURRENT_PASS.set(request)
        echoes = self.echoes
        reading = echoes.begin(request) if echoes is not None else None
        try:
            try:
                result = self._run(request)
            except Exception as exc:
                if not self.recover:
                    raise
                self._log.exception("%s: the pass raised", request)
                result = Result(error=exc)
        finally:
            if echoes is not None and reading is not None:
                echoes.end(reading)
            CURRENT_PASS.reset(passing)
            self._set_active(-1)
        self.handle(request, result)
        return result

    def process_next(self) -> Request | None:
        """Deterministic mode: run the next waiting request's pass; None when nothing waits."""
        request = self.queue.pop_ready()
        if request is None:
            return None
        try:
            self.run_pass(request)
        finally:
            self.queue.done(request)
        return request

    def work(self, stop: threading.Event, *, poll: float = 0.5, gate: threading.Event | None = None,
             admit: Admit | None = None) -> None:
        """Threaded mode: one worker's loop, until ``stop`` is set or the queue shuts down.

        gate: passes start only while it is set (the leader election's "leading"); a request
        taken just as it closes goes back to the queue untouched.
        admit: asked in the worker slot before each pass, so nothing else of that request runs meanwhile."""
        while not stop.is_set():
            if gate is not None and not gate.wait(poll):
                continue
            try:
                request = self.queue.get(timeout=poll)
            except ShutDown:
                return
            if request is None:
                continue
            if gate is not None and not gate.is_set():
                self.queue.add(request, GATE)  # processing: marked dirty, queued again by done()
                self.queue.done(request)
                continue
            if admit is not None and not self._admitted(admit, request):
                continue
            try:
                self.run_pass(request)
            except Exception:  # recover=False in threaded mode: still never kill the worker silently
                self._log.exception("%s: the pass raised", request)
            finally:
                self.queue.done(request)

    def _admitted(self, admit: Admit, request: Request) -> bool:
        """Ask ``admit``; unless it says run, the request is done here (a retry is queued with backoff).

        Its writes are the order's as a pass's are (``CURRENT_PASS``): a shard member's take-over relabels the
        order's children before the pass, which reads them; their echoes would only wake it for a second pass."""
        admitting = CURRENT_PASS.set(request)
        try:
            verdict = admit(request)
        except Exception:  # an admission bug must not kill the worker: try again later
            self._log.exception("%s: admission failed", request)
            verdict = "retry"
        finally:
            CURRENT_PASS.reset(admitting)
        if verdict == "run":
            return True
        if verdict == "retry":
            self.queue.add_rate_limited(request)
        else:
            self.queue.forget(request)
            self.queue.schedule(request, None)
        self.queue.done(request)
        return False

    def _note_wake(self, request: Request) -> None:
        """Count the pass by what queued it; at debug level, log that and how long ago it came."""
        handed = self.queue.wake_of(request)
        wake = handed[0] if handed is not None else ADDED
        self._metrics.record_wake(wake.cause, wake.kind)
        if handed is not None and self._log.isEnabledFor(logging.DEBUG):
            waited = (self.queue.clock.now() - handed[1]).total_seconds()
            self._log.debug("%s: pass woken by %s%s %.3f s ago", request, wake.cause,
                            f" of {wake.kind}" if wake.kind else "", waited,
                            extra={"request": str(request), "wake": wake.cause, "wake_kind": wake.kind,
                                   "waited": round(waited, 3)})

    def _set_active(self, delta: int) -> None:
        with self._active_lock:
            self._active += delta
            self._metrics.active_workers.set(self._active)


def default_log() -> logging.Logger:
    return logging.getLogger("engine.runtime")
