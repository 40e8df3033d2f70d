"""The work queue: order names waiting for a pass, with timers and per-order backoff.

It follows client-go's workqueue, because its guarantees are what make a level-based controller safe: a request
waits at most once, one pass per order runs at a time (an add during a pass queues it again after), timers run on
the injected clock, and errors back off as controller-runtime's default limiter does. On top of those it serves
orders that had a pass before ahead of first passes without starving new orders (decision 0011), coalesces the
wakes that echo a pass's writes (threaded mode), and remembers why each request waits. ``WorkQueue`` states each
guarantee; FIFO order within each line and timers that fire in the order they were set make a single-threaded run
reproducible.
"""

from __future__ import annotations

import datetime as dt
import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.clock import Clock
from engine.metrics import Metrics
from engine.outcome import Request

BASE_DELAY = dt.timedelta(milliseconds=5)
MAX_DELAY = dt.timedelta(seconds=1000)
BUCKET_QPS = 10.0
BUCKET_BURST = 100
SEEN_LIMIT = 100_000
"""Requests remembered as having had a pass (the oldest is forgotten first; it only loses its priority)."""
FIRST_PASS_EVERY = 10
"""While first passes wait, every this many hand-outs one is a first pass (the rest are returning requests)."""
COALESCE = dt.timedelta(milliseconds=50)
"""``engine run``'s window after a pass in which events for the same order are gathered into one pass."""


@dataclass(frozen=True)
class Wake:
    """What queued a request: ``cause`` (``event``, ``requeue``, ``retry``, ``held``, ``gate``, ``added``) and, for
    an event, the kind of the object whose watch event it was."""

    cause: str
    kind: str = ""


ADDED = Wake("added")
"""A caller that names no cause (tests, tools)."""
REQUEUE = Wake("requeue")
"""The timer a pass asked for (``requeue_after``: a wait's re-check)."""
RETRY = Wake("retry")
"""The backoff after a pass (or an admission) that failed."""
GATE = Wake("gate")
"""Handed out just as the leadership (or shard tenure) gate closed: put back."""


@dataclass
class TokenBucket:
    """An overall limit on retries (golang.org/x/time/rate semantics: reserve a token, wait if in debt)."""

    qps: float = BUCKET_QPS
    burst: int = BUCKET_BURST
    monotonic: Callable[[], float] = time.monotonic
    _tokens: float = field(init=False)
    _last: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._tokens = float(self.burst)

    def reserve(self) -> dt.timedelta:
        """Take one token; the wait until it is really there (zero while the burst lasts)."""
        now = self.monotonic()
        if self._last is not None:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return dt.timedelta(seconds=max(0.0, -self._tokens / self.qps))


@dataclass
class RateLimiter:
    """Per-request exponential backoff, optionally combined (max) with an overall token bucket."""

    base: dt.timedelta = BASE_DELAY
    cap: dt.timedelta = MAX_DELAY
    bucket: TokenBucket | None = None
    _failures: dict[Request, int] = field(default_factory=dict)

    def when(self, request: Request) -> dt.timedelta:
        """The delay before this retry; counts one more failure of ``request``."""
        failures = self._failures.get(request, 0)
        self._failures[request] = failures + 1
        # 2**failures overflows a timedelta long before the cap matters; stop doubling at the cap.
        delay = self.cap if failures >= 40 else min(self.base * (2**failures), self.cap)
        if self.bucket is not None:
            delay = max(delay, self.bucket.reserve())
        return delay

    def forget(self, request: Request) -> None:
        self._failures.pop(request, None)

    def failures(self, request: Request) -> int:
        return self._failures.get(request, 0)


class ShutDown(Exception):
    """The queue is shutting down; workers stop."""


