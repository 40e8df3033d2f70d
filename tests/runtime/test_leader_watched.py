"""A follower that reads the leader Lease from a watch: no request while another holder's lease is valid; every
acquisition decided on a live read; a watched record older than one read live is not used."""

from __future__ import annotations

import datetime as dt

from engine.cluster.api import Obj
from engine.runtime.leader import LEASE_API_VERSION, LeaderElector, LeaseSettings
from offline.clock import SimulatedClock
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
S = dt.timedelta(seconds=1)
NS, NAME = "c5c3-system", "c5c3-operator"


def elector(cluster: FaultyCluster | MemoryCluster, clock: SimulatedClock, identity: str,
            watched: dict[str, Obj] | None = None) -> LeaderElector:
    settings = LeaseSettings(NS, NAME, identity, lease_duration=15, renew_deadline=10, retry_period=2)
    return LeaderElector(cluster, settings, clock=clock,  # type: ignore[arg-type]
                         on_started_leading=lambda: None, on_stopped_leading=lambda: None,
                         watched=(lambda name: watched.get(name)) if watched is not None else None)


def reads(cluster: FaultyCluster) -> int:
    return sum(1 for call in cluster.calls if call.verb == "get" and call.kind == "Lease")


def current(cluster: MemoryCluster) -> Obj:
    return cluster.get(LEASE_API_VERSION, "Lease", NS, NAME)


def test_a_follower_reads_a_valid_lease_from_its_watch_and_takes_an_expired_one_on_a_live_read() -> None:
    clock = SimulatedClock(START)
    memory = MemoryCluster("", clock=clock)
    leader = elector(memory, clock, "a")
    assert leader.step()
    watched: dict[str, Obj] = {NAME: current(memory)}
    faulty = FaultyCluster(memory, cluster_name="")
    follower = elector(faulty, clock, "b", watched)
    for _ in range(5):  # the leader renews, the watch shows it: the follower sends nothing
        clock.advance(2 * S)
        assert leader.step()
        watched[NAME] = current(memory)
        assert follower.step() is False
    assert faulty.calls == []
    # The leader stops renewing; the watch keeps showing its last record: no request until it expired ...
    for _ in range(7):
        clock.advance(2 * S)
        assert follower.step() is False
    assert faulty.calls == []
    # ... then a live read decides, and the follower takes the Lease over.
    clock.advance(2 * S)
    assert follower.step() is True
    assert reads(faulty) == 1
    assert current(memory)["spec"]["holderIdentity"] == "b"


def test_a_watched_record_older_than_one_read_live_is_not_used() -> None:
    """A watch that lags (its record older than one this follower read) cannot say the lease is valid: the follower
    reads live each round, and a record that stops changing there still expires."""
    clock = SimulatedClock(START)
    memory = MemoryCluster("", clock=clock)
    leader = elector(memory, clock, "a")
    assert leader.step()
    stale = current(memory)
    clock.advance(2 * S)
    assert leader.step()  # a newer record
    watched: dict[str, Obj] = {}
    faulty = FaultyCluster(memory, cluster_name="")
    follower = elector(faulty, clock, "b", watched)
    assert follower.step() is False  # the watch cannot say: a live read of the newer record
    assert reads(faulty) == 1
    watched[NAME] = stale  # a watch that lags behind it
    held = False
    for _ in range(9):  # the leader is gone: each round reads live, until the newer record expired
        clock.advance(2 * S)
        before = reads(faulty)
        held = follower.step()
        assert reads(faulty) == before + 1
        if held:
            break
    assert held, "the follower took over the lease that stopped changing"
    assert current(memory)["spec"]["holderIdentity"] == "b"
