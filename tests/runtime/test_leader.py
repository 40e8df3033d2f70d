"""Leader election on a Lease: acquire, renew, lose at the deadline, take over after expiry, release."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from prometheus_client import CollectorRegistry

from engine.cluster.api import Conflict
from engine.cluster.patches import json_copy
from engine.metrics import Metrics
from engine.runtime.leader import (
    LEASE_API_VERSION,
    WATCHDOG_INTERVAL,
    LeaderElector,
    LeaseSettings,
    PreciseClock,
    micro_time,
)
from offline.clock import SimulatedClock
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
S = dt.timedelta(seconds=1)
NS, NAME = "c5c3-system", "c5c3-operator"


class Candidate:
    """One replica: its elector over a shared cluster, and a record of its leadership callbacks."""

    def __init__(self, cluster: MemoryCluster | FaultyCluster, clock: SimulatedClock, identity: str,
                 *, metrics: Metrics | None = None) -> None:
        self.events: list[str] = []
        self.elector = LeaderElector(
            cluster,  # type: ignore[arg-type]
            LeaseSettings(NS, NAME, identity, lease_duration=15, renew_deadline=10, retry_period=2),
            clock=clock,
            on_started_leading=lambda: self.events.append("started"),
            on_stopped_leading=lambda: self.events.append("stopped"),
            metrics=metrics,
        )


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock(START)


@pytest.fixture
def cluster(clock: SimulatedClock) -> MemoryCluster:
    return MemoryCluster("", clock=clock)


def lease(cluster: MemoryCluster) -> dict[str, object]:
    return dict(cluster.get(LEASE_API_VERSION, "Lease", NS, NAME)["spec"])


def test_first_candidate_creates_the_lease_and_leads(cluster: MemoryCluster, clock: SimulatedClock) -> None:
    """With no Lease, the first step creates it with this identity and starts leading."""
    a = Candidate(cluster, clock, "a")
    assert a.elector.step() is True
    assert a.events == ["started"]
    spec = lease(cluster)
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["acquireTime"] == spec["renewTime"] == micro_time(START)
    assert spec["leaseTransitions"] == 0


def test_renewal_moves_renew_time_and_keeps_acquire_time(cluster: MemoryCluster, clock: SimulatedClock) -> None:
    """A leader's later steps renew: renewTime moves, acquireTime and leaseTransitions stay."""
    a = Candidate(cluster, clock, "a")
    a.elector.step()
    clock.advance(2 * S)
    assert a.elector.step() is True
    spec = lease(cluster)
    assert spec["renewTime"] == micro_time(START + 2 * S)
    assert spec["acquireTime"] == micro_time(START)
    assert spec["leaseTransitions"] == 0
    assert a.events == ["started"]


def test_follower_does_not_lead_while_the_leader_renews(cluster: MemoryCluster, clock: SimulatedClock) -> None:
    """A second candidate stays a follower as long as the record keeps changing."""
    a, b = Candidate(cluster, clock, "a"), Candidate(cluster, clock, "b")
    a.elector.step()
    for _ in range(20):
        clock.advance(2 * S)
        a.elector.step()
        assert b.elector.step() is False
    assert b.events == []
    assert lease(cluster)["holderIdentity"] == "a"


def test_follower_takes_over_once_the_lease_expires(cluster: MemoryCluster, clock: SimulatedClock) -> None:
    """When the leader stops renewing, the follower takes over lease-duration after it last saw a change."""
    a, b = Candidate(cluster, clock, "a"), Candidate(cluster, clock, "b")
    a.elector.step()
    assert b.elector.step() is False  # b observes a's record now
    clock.advance(14 * S)
    assert b.elector.step() is False
    clock.advance(1 * S)
    assert b.elector.step() is True
    spec = lease(cluster)
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert spec["acquireTime"] == micro_time(START + 15 * S)


def test_expiry_counts_from_when_the_follower_saw_the_record(cluster: MemoryCluster, clock: SimulatedClock) -> None:
    """A record first seen late is not expired at once: clocks of other machines are never trusted."""
    a = Candidate(cluster, clock, "a")
    a.elector.step()
    clock.advance(60 * S)
    b = Candidate(cluster, clock, "b")
    assert b.elector.step() is False
    clock.advance(15 * S)
    assert b.elector.step() is True