class WorkQueue:
    """A keyed, de-duplicating work queue with timers and backoff; thread-safe.

    It follows client-go's workqueue, because its guarantees are what make a level-based controller safe:

    - **De-duplicated.** A request waits in the queue at most once; adding it again while it waits changes nothing.
    - **One pass per order at a time.** A request handed out (``get``/``pop_ready``) is *processing* until ``done``.
      Adding it meanwhile marks it dirty; ``done`` queues it again, so the next pass sees whatever changed during this
      one, and no two workers ever hold the same order.
    - **Timers on the injected clock.** ``add_after`` sets a timer; pending timers of one request collapse to the
      earliest; ``schedule`` replaces them (a pass that did not fail supersedes the timers earlier passes set). In
      deterministic mode nothing fires by itself: ``fire_due`` moves the timers due at ``clock.now()`` into the queue
      and ``next_timer`` says when the next one is, so a simulated clock drives retries. In threaded mode ``get``
      fires due timers while it waits.
    - **Backoff for errors.** ``add_rate_limited`` delays by controller-runtime's default limiter: per request 5 ms
      doubling on each failure up to 1000 s (5 ms, 10 ms, 20 ms, ...; ``forget`` resets it), and, when a token bucket
      is installed (threaded mode only: 10 per second, burst 100), the larger of that and the bucket's delay.
      Deterministic runs have no bucket, so a retry's time depends only on the order's own failures.

    - **Returning orders first.** A request that has had a pass before waits in the *returning* line, which is always
      served before the *first-pass* line of requests never handed out. When N orders are created at once, each
      order's later passes (the requeues after its own writes, the events of its children) run as soon as they are due
      instead of behind the other orders' first passes, so orders become Ready one after another rather than all at
      the end. The queue remembers the last ``SEEN_LIMIT`` requests it handed out.
    - **New orders are not starved.** While first passes wait, at most ``FIRST_PASS_EVERY - 1`` returning requests are
      handed out in a row: the next one is a first pass. A steady stream of returning work (thousands of orders
      re-checking on their timers during an outage of what they wait for) still lets new orders in, and the share is
      smaller than an order's own passes (about five), so a burst of new orders still finishes the orders it started
      before starting most of the rest.

    - **Coalescing after a pass (threaded mode).** With ``coalesce`` set, an order woken less than ``coalesce`` after
      its pass ended waits until that much time has passed: the watch events echoing the pass's own writes (a child
      created, another deleted, a third applied) arrive a few milliseconds apart and become one pass instead of two or
      three. ``engine run`` sets 50 ms; deterministic runs keep 0, so their passes are unchanged.

    - **Why each request waits.** Every add names its cause (a ``Wake``: a watch event and the kind of its object, a
      pass's requeue, a retry after an error, an event held during the order's previous pass); the first cause since
      the request was last handed out, and when it came, are kept until the hand-out (``wake_of``), so the controller
      counts passes by cause and logs each one's (a coalesced event keeps its cause through the window's timer).

    FIFO order within each line, and timers that fall due together fire in the order they were set, so a
    single-threaded run is reproducible.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        rate_limiter: RateLimiter | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._clock = clock
        self.rate_limiter = rate_limiter or RateLimiter()
        self._metrics = metrics
        self._cond = threading.Condition()
        self._returning: deque[Request] = deque()
        """The returning line: requests that have had a pass before."""
        self._first: deque[Request] = deque()
        """The first-pass line: requests never handed out (served only when no returning one waits)."""
        self._returning_streak = 0
        """Returning requests handed out in a row while a first pass waited."""
        self._seen: dict[Request, None] = {}
        """Requests handed out before, oldest first (an ordered set, capped at SEEN_LIMIT)."""
        self._dirty: set[Request] = set()
        self._processing: set[Request] = set()
        self._queued_at: dict[Request, dt.datetime] = {}
        self._timers: dict[Request, dt.datetime] = {}
        self._timer_wakes: dict[Request, tuple[Wake, dt.datetime | None]] = {}
        """Each pending timer's cause and, for a coalesced event, when the event came (None: when it fires)."""
        self._wakes: dict[Request, tuple[Wake, dt.datetime]] = {}
        """The first cause since each request was last handed out, and when it came."""
        self._handed: dict[Request, tuple[Wake, dt.datetime]] = {}
        """The cause of each processing request's hand-out (``wake_of``)."""
        self._heap: list[tuple[dt.datetime, int, Request]] = []
        self._seq = itertools.count()
        self._shutting_down = False
        self.coalesce = dt.timedelta(0)
        """Events for an order within this long after its pass ended wait for the window to close."""
        self._ended: dict[Request, dt.datetime] = {}
        """When each order's last pass ended, while coalescing (oldest first, capped at SEEN_LIMIT)."""

    @property
    def clock(self) -> Clock:
        return self._clock

    # -- adding ---------------------------------------------------------------

    def add(self, request: Request, cause: Wake = ADDED) -> None:
        """Queue ``request`` unless it already waits; if it is processing, queue it again at ``done``."""
        with self._cond:
            self._add_locked(request, cause, None)

    def add_after(self, request: Request, delay: dt.timedelta, cause: Wake = REQUEUE) -> None:
        """Queue ``request`` once ``delay`` has passed on the clock; an earlier pending timer wins."""
        if delay <= dt.timedelta(0):
            self.add(request, cause)
            return
        with self._cond:
            if self._shutting_down:
                return
            due = self._clock.now() + delay
            pending = self._timers.get(request)
            if pending is not None and pending <= due:
                return
            self._timers[request] = due
            self._timer_wakes[request] = (cause, None)
            heapq.heappush(self._heap, (due, next(self._seq), request))
            self._cond.notify_all()

    def schedule(self, request: Request, delay: dt.timedelta | None) -> None:
        """Replace ``request``'s pending timer: by one ``delay`` from now, or by none (``None``).

        The controller calls it with the result of a pass that did not fail: that pass saw the
        latest state, so a timer an earlier pass set (a wait's 10 s re-check) is stale."""
        with self._cond:
            self._timers.pop(request, None)  # its heap entry goes stale and is dropped when reached
            self._timer_wakes.pop(request, None)
        if delay is not None:
            self.add_after(request, delay, REQUEUE)

    def add_rate_limited(self, request: Request) -> dt.timedelta:
        """Queue ``request`` after its backoff delay (one more failure); returns the delay."""
        with self._cond:
            delay = self.rate_limiter.when(request)
        self.add_after(request, delay, RETRY)
        return delay

    def forget(self, request: Request) -> None:
        """Reset ``request``'s backoff (its last pass did not fail)."""
        with self._cond:
            self.rate_limiter.forget(request)

    def wake_of(self, request: Request) -> tuple[Wake, dt.datetime] | None:
        """What queued a request now processing, and when (None: not handed out, or handed out unqueued)."""
        with self._cond:
            return self._handed.get(request)

    def failures(self, request: Request) -> int:
        """How many failed passes in a row ``request`` has had since it was last forgotten."""
        with self._cond:
            return self.rate_limiter.failures(request)

    # -- taking ---------------------------------------------------------------

    def pop_ready(self) -> Request | None:
        """The next waiting request, now processing; None if none waits. Never blocks, fires no timer."""
        with self._cond:
            return self._pop_locked() if self._returning or self._first else None

    def get(self, timeout: float | None = None) -> Request | None:
        """Block until a request waits (firing timers as they fall due); None on timeout.

        Raises ShutDown once the queue is shutting down.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._shutting_down:
                    raise ShutDown()
                self._fire_due_locked()
                if self._returning or self._first:
                    return self._pop_locked()
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    return None
                self._drop_stale_locked()
                if self._heap:  # the earliest live timer; the heap keeps this O(log n) with many orders waiting
                    until_timer = (self._heap[0][0] - self._clock.now()).total_seconds()
                    # A clock that ticks coarsely (whole seconds) must not make this spin.
                    until_timer = max(until_timer, 0.01)
                    wait = until_timer if wait is None else min(wait, until_timer)
                self._cond.wait(wait)

    def done(self, request: Request) -> None:
        """End ``request``'s pass; if it was added meanwhile, queue it again (after the coalescing window)."""
        with self._cond:
            self._processing.discard(request)
            self._handed.pop(request, None)
            if self.coalesce > dt.timedelta(0):
                self._ended.pop(request, None)
                self._ended[request] = self._clock.now()
                if len(self._ended) > SEEN_LIMIT:
                    del self._ended[next(iter(self._ended))]
                if request in self._dirty:
                    self._dirty.discard(request)
                    wake, at = self._wakes.pop(request, (ADDED, None))
                    self._add_locked(request, wake, at)
                return
            if request in self._dirty:
                self._enqueue_locked(request)

    # -- timers ---------------------------------------------------------------

    def next_timer(self) -> dt.datetime | None:
        """When the earliest pending timer falls due, or None."""
        with self._cond:
            self._drop_stale_locked()
            return self._heap[0][0] if self._heap else None

    def fire_due(self) -> int:
        """Queue every request whose timer is due at ``clock.now()``; returns how many fired."""
        with self._cond:
            return self._fire_due_locked()

    # -- state ----------------------------------------------------------------

    @property
    def depth(self) -> int:
        """Requests waiting to be handed out (not counting timers or processing ones)."""
        with self._cond:
            return len(self._returning) + len(self._first)

    def waiting(self) -> list[Request]:
        """The waiting requests, in the order they will be handed out."""
        with self._cond:
            returning, first, streak = deque(self._returning), deque(self._first), self._returning_streak
            line: list[Request] = []
            while returning or first:
                take_first = bool(first) and (not returning or streak >= FIRST_PASS_EVERY - 1)
                line.append(first.popleft() if take_first else returning.popleft())
                streak = 0 if take_first or not first else streak + 1
            return line

    def timers(self) -> dict[Request, dt.datetime]:
        """Each request with a pending timer and when it falls due."""
        with self._cond:
            return dict(self._timers)

    def processing(self) -> set[Request]:
        with self._cond:
            return set(self._processing)

    def shutdown(self) -> None:
        """Stop handing out work: blocked and later ``get`` calls raise ShutDown."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    # -- internals (lock held) ------------------------------------------------

    def _add_locked(self, request: Request, cause: Wake, at: dt.datetime | None) -> None:
        """at: when the cause came (None: now)."""
        if self._shutting_down or request in self._dirty:
            return
        if at is None:
            at = self._clock.now()
        if request not in self._processing and self._within_window_locked(request, cause, at):
            return
        self._dirty.add(request)
        self._wakes.setdefault(request, (cause, at))
        if request in self._processing:
            return
        self._enqueue_locked(request)

    def _within_window_locked(self, request: Request, cause: Wake, at: dt.datetime) -> bool:
        """While ``request``'s coalescing window is open, set a timer for its end instead of queueing."""
        ended = self._ended.get(request)
        if ended is None:
            return False
        closes = ended + self.coalesce
        if self._clock.now() >= closes:
            del self._ended[request]
            return False
        pending = self._timers.get(request)
        if pending is None or closes < pending:
            self._timers[request] = closes
            self._timer_wakes[request] = (cause, at)
            heapq.heappush(self._heap, (closes, next(self._seq), request))
            self._cond.notify_all()
        return True

    def _enqueue_locked(self, request: Request) -> None:
        (self._returning if request in self._seen else self._first).append(request)
        self._queued_at.setdefault(request, self._clock.now())
        self._report_depth_locked()
        self._cond.notify()

    def _pop_locked(self) -> Request:
        if self._first and (not self._returning or self._returning_streak >= FIRST_PASS_EVERY - 1):
            request = self._first.popleft()
            self._returning_streak = 0
        else:
            request = self._returning.popleft()
            self._returning_streak = self._returning_streak + 1 if self._first else 0
        self._remember_locked(request)
        self._dirty.discard(request)
        self._processing.add(request)
        wake = self._wakes.pop(request, None)
        if wake is not None:
            self._handed[request] = wake
        queued_at = self._queued_at.pop(request, None)
        if self._metrics is not None and queued_at is not None:
            self._metrics.observe_queue_latency((self._clock.now() - queued_at).total_seconds())
        self._report_depth_locked()
        return request

    def _remember_locked(self, request: Request) -> None:
        self._seen.pop(request, None)
        self._seen[request] = None  # most recent last
        if len(self._seen) > SEEN_LIMIT:
            del self._seen[next(iter(self._seen))]

    def _drop_stale_locked(self) -> None:
        while self._heap:
            due, _, request = self._heap[0]
            if self._timers.get(request) == due:
                return
            heapq.heappop(self._heap)

    def _fire_due_locked(self) -> int:
        now = self._clock.now()
        fired = 0
        while True:
            self._drop_stale_locked()
            if not self._heap or self._heap[0][0] > now:
                return fired
            _, _, request = heapq.heappop(self._heap)
            del self._timers[request]
            wake, at = self._timer_wakes.pop(request, (REQUEUE, None))
            self._add_locked(request, wake, at)
            fired += 1

    def _report_depth_locked(self) -> None:
        if self._metrics is not None:
            self._metrics.set_queue_depth(len(self._returning) + len(self._first))
