"""The shard members' watch of the Leases: it says nothing before its first list, then shows each Lease as stored,
a deleted one gone, and it ends when stopped."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from engine.cluster.api import Forbidden
from engine.cluster.retry import Backoff
from engine.runtime.leader import LEASE_API_VERSION, PreciseClock
from engine.runtime.sharding.leases import LeaseWatch, NotWatched
from offline.cluster.memory import MemoryCluster

NS = "c5c3-system"


def until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.01)


def lease(name: str, holder: str, member: bool = False) -> dict[str, object]:
    labels = {"sharding.c5c3.io/member": "true"} if member else {}
    return {"apiVersion": LEASE_API_VERSION, "kind": "Lease",
            "metadata": {"namespace": NS, "name": name, "labels": labels}, "spec": {"holderIdentity": holder}}


def failing(calls: Callable[..., object], failures: list[Exception]) -> Callable[..., object]:
    """A cluster method that raises each of ``failures`` in turn, then answers as ``calls`` does."""
    pending = iter(failures)

    def call(*args: object, **kwargs: object) -> object:
        for failure in pending:
            raise failure
        return calls(*args, **kwargs)

    return call


@contextlib.contextmanager
def running(watch: LeaseWatch) -> Iterator[threading.Thread]:
    """The watch on a thread of its own, stopped and joined on the way out."""
    stop = threading.Event()
    thread = threading.Thread(target=watch.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join(5.0)


def holder(watch: LeaseWatch, name: str) -> str | None:
    try:
        found = watch.lease(name)
    except NotWatched:
        return None
    return None if found is None else str(found["spec"]["holderIdentity"])


def test_the_watch_shows_the_leases_as_stored_and_ends_when_stopped() -> None:
    cluster = MemoryCluster("", clock=PreciseClock())
    cluster.create(lease("leader", "a"))
    watch = LeaseWatch(cluster, NS, timeout=0.5)  # type: ignore[arg-type]
    with pytest.raises(NotWatched):
        watch.lease("leader")
    stop = threading.Event()
    thread = threading.Thread(target=watch.run, args=(stop,), daemon=True)
    thread.start()
    try:
        until(lambda: holder(watch, "leader") == "a")
        cluster.create(lease("m1", "m1", member=True))
        stored = cluster.get(LEASE_API_VERSION, "Lease", NS, "leader")
        cluster.update({**stored, "spec": {"holderIdentity": "b"}})
        until(lambda: holder(watch, "leader") == "b" and holder(watch, "m1") == "m1")
        assert [item["metadata"]["name"] for item in watch.leases("sharding.c5c3.io/member=true")] == ["m1"]
        cluster.delete(LEASE_API_VERSION, "Lease", NS, "m1")
        until(lambda: watch.leases("sharding.c5c3.io/member=true") == [])
    finally:
        stop.set()
        thread.join(5.0)
    assert not thread.is_alive()
    with pytest.raises(NotWatched):
        watch.lease("leader")


def test_a_failure_of_the_watch_is_one_warning_and_it_lists_again(caplog: pytest.LogCaptureFixture) -> None:
    """A failure that is no API error (a bug, a broken connection) leaves the readers reading live, says so in one
    warning line without a traceback, and the watch lists and shows the Leases again after its backoff."""
    cluster = MemoryCluster("", clock=PreciseClock())
    cluster.create(lease("leader", "a"))
    cluster.watch = failing(cluster.watch, [RuntimeError("the stream broke")])  # type: ignore[method-assign,assignment]
    watch = LeaseWatch(cluster, NS, timeout=0.5)  # type: ignore[arg-type]
    with caplog.at_level("WARNING", logger="engine.runtime.sharding"), running(watch):
        until(lambda: any("the watch of the Leases" in r.getMessage() for r in caplog.records))
        until(lambda: holder(watch, "leader") == "a")
    (warning,) = [r for r in caplog.records if "the watch of the Leases" in r.getMessage()]
    assert warning.getMessage().startswith("the watch of the Leases in c5c3-system failed (RuntimeError: the stream "
                                           "broke); listing again in ")
    assert warning.exc_info is None


def test_a_refused_watch_is_one_warning_naming_the_missing_rights_until_it_is_allowed(
        caplog: pytest.LogCaptureFixture) -> None:
    """An operator deployed with a Role that has no list and watch on leases says so once, reads live meanwhile,
    and watches once the rights are given."""
    cluster = MemoryCluster("", clock=PreciseClock())
    cluster.create(lease("leader", "a"))
    refusal = Forbidden('leases.coordination.k8s.io is forbidden: cannot list resource "leases"')
    cluster.list = failing(cluster.list, [refusal] * 3)  # type: ignore[method-assign,assignment]
    watch = LeaseWatch(cluster, NS, timeout=0.5, backoff=Backoff(minimum=0.01, maximum=0.02))  # type: ignore[arg-type]
    with caplog.at_level("DEBUG", logger="engine.runtime.sharding"), running(watch):
        until(lambda: holder(watch, "leader") == "a")
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith('the Leases in c5c3-system may not be listed and watched (leases.coordination.k8s.io '
                                  'is forbidden: cannot list resource "leases"): the shard members read them live each '
                                  "retry period instead; give the Role list and watch on leases (engine rbac prints "
                                  "it); trying again in ")
    assert sum("is still refused" in r.getMessage() for r in caplog.records) == 2


def test_a_role_that_may_list_but_not_watch_is_said_once_not_at_every_list(caplog: pytest.LogCaptureFixture) -> None:
    """Each retry lists (allowed) and is refused the watch: one warning, not one per retry."""
    cluster = MemoryCluster("", clock=PreciseClock())
    cluster.create(lease("leader", "a"))
    refused_watches = 0

    def refused(*args: object, **kwargs: object) -> object:
        nonlocal refused_watches
        refused_watches += 1
        raise Forbidden('leases.coordination.k8s.io is forbidden: cannot watch resource "leases"')

    cluster.watch = refused  # type: ignore[assignment,method-assign]
    watch = LeaseWatch(cluster, NS, timeout=0.5, backoff=Backoff(minimum=0.01, maximum=0.02))  # type: ignore[arg-type]
    with caplog.at_level("DEBUG", logger="engine.runtime.sharding"), running(watch):
        until(lambda: refused_watches >= 5)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    assert 'cannot watch resource "leases"' in warnings[0]