def test_leader_that_cannot_renew_stops_at_the_deadline(clock: SimulatedClock) -> None:
    """Renewals failing: the leader keeps leading until the renew deadline, then stops at once."""
    faulty = FaultyCluster(MemoryCluster("", clock=clock), cluster_name="")
    a = Candidate(faulty, clock, "a")
    a.elector.step()
    faulty.inject(kind="Lease", error="ServerError", times=100)
    clock.advance(2 * S)
    assert a.elector.step() is True
    clock.advance(7 * S)
    assert a.elector.check_deadline() is True
    clock.advance(1 * S)
    assert a.elector.check_deadline() is False
    assert a.events == ["started", "stopped"]


def test_a_leader_renews_with_one_update_and_reads_only_when_it_fails(clock: SimulatedClock) -> None:
    """A leader updates the Lease as it last wrote it, with no read (so a slow API server costs one request's time
    per renewal); when that update fails (the Lease changed meanwhile) it reads the Lease and renews from it."""
    cluster = MemoryCluster("", clock=clock)
    faulty = FaultyCluster(cluster, cluster_name="")
    a = Candidate(faulty, clock, "a")
    a.elector.step()
    faulty.calls.clear()
    clock.advance(2 * S)
    assert a.elector.step() is True
    assert [call.verb for call in faulty.calls] == ["update"]
    assert lease(cluster)["renewTime"] == micro_time(START + 2 * S)
    changed = json_copy(cluster.get(LEASE_API_VERSION, "Lease", NS, NAME))
    changed["metadata"]["annotations"] = {"example.io/touched": "yes"}
    cluster.update(changed)  # someone else wrote the Lease: the one a wrote is stale
    faulty.calls.clear()
    clock.advance(2 * S)
    assert a.elector.step() is True
    assert [(call.verb, call.failed) for call in faulty.calls] == [("update", True), ("get", False),
                                                                   ("update", False)]
    assert lease(cluster)["renewTime"] == micro_time(START + 4 * S)
    assert a.events == ["started"]


def test_tenure_left_counts_down_from_each_renewal_and_is_zero_once_leading_ends(clock: SimulatedClock) -> None:
    """What a shard member's fence asks before every request: the seconds to the renew deadline, counted from the
    start of the last successful renewal on the elector's clock; none before leading and none after."""
    faulty = FaultyCluster(MemoryCluster("", clock=clock), cluster_name="")
    a = Candidate(faulty, clock, "a")
    assert a.elector.tenure_left() == 0.0
    a.elector.step()
    assert a.elector.tenure_left() == 10.0
    clock.advance(3 * S)
    assert a.elector.tenure_left() == 7.0
    a.elector.step()  # renewed: the deadline counts from here
    assert a.elector.tenure_left() == 10.0
    faulty.inject(kind="Lease", error="ServerError", times=100)
    clock.advance(4 * S)
    assert a.elector.step() is True  # a failed renewal leaves the deadline where it was
    assert a.elector.tenure_left() == 6.0
    clock.advance(6 * S)
    assert a.elector.check_deadline() is False
    assert a.elector.tenure_left() == 0.0


def test_the_watchdog_looks_again_by_the_renew_deadline_when_it_is_nearer_than_a_retry_period(
        clock: SimulatedClock, cluster: MemoryCluster) -> None:
    """Between two checks the watchdog waits a retry period, but a leader near its renew deadline is looked at
    when the deadline passes (at least WATCHDOG_INTERVAL on), so a lapsed tenure ends on time."""
    a = Candidate(cluster, clock, "a")  # renew deadline 10 s, retry period 2 s
    assert a.elector._watchdog_wait() == 2.0  # not leading
    a.elector.step()
    assert a.elector._watchdog_wait() == 2.0
    clock.advance(9 * S)
    assert a.elector._watchdog_wait() == 1.0
    clock.advance(S - dt.timedelta(milliseconds=10))
    assert a.elector._watchdog_wait() == WATCHDOG_INTERVAL


def test_leader_that_sees_another_holder_stops_at_once(cluster: MemoryCluster, clock: SimulatedClock) -> None:
    """A leader whose Lease was taken (say, after a long pause) stops at its next step, not at its deadline."""
    a, b = Candidate(cluster, clock, "a"), Candidate(cluster, clock, "b")
    a.elector.step()
    b.elector.step()
    clock.advance(16 * S)
    assert b.elector.step() is True
    assert a.elector.step() is False
    assert a.events == ["started", "stopped"]


def test_lost_leader_leads_again_when_the_lease_is_free(cluster: MemoryCluster, clock: SimulatedClock) -> None:
    """A candidate that stopped leading is a candidate again: it re-acquires a released Lease."""
    a, b = Candidate(cluster, clock, "a"), Candidate(cluster, clock, "b")
    a.elector.step()
    b.elector.step()
    clock.advance(16 * S)
    b.elector.step()
    a.elector.step()
    b.elector.release()
    assert a.elector.step() is True
    assert a.events == ["started", "stopped", "started"]
    assert lease(cluster)["leaseTransitions"] == 2


