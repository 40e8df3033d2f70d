"""A burst of orders created at once: the orders started first become Ready first, and no new order waits forever.

The pass is a stand-in with the shape of a KeystoneUser order's life (a finalizer pass that comes back
after 1 s, then two passes that each wait for an external controller to answer 200 ms later, then the
Ready pass); every pass costs 5 ms on the simulated clock, so timers and answers fall due while other
orders' passes run, as they do in ``engine run``.
"""

from __future__ import annotations

import datetime as dt
import heapq
import logging

from prometheus_client import CollectorRegistry
from runtime_kit import START, request

from engine.metrics import Metrics
from engine.outcome import Request, Result
from engine.runtime.controller import Controller
from engine.runtime.queue import FIRST_PASS_EVERY, WorkQueue
from offline.clock import SimulatedClock

MS = dt.timedelta(milliseconds=1)
PASS_COST = 5 * MS
ANSWER_AFTER = 200 * MS
LOG = logging.getLogger("tests.runtime")


class Burst:
    """N orders created at once, run by one worker on a simulated clock; records each order's passes."""

    def __init__(self, orders: int) -> None:
        self.clock = SimulatedClock(START)
        self.queue = WorkQueue(self.clock)
        self.controller = Controller(self.queue, self._pass, metrics=Metrics(CollectorRegistry()), log=LOG)
        self.names = [f"order-{i:04d}" for i in range(orders)]
        self.passes: dict[Request, list[dt.datetime]] = {request(n): [] for n in self.names}
        self.ready: dict[Request, dt.datetime] = {}
        self._answers: list[tuple[dt.datetime, int, Request]] = []
        """The external controller's answers (watch events) still to arrive."""
        self._seq = 0

    def _pass(self, req: Request) -> Result:
        self.clock.advance(PASS_COST)
        done = self.passes[req]
        done.append(self.clock.now())
        if len(done) == 1:
            return Result(requeue_after=dt.timedelta(seconds=1))  # the finalizer pass
        if len(done) in (2, 3):  # a child written; its controller answers in a while
            self._seq += 1
            heapq.heappush(self._answers, (self.clock.now() + ANSWER_AFTER, self._seq, req))
            return Result(requeue_after=dt.timedelta(seconds=10))
        self.ready.setdefault(req, self.clock.now())
        return Result()

    def run(self) -> None:
        for name in self.names:
            self.queue.add(request(name))
        for _ in range(100 * len(self.names)):
            while self._answers and self._answers[0][0] <= self.clock.now():
                self.queue.add(heapq.heappop(self._answers)[2])
            self.queue.fire_due()
            if self.controller.process_next() is not None:
                continue
            due = [t for t in (self.queue.next_timer(), self._answers[0][0] if self._answers else None) if t]
            if not due:
                return
            self.clock.set(min(due))
        raise AssertionError("the burst did not settle")


def test_an_order_started_first_is_ready_before_a_thousand_later_orders_get_a_first_pass() -> None:
    """1001 orders at once: order 0 is Ready while order 1000 still waits for its first pass."""
    burst = Burst(1001)
    burst.run()
    first, last = request(burst.names[0]), request(burst.names[-1])
    assert burst.ready[first] < burst.passes[last][0]
    assert len(burst.ready) == 1001  # every order got there
    assert all(len(p) == 4 for p in burst.passes.values())  # and no pass was spent twice


def test_orders_become_ready_one_after_another() -> None:
    """The hundred orders created first are all Ready before the hundred created last have started."""
    burst = Burst(1001)
    burst.run()
    early_ready = max(burst.ready[request(n)] for n in burst.names[:100])
    late_started = min(burst.passes[request(n)][0] for n in burst.names[-100:])
    assert early_ready < late_started


def test_a_new_order_is_not_starved_by_returning_work() -> None:
    """Orders that keep coming back (each woken again during its pass) still let a new order in."""
    queue = WorkQueue(SimulatedClock(START))
    busy = [request(f"busy-{i}") for i in range(20)]
    for req in busy:
        queue.add(req)
    assert [queue.pop_ready() for _ in busy] == busy  # every busy order has had a pass ...
    for req in busy:
        queue.add(req)  # ... and is woken again during it
        queue.done(req)
    queue.add(request("new"))
    handed_out = []
    for _ in range(3 * FIRST_PASS_EVERY):
        req = queue.pop_ready()
        assert req is not None
        handed_out.append(req)
        if req != request("new"):
            queue.add(req)
        queue.done(req)
    assert request("new") in handed_out[:FIRST_PASS_EVERY]
    assert handed_out.count(request("new")) == 1


def test_the_waiting_line_shows_the_first_pass_share() -> None:
    """``waiting`` lists the hand-out order: a first pass after every FIRST_PASS_EVERY - 1 returning ones."""
    queue = WorkQueue(SimulatedClock(START))
    returning = [request(f"r{i:02d}") for i in range(2 * FIRST_PASS_EVERY)]
    for req in returning:
        queue.add(req)
    assert [queue.pop_ready() for _ in returning] == returning
    for req in returning:
        queue.done(req)
        queue.add(req)
    queue.add(request("new-a"))
    queue.add(request("new-b"))
    line = queue.waiting()
    assert line.index(request("new-a")) == FIRST_PASS_EVERY - 1
    assert line.index(request("new-b")) == 2 * FIRST_PASS_EVERY - 1
    assert line == [queue.pop_ready() for _ in range(len(line))]
