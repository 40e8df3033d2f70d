"""The work queue: de-duplication, one pass per order at a time, timers and backoff."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from prometheus_client import CollectorRegistry
from runtime_kit import START, request

from engine.metrics import Metrics
from engine.runtime.queue import REQUEUE, RETRY, RateLimiter, ShutDown, TokenBucket, Wake, WorkQueue
from offline.clock import SimulatedClock

MS = dt.timedelta(milliseconds=1)


class WallClock:
    """The real time, to the microsecond."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock(START)


@pytest.fixture
def queue(clock: SimulatedClock) -> WorkQueue:
    return WorkQueue(clock)


class TestAdd:
    def test_an_order_added_twice_waits_once(self, queue: WorkQueue) -> None:
        """Adding a waiting request again changes nothing."""
        queue.add(request("a"))
        queue.add(request("a"))
        assert queue.depth == 1
        assert queue.pop_ready() == request("a")
        assert queue.pop_ready() is None

    def test_requests_come_out_in_the_order_they_went_in(self, queue: WorkQueue) -> None:
        """FIFO, so a single-threaded run is reproducible."""
        for name in ("c", "a", "b"):
            queue.add(request(name))
        assert [queue.pop_ready() for _ in range(3)] == [request("c"), request("a"), request("b")]

    def test_added_while_processing_waits_for_done(self, queue: WorkQueue) -> None:
        """A request handed out is not handed out again until its pass is done, then exactly once."""
        queue.add(request("a"))
        assert queue.pop_ready() == request("a")
        queue.add(request("a"))
        queue.add(request("a"))
        assert queue.pop_ready() is None
        queue.done(request("a"))
        assert queue.pop_ready() == request("a")
        queue.done(request("a"))
        assert queue.pop_ready() is None

    def test_done_without_a_new_add_does_not_requeue(self, queue: WorkQueue) -> None:
        """An order that nothing woke during its pass stays out of the queue."""
        queue.add(request("a"))
        queue.pop_ready()
        queue.done(request("a"))
        assert queue.depth == 0