def test_a_conflicting_update_loses_the_race(cluster: MemoryCluster, clock: SimulatedClock) -> None:
    """Two candidates that read the same expired record: only the first update wins, the other Conflicts."""
    a, b, c = (Candidate(cluster, clock, n) for n in "abc")
    a.elector.step()
    b.elector.step()
    c.elector.step()
    clock.advance(16 * S)
    stale = json_copy(cluster.get(LEASE_API_VERSION, "Lease", NS, NAME))
    assert b.elector.step() is True
    stale["spec"]["holderIdentity"] = "c"
    with pytest.raises(Conflict):
        cluster.update(stale)
    assert c.elector.step() is False
    assert lease(cluster)["holderIdentity"] == "b"


def test_release_clears_the_holder_so_a_follower_takes_over_at_once(
    cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    """A released Lease has no holder; the follower's next step acquires it without waiting."""
    a, b = Candidate(cluster, clock, "a"), Candidate(cluster, clock, "b")
    a.elector.step()
    b.elector.step()
    a.elector.release()
    assert a.events == ["started", "stopped"]
    assert lease(cluster)["holderIdentity"] == ""
    clock.advance(2 * S)
    assert b.elector.step() is True


def test_release_by_a_follower_changes_nothing(cluster: MemoryCluster, clock: SimulatedClock) -> None:
    """Only the holder releases: a follower's release leaves the leader's record alone."""
    a, b = Candidate(cluster, clock, "a"), Candidate(cluster, clock, "b")
    a.elector.step()
    b.elector.step()
    b.elector.release()
    assert lease(cluster)["holderIdentity"] == "a"
    assert b.events == []


def test_leader_status_metric_follows_leadership(cluster: MemoryCluster, clock: SimulatedClock) -> None:
    """The leader_status gauge reads 1 while leading and 0 after."""
    registry = CollectorRegistry()
    a = Candidate(cluster, clock, "a", metrics=Metrics(registry))
    assert registry.get_sample_value("c5c3_operator_leader_status") == 0
    a.elector.step()
    assert registry.get_sample_value("c5c3_operator_leader_status") == 1
    a.elector.release()
    assert registry.get_sample_value("c5c3_operator_leader_status") == 0


def test_settings_refuse_durations_out_of_order() -> None:
    """The retry period must be shorter than the renew deadline, which must be shorter than the lease."""
    with pytest.raises(ValueError, match="retry period < renew deadline < lease duration"):
        LeaseSettings(NS, NAME, "a", lease_duration=5, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError, match="identity"):
        LeaseSettings(NS, NAME, "")


def test_run_leads_until_stopped(cluster: MemoryCluster) -> None:
    """The threaded loop acquires on the real clock and returns when stopped, leaving the Lease held."""
    started = threading.Event()
    elector = LeaderElector(
        cluster, LeaseSettings(NS, NAME, "a", lease_duration=3, renew_deadline=2, retry_period=0.5),
        clock=PreciseClock(), on_started_leading=started.set, on_stopped_leading=lambda: None,
    )
    stop = threading.Event()
    thread = threading.Thread(target=elector.run, args=(stop,))
    thread.start()
    assert started.wait(5)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert elector.leading
    assert lease(cluster)["holderIdentity"] == "a"


class CountedStop(threading.Event):
    """A stop event that records how long each wait on it was asked to last."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return super().wait(timeout)


def test_the_watchdog_looks_once_a_retry_period_not_twenty_times_a_second(cluster: MemoryCluster) -> None:
    """Leading or not, the watchdog waits a retry period (or until the renew deadline, when that is sooner) between
    two checks: a shard member runs two electors, and each wake-up costs the busy workers the interpreter lock."""
    started = threading.Event()
    elector = LeaderElector(
        cluster, LeaseSettings(NS, NAME, "a", lease_duration=3, renew_deadline=2, retry_period=0.5),
        clock=PreciseClock(), on_started_leading=started.set, on_stopped_leading=lambda: None,
    )
    stop = CountedStop()
    thread = threading.Thread(target=elector.run, args=(stop,))
    thread.start()
    try:
        assert started.wait(5)
        for _ in range(100):
            if len(stop.waits) >= 4:
                break
            threading.Event().wait(0.1)
    finally:
        stop.set()
        thread.join(5)
    assert len(stop.waits) >= 4
    assert all(timeout is not None and timeout > 0.25 for timeout in stop.waits[:4])  # was 0.05 each
    assert elector.leading