class TestReturningFirst:
    def test_an_orders_later_pass_goes_before_other_orders_first_passes(self, queue: WorkQueue) -> None:
        """N orders created at once: the one that already had a pass is not starved by the rest."""
        for name in ("a", "b", "c"):
            queue.add(request(name))
        assert queue.pop_ready() == request("a")
        queue.add(request("a"))  # its own write echoes back during the pass
        queue.done(request("a"))
        assert queue.waiting() == [request("a"), request("b"), request("c")]
        assert [queue.pop_ready() for _ in range(3)] == [request("a"), request("b"), request("c")]

    def test_a_returning_order_added_after_its_pass_still_goes_first(self, queue: WorkQueue,
                                                                     clock: SimulatedClock) -> None:
        """Its requeue timer (or a child's event) after the pass puts it ahead of the waiting first passes."""
        for name in ("a", "b", "c", "d"):
            queue.add(request(name))
        queue.pop_ready()
        queue.done(request("a"))
        queue.add_after(request("a"), dt.timedelta(seconds=1))
        assert queue.pop_ready() == request("b")
        queue.done(request("b"))
        queue.add(request("b"))
        clock.advance(dt.timedelta(seconds=1))
        queue.fire_due()
        assert [queue.pop_ready() for _ in range(4)] == [request("b"), request("a"), request("c"), request("d")]
        assert queue.depth == 0

    def test_only_the_oldest_seen_requests_are_forgotten(self, queue: WorkQueue,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
        """The memory of orders that had a pass is bounded; a forgotten one merely waits its turn."""
        monkeypatch.setattr("engine.runtime.queue.SEEN_LIMIT", 2)
        for name in ("a", "b", "c"):
            queue.add(request(name))
            queue.done(queue.pop_ready() or request("?"))
        for name in ("d", "a", "c"):
            queue.add(request(name))
        assert queue.waiting() == [request("c"), request("d"), request("a")]


class TestCoalescing:
    """engine run gathers the events that follow a pass (the echoes of its own writes) into one pass."""

    @pytest.fixture
    def coalescing(self, queue: WorkQueue) -> WorkQueue:
        queue.coalesce = 50 * MS
        return queue

    def test_events_right_after_a_pass_become_one_pass_when_the_window_closes(
            self, coalescing: WorkQueue, clock: SimulatedClock) -> None:
        coalescing.add(request("a"))
        coalescing.done(coalescing.pop_ready() or request("?"))
        for _ in range(3):  # a child created, another deleted, a third applied: three echoes
            coalescing.add(request("a"))
            clock.advance(10 * MS)
        assert coalescing.pop_ready() is None
        clock.advance(20 * MS)
        assert coalescing.fire_due() == 1
        assert coalescing.pop_ready() == request("a")
        assert coalescing.pop_ready() is None

    def test_an_event_during_the_pass_waits_for_the_window_too(self, coalescing: WorkQueue,
                                                               clock: SimulatedClock) -> None:
        coalescing.add(request("a"))
        coalescing.pop_ready()
        coalescing.add(request("a"))
        coalescing.done(request("a"))
        assert coalescing.pop_ready() is None
        coalescing.add(request("a"))
        clock.advance(50 * MS)
        assert coalescing.fire_due() == 1
        assert [coalescing.pop_ready(), coalescing.pop_ready()] == [request("a"), None]

    def test_an_event_after_the_window_goes_straight_in(self, coalescing: WorkQueue, clock: SimulatedClock) -> None:
        coalescing.add(request("a"))
        coalescing.done(coalescing.pop_ready() or request("?"))
        clock.advance(50 * MS)
        coalescing.add(request("a"))
        assert coalescing.pop_ready() == request("a")

    def test_other_orders_are_not_held(self, coalescing: WorkQueue) -> None:
        coalescing.add(request("a"))
        coalescing.done(coalescing.pop_ready() or request("?"))
        coalescing.add(request("b"))
        assert coalescing.pop_ready() == request("b")


class TestTimers:
    def test_add_after_waits_for_the_clock(self, queue: WorkQueue, clock: SimulatedClock) -> None:
        """A delayed request is not ready until the clock reaches its time."""
        queue.add_after(request("a"), dt.timedelta(seconds=30))
        assert queue.next_timer() == START + dt.timedelta(seconds=30)
        assert queue.fire_due() == 0
        assert queue.pop_ready() is None
        clock.advance(dt.timedelta(seconds=29))
        assert queue.fire_due() == 0
        clock.advance(dt.timedelta(seconds=1))
        assert queue.fire_due() == 1
        assert queue.pop_ready() == request("a")
        assert queue.next_timer() is None

    def test_timers_of_one_order_collapse_to_the_earliest(self, queue: WorkQueue, clock: SimulatedClock) -> None:
        """A later timer does not replace an earlier one; an earlier one replaces a later one."""
        queue.add_after(request("a"), dt.timedelta(seconds=10))
        queue.add_after(request("a"), dt.timedelta(seconds=20))
        assert queue.timers() == {request("a"): START + dt.timedelta(seconds=10)}
        queue.add_after(request("a"), dt.timedelta(seconds=5))
        assert queue.timers() == {request("a"): START + dt.timedelta(seconds=5)}
        clock.advance(dt.timedelta(seconds=30))
        assert queue.fire_due() == 1
        assert queue.depth == 1
        assert queue.next_timer() is None

    def test_zero_delay_adds_now(self, queue: WorkQueue) -> None:
        """add_after with no delay queues at once, without a timer."""
        queue.add_after(request("a"), dt.timedelta(0))
        assert queue.depth == 1
        assert queue.timers() == {}

    def test_timers_due_together_fire_in_the_order_set(self, queue: WorkQueue, clock: SimulatedClock) -> None:
        """Timers falling due at one instant queue in time order, then in the order they were set."""
        queue.add_after(request("b"), dt.timedelta(seconds=10))
        queue.add_after(request("c"), dt.timedelta(seconds=5))
        queue.add_after(request("a"), dt.timedelta(seconds=10))
        clock.advance(dt.timedelta(seconds=10))
        queue.fire_due()
        assert queue.waiting() == [request("c"), request("b"), request("a")]

    def test_a_timer_firing_during_a_pass_requeues_after_done(self, queue: WorkQueue, clock: SimulatedClock) -> None:
        """A timer that falls due while the order is processing marks it dirty, not handed out twice."""
        queue.add(request("a"))
        queue.pop_ready()
        queue.add_after(request("a"), dt.timedelta(seconds=1))
        clock.advance(dt.timedelta(seconds=1))
        queue.fire_due()
        assert queue.pop_ready() is None
        queue.done(request("a"))
        assert queue.pop_ready() == request("a")


class TestBackoff:
    def test_failures_double_the_delay_from_5ms(self, queue: WorkQueue, clock: SimulatedClock) -> None:
        """Each consecutive failure doubles the retry delay: 5 ms, 10 ms, 20 ms, 40 ms."""
        delays = [queue.add_rate_limited(request("a")) for _ in range(4)]
        assert delays == [5 * MS, 10 * MS, 20 * MS, 40 * MS]
        assert queue.failures(request("a")) == 4
        assert queue.next_timer() == START + 5 * MS

    def test_forget_resets_the_backoff(self, queue: WorkQueue) -> None:
        """After forget, the next failure waits 5 ms again."""
        queue.add_rate_limited(request("a"))
        queue.add_rate_limited(request("a"))
        queue.forget(request("a"))
        assert queue.failures(request("a")) == 0
        assert queue.rate_limiter.when(request("a")) == 5 * MS

    def test_backoff_is_per_order(self, queue: WorkQueue) -> None:
        """One order's failures do not slow another's retry."""
        for _ in range(5):
            queue.add_rate_limited(request("a"))
        assert queue.add_rate_limited(request("b")) == 5 * MS

    def test_backoff_caps_at_1000_seconds(self) -> None:
        """However many failures, a retry waits at most 1000 s."""
        limiter = RateLimiter()
        delays = [limiter.when(request("a")) for _ in range(100)]
        assert delays[-1] == dt.timedelta(seconds=1000)
        assert max(delays) == dt.timedelta(seconds=1000)
        assert delays[17] == 5 * MS * 2**17

    def test_token_bucket_delays_after_the_burst(self) -> None:
        """The 10 qps / burst 100 bucket lets 100 retries through at once, then spaces them 100 ms apart."""
        now = [0.0]
        bucket = TokenBucket(monotonic=lambda: now[0])
        assert all(bucket.reserve() == dt.timedelta(0) for _ in range(100))
        assert bucket.reserve() == dt.timedelta(milliseconds=100)
        assert bucket.reserve() == dt.timedelta(milliseconds=200)
        now[0] = 10.0
        assert bucket.reserve() == dt.timedelta(0)

    def test_retry_waits_for_the_longer_of_item_and_bucket(self) -> None:
        """With a bucket installed, a retry waits for the larger of its own backoff and the bucket's delay."""
        limiter = RateLimiter(bucket=TokenBucket(qps=1, burst=1, monotonic=lambda: 0.0))
        assert limiter.when(request("a")) == 5 * MS
        assert limiter.when(request("b")) == dt.timedelta(seconds=1)


class TestThreaded:
    def test_get_blocks_until_added(self, queue: WorkQueue) -> None:
        """get wakes when another thread adds a request."""
        timer = threading.Timer(0.05, queue.add, args=(request("a"),))
        timer.start()
        assert queue.get(timeout=5) == request("a")
        timer.join()

    def test_get_times_out_with_none(self, queue: WorkQueue) -> None:
        """get returns None when nothing arrives in time."""
        assert queue.get(timeout=0.01) is None

    def test_get_fires_timers_as_they_fall_due(self) -> None:
        """On a real clock, a blocked get hands out a delayed request once its time has come, not before."""
        queue = WorkQueue(WallClock())
        queue.add_after(request("a"), dt.timedelta(milliseconds=50))
        began = time.monotonic()
        assert queue.get(timeout=5) == request("a")
        assert 0.04 <= time.monotonic() - began < 2

    def test_shutdown_wakes_blocked_getters(self, queue: WorkQueue) -> None:
        """After shutdown, get raises ShutDown instead of blocking."""
        threading.Timer(0.05, queue.shutdown).start()
        with pytest.raises(ShutDown):
            queue.get(timeout=5)
        queue.add(request("a"))
        assert queue.depth == 0


class TestMetrics:
    def test_depth_and_latency_are_recorded(self, clock: SimulatedClock) -> None:
        """The depth gauge follows the queue; the latency histogram sees the wait on the clock."""
        registry = CollectorRegistry()
        queue = WorkQueue(clock, metrics=Metrics(registry))
        queue.add(request("a"))
        queue.add(request("b"))
        assert registry.get_sample_value("c5c3_operator_workqueue_depth") == 2
        clock.advance(dt.timedelta(seconds=2))
        queue.pop_ready()
        assert registry.get_sample_value("c5c3_operator_workqueue_depth") == 1
        assert registry.get_sample_value("c5c3_operator_workqueue_queue_duration_seconds_count") == 1
        assert registry.get_sample_value("c5c3_operator_workqueue_queue_duration_seconds_sum") == 2


class TestWakes:
    """Each hand-out says what queued it (the operator counts passes by cause: events of which kind, re-checks)."""

    def test_the_first_cause_since_the_last_hand_out_is_the_one_reported(self, queue: WorkQueue,
                                                                         clock: SimulatedClock) -> None:
        queue.add(request("a"), Wake("event", "Widget"))
        clock.advance(10 * MS)
        queue.add(request("a"), Wake("event", "Secret"))
        clock.advance(5 * MS)
        assert queue.pop_ready() == request("a")
        assert queue.wake_of(request("a")) == (Wake("event", "Widget"), START)
        queue.done(request("a"))
        assert queue.wake_of(request("a")) is None

    def test_a_requeue_timer_and_a_retry_are_told_apart(self, queue: WorkQueue, clock: SimulatedClock) -> None:
        queue.schedule(request("a"), dt.timedelta(seconds=10))
        queue.add_rate_limited(request("b"))
        clock.advance(dt.timedelta(seconds=10))
        queue.fire_due()
        wakes = {}
        while (taken := queue.pop_ready()) is not None:
            wakes[taken.name] = queue.wake_of(taken)
        assert wakes == {"a": (REQUEUE, START + dt.timedelta(seconds=10)),
                         "b": (RETRY, START + dt.timedelta(seconds=10))}

    def test_an_event_added_while_processing_is_the_cause_of_the_next_pass(self, queue: WorkQueue) -> None:
        queue.add(request("a"), REQUEUE)
        queue.pop_ready()
        queue.add(request("a"), Wake("event", "Secret"))
        queue.done(request("a"))
        assert queue.pop_ready() == request("a")
        assert queue.wake_of(request("a")) == (Wake("event", "Secret"), START)

    def test_a_coalesced_event_keeps_its_cause_and_time_through_the_window(self, queue: WorkQueue,
                                                                          clock: SimulatedClock) -> None:
        queue.coalesce = 50 * MS
        queue.add(request("a"))
        queue.done(queue.pop_ready() or request("?"))
        clock.advance(10 * MS)
        queue.add(request("a"), Wake("event", "Secret"))
        clock.advance(40 * MS)
        queue.fire_due()
        assert queue.pop_ready() == request("a")
        assert queue.wake_of(request("a")) == (Wake("event", "Secret"), START + 10 * MS)
