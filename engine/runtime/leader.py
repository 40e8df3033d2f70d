"""Leader election on a coordination.k8s.io/v1 Lease, through the Cluster interface.

Only the leader reconciles; every replica keeps its caches warm. The loop follows client-go's ``leaderelection``
package, so replicas of this operator and of a Go operator read a Lease the same way: acquire a Lease that is
absent, released or expired (expiry judged on *our* clock alone), renew it every ``retry_period`` with a
conditional update, lose at once to another holder or a missed renew deadline, release it on a graceful stop
(``LeaderElector`` says each in detail). The clock is injected: tests call ``step`` and ``check_deadline`` on a
simulated clock and never sleep.
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
import math
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.clock import Clock
from engine.cluster.api import ApiError, Cluster, NotFound, Obj
from engine.metrics import Metrics
from engine.runtime.kinds import Log

LEASE_API_VERSION = "coordination.k8s.io/v1"
LEASE_KIND = "Lease"

DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0
"""controller-runtime's defaults, in seconds."""

WATCHDOG_INTERVAL = 0.05
"""The shortest wait between two deadline checks while ``run`` runs (the watchdog wakes at the deadline itself)."""


class PreciseClock:
    """The wall clock to the microsecond: lease times are MicroTime, and short test leases need it."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)


def default_identity() -> str:
    """``<hostname>_<uuid>``, as client-go names a candidate: unique per process, readable per pod."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _version(lease: Obj) -> int | None:
    """A Lease's resourceVersion as a number (etcd's are; the API calls them opaque), else None."""
    try:
        return int(str((lease.get("metadata") or {}).get("resourceVersion")))
    except (TypeError, ValueError):
        return None


def micro_time(moment: dt.datetime) -> str:
    """A metav1.MicroTime: RFC 3339 in UTC with microseconds."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaseSettings:
    """Which Lease, who we are, and the three durations (seconds) of client-go's election."""

    namespace: str
    name: str
    identity: str
    lease_duration: float = DEFAULT_LEASE_DURATION
    """How long a record that stopped changing keeps others away (written as whole seconds, at least 1)."""
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    """How long the leader keeps leading without a successful renewal."""
    retry_period: float = DEFAULT_RETRY_PERIOD
    """How often every candidate tries to acquire or renew."""
    labels: tuple[tuple[str, str], ...] = ()
    """Labels a Lease this candidate creates carries (a shard member's Lease is labelled as one)."""

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("a leader election identity must not be empty")
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "leader election needs 0 < retry period < renew deadline < lease duration, got "
                f"{self.retry_period}s, {self.renew_deadline}s and {self.lease_duration}s"
            )

    @property
    def lease_seconds(self) -> int:
        return max(1, math.ceil(self.lease_duration))


class LeaderElector:
    """One candidate for one Lease: ``step`` tries once, ``run`` keeps trying until stopped.

    Only the leader reconciles; every replica keeps its caches warm. The loop follows client-go's ``leaderelection``
    package, so replicas of this operator and of a Go operator read a Lease the same way:

    - **Acquire** when the Lease is absent (create it), released (no holder), or expired: its record has not changed
      for ``leaseDurationSeconds`` by *our* clock (client-go's observed time: clocks of different machines are never
      compared). Taking over from another holder counts one more ``leaseTransitions``.
    - **Renew** every ``retry_period``: an update with the resourceVersion last read, so two replicas racing for one
      Lease cannot both win (one gets a Conflict). A leader first updates the Lease as it last wrote it, without
      reading it (client-go's fast path): one request per renewal, so a slow API server (3 s a request) does not make
      a renewal outlast the renew deadline. If that update fails, it reads and decides.
    - **Lose at once** when the Lease shows another holder, or when no renewal has succeeded for ``renew_deadline``:
      ``on_stopped_leading`` runs before anything else, so no new pass starts after the deadline. A hung API call does
      not delay this: ``run`` checks the deadline on its own thread.
    - **Release** on a graceful stop: the holder is cleared, so a follower takes over without waiting for the lease to
      expire.
    - **Retire** (a shard member's lapsed tenure): the candidate sends no request any more and never leads again, so
      its Lease can be deleted without a late renewal bringing it back.
    """

    def __init__(
        self,
        cluster: Cluster,
        settings: LeaseSettings,
        *,
        clock: Clock,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        metrics: Metrics | None = None,
        log: Log | None = None,
        role: str = "the leader",
        annotations: Callable[[], dict[str, str]] | None = None,
        watched: Callable[[str], Obj | None] | None = None,
    ) -> None:
        """The callbacks run on the elector's threads and must return quickly (set or clear an Event).
        role: what holding this Lease makes this replica, for the log (a shard member's Lease is not a leader's).
        annotations: asked at each write of the Lease (creation, acquisition, renewal), which carries them.
        watched: a Lease's name -> the Lease as a watch last showed it (None: absent; LookupError: the watch cannot
        say); while not leading, a round it shows another holder's valid lease in sends no request."""
        self._cluster = cluster
        self.settings = settings
        self._clock = clock
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._metrics = metrics
        self._log: Log = log if log is not None else logging.getLogger("engine.runtime.leader")
        self._role = role
        self._annotations = annotations
        self._watched = watched
        self._lock = threading.RLock()
        self._leading = False
        self._renewed_at: dt.datetime | None = None
        self._tenure_end: dt.datetime | None = None
        """While leading, the renew deadline counted from ``_renewed_at``; None otherwise. Written under the lock with
        them, read without it by ``tenure_left``: one attribute read is atomic, so the fence takes no lock."""
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at: dt.datetime | None = None
        self._observed_version: int | None = None
        """The resourceVersion of the newest record read (a watched one older than it is not used)."""
        self._retired = False
        self._ended = False
        self._written: Obj | None = None
        """The Lease as this candidate last wrote it while leading (the fast path's base); None otherwise."""
        """Set when a tenure ends (leading, then no longer): ``run(until_lost=True)`` returns then."""
        if metrics is not None:
            metrics.set_leader(False)

    @property
    def leading(self) -> bool:
        with self._lock:
            return self._leading

    @property
    def renewed_at(self) -> dt.datetime | None:
        """When the last successful acquisition or renewal started (this elector's clock); None: never held."""
        with self._lock:
            return self._renewed_at

    def retire(self) -> None:
        """Send no request any more and never lead again (a request already sent still gets its answer, which is
        then ignored): the Lease's holder may delete it."""
        with self._lock:
            self._retired = True

    # -- one round ------------------------------------------------------------

    def step(self) -> bool:
        """Try to acquire or renew the Lease once; start or stop leading accordingly. True while leading."""
        with self._lock:
            if self._retired:
                return False
        now = self._clock.now()
        outcome = self._try_acquire_or_renew(now)
        with self._lock:
            if self._retired:
                return False
            if outcome == "held":
                self._renewed_at = now
                if self._leading:
                    self._tenure_end = now + dt.timedelta(seconds=self.settings.renew_deadline)
                else:
                    self._start_leading()
            elif self._leading and outcome == "taken":
                self._stop_leading(f"the Lease is held by {self._holder()!r} now")
            elif self._leading:
                self._check_deadline_locked()
            return self._leading

    def check_deadline(self) -> bool:
        """Stop leading if no renewal succeeded within the renew deadline. True while leading."""
        with self._lock:
            self._check_deadline_locked()
            return self._leading

    def tenure_left(self) -> float:
        """Seconds until the renew deadline, counted from the start of the last successful renewal, on this
        elector's clock and without a request; 0 when not leading. The Lease stays ours in every other
        candidate's eyes for at least ``lease_duration`` from that start, so this leaves a margin of
        ``lease_duration - renew_deadline`` (a shard member's write fence asks it before every write)."""
        end = self._tenure_end  # no lock: a shard member's fence asks before every request of every pass
        if end is None:
            return 0.0
        return max(0.0, (end - self._clock.now()).total_seconds())

    def release(self) -> None:
        """Stop leading and clear the holder, so a follower need not wait for the lease to expire.

        Call it after the workers have stopped: nothing may reconcile once the Lease is released.
        """
        with self._lock:
            was_leading = self._leading
            if was_leading:
                self._stop_leading("the Lease is being released", lost=False)
        if not was_leading:
            return
        now = self._clock.now()
        try:
            lease = self._get()
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.settings.identity:
                return
            self._cluster.update({**lease, "spec": {**spec, "holderIdentity": "", "leaseDurationSeconds": 1,
                                                    "acquireTime": micro_time(now), "renewTime": micro_time(now)}})
            self._log.info("released the Lease %s/%s of %s", self.settings.namespace, self.settings.name, self._role)
        except ApiError as exc:
            self._log.warning("could not release the leader Lease (it expires by itself): %s", exc)

    # -- the loop -------------------------------------------------------------

    def run(self, stop: threading.Event, *, until_lost: bool = False) -> None:
        """Try every retry period until ``stop`` is set; a watchdog enforces the renew deadline meanwhile.
        until_lost: return as soon as a tenure ends (leading, then no longer), too.

        Does not release the Lease: the caller does, once its workers have stopped.
        """
        halt = threading.Event()
        rounds = threading.Thread(target=self._rounds, args=(stop, halt), name="leader election", daemon=True)
        rounds.start()
        try:
            while not stop.wait(self._watchdog_wait()):
                self.check_deadline()
                if until_lost and self._ended:
                    return
        finally:
            halt.set()
            rounds.join(self.settings.retry_period)

    def _watchdog_wait(self) -> float:
        """Seconds until the watchdog looks again: until the renew deadline while leading, at most a retry period
        (a tenure the rounds ended is noticed within one), at least ``WATCHDOG_INTERVAL``; a wake-up every
        ``WATCHDOG_INTERVAL`` instead was 20 a second per elector, two per shard member."""
        period = self.settings.retry_period
        if self._tenure_end is None:  # not leading, or no renewal yet
            return period
        return min(period, max(WATCHDOG_INTERVAL, self.tenure_left()))

    def _rounds(self, stop: threading.Event, halt: threading.Event) -> None:
        while not (stop.is_set() or halt.is_set()):
            try:
                self.step()
            except Exception:  # the election must outlive any one failure
                self._log.exception("leader election round failed")
            halt.wait(self.settings.retry_period)

    # -- internals ------------------------------------------------------------

    def _try_acquire_or_renew(self, now: dt.datetime) -> str:
        """``held`` (we hold the Lease now), ``taken`` (another holder's lease is valid) or ``failed``."""
        if self._renew_as_written(now):
            return "held"
        if self._taken_as_watched(now):
            return "taken"
        mine = self._record(now, acquired=now, transitions=0)
        try:
            lease = self._get()
        except NotFound:
            with self._lock:
                if self._retired:
                    return "failed"
            try:
                created = self._cluster.create({
                    "apiVersion": LEASE_API_VERSION, "kind": LEASE_KIND,
                    "metadata": {"namespace": self.settings.namespace, "name": self.settings.name,
                                 **({"labels": dict(self.settings.labels)} if self.settings.labels else {}),
                                 **({"annotations": self._annotations()} if self._annotations is not None else {})},
                    "spec": mine,
                })
            except ApiError as exc:
                self._log.info("could not create the leader Lease: %s", exc)
                return "failed"
            self._observe(created.get("spec") or mine, now, _version(created))
            self._wrote(created)
            return "held"
        except ApiError as exc:
            self._log.warning("could not read the leader Lease: %s", exc)
            return "failed"
        spec: dict[str, Any] = dict(lease.get("spec") or {})
        self._observe(spec, now, _version(lease))
        holder = str(spec.get("holderIdentity") or "")
        if holder and holder != self.settings.identity and not self._expired(spec, now):
            return "taken"
        transitions = int(spec.get("leaseTransitions") or 0)
        with self._lock:
            if self._retired:
                return "failed"
        if holder == self.settings.identity:
            record = self._record(now, acquired=None, transitions=transitions)
            record["acquireTime"] = spec.get("acquireTime") or micro_time(now)
        else:
            record = self._record(now, acquired=now, transitions=transitions + 1)
        try:
            # a read is read-only (decision 37): the update is a new object
            updated = self._cluster.update(self._annotated({**lease, "spec": record}))
        except ApiError as exc:
            self._log.info("could not %s the leader Lease: %s",
                           "renew" if holder == self.settings.identity else "acquire", exc)
            return "failed"
        self._observe(updated.get("spec") or record, now, _version(updated))
        self._wrote(updated)
        return "held"

    def _taken_as_watched(self, now: dt.datetime) -> bool:
        """While not leading: whether the watched Lease shows another holder whose lease is valid, in a record no
        older than the newest one read (no request). Anything else (absent, released, expired, ours, a watch that
        cannot say or lags) is decided on a live read, as every acquisition is."""
        if self._watched is None:
            return False
        with self._lock:
            if self._leading or self._retired:
                return False
            seen = self._observed_version
        try:
            lease = self._watched(self.settings.name)
        except LookupError:
            return False
        version = _version(lease) if lease is not None else None
        if lease is None or version is None or (seen is not None and version < seen):
            return False
        spec: dict[str, Any] = dict(lease.get("spec") or {})
        holder = str(spec.get("holderIdentity") or "")
        if not holder or holder == self.settings.identity:
            return False
        self._observe(spec, now, version)
        return not self._expired(spec, now)

    def _renew_as_written(self, now: dt.datetime) -> bool:
        """While leading: renew by updating the Lease as last written (its resourceVersion the precondition), with no
        read first. False when not leading or when the update fails (changed meanwhile, an API error): the caller
        reads the Lease and decides, as any candidate does."""
        with self._lock:
            written = self._written if self._leading and not self._retired else None
        if written is None:
            return False
        spec = dict(written.get("spec") or {})
        record = self._record(now, acquired=None, transitions=int(spec.get("leaseTransitions") or 0))
        record["acquireTime"] = spec.get("acquireTime") or micro_time(now)
        try:
            updated = self._cluster.update(self._annotated({**written, "spec": record}))
        except ApiError as exc:
            self._log.debug("could not renew the Lease as last written (%s); reading it", exc)
            with self._lock:
                self._written = None
            return False
        self._observe(updated.get("spec") or record, now, _version(updated))
        self._wrote(updated)
        return True

    def _annotated(self, lease: Obj) -> Obj:
        """The Lease to write, carrying the annotations asked for (the others it has kept)."""
        if self._annotations is None:
            return lease
        meta = dict(lease.get("metadata") or {})
        kept = meta.get("annotations")
        meta["annotations"] = {**(kept if isinstance(kept, dict) else {}), **self._annotations()}
        return {**lease, "metadata": meta}

    def _wrote(self, lease: Obj) -> None:
        with self._lock:
            self._written = lease

    def _get(self) -> Obj:
        return self._cluster.get(LEASE_API_VERSION, LEASE_KIND, self.settings.namespace, self.settings.name, live=True)

    def _record(self, now: dt.datetime, *, acquired: dt.datetime | None, transitions: int) -> dict[str, Any]:
        record: dict[str, Any] = {
            "holderIdentity": self.settings.identity,
            "leaseDurationSeconds": self.settings.lease_seconds,
            "renewTime": micro_time(now),
            "leaseTransitions": transitions,
        }
        if acquired is not None:
            record["acquireTime"] = micro_time(acquired)
        return record

    def _observe(self, spec: dict[str, Any], now: dt.datetime, version: int | None = None) -> None:
        """Remember the record and when we first saw it: expiry counts from then, on our clock."""
        with self._lock:
            if version is not None:
                self._observed_version = version
            if spec != self._observed_spec:
                self._observed_spec = copy.deepcopy(spec)
                self._observed_at = now

    def _expired(self, spec: dict[str, Any], now: dt.datetime) -> bool:
        with self._lock:
            seen = self._observed_at or now
        seconds = spec.get("leaseDurationSeconds") or self.settings.lease_seconds
        return seen + dt.timedelta(seconds=float(seconds)) <= now

    def _holder(self) -> str:
        return str((self._observed_spec or {}).get("holderIdentity") or "")

    def _check_deadline_locked(self) -> None:
        if not self._leading or self._renewed_at is None:
            return
        late = self._clock.now() - self._renewed_at
        if late >= dt.timedelta(seconds=self.settings.renew_deadline):
            self._stop_leading(f"no renewal for {late.total_seconds():.1f}s (renew deadline "
                               f"{self.settings.renew_deadline}s)")

    def _start_leading(self) -> None:
        self._leading = True
        if self._renewed_at is not None:
            self._tenure_end = self._renewed_at + dt.timedelta(seconds=self.settings.renew_deadline)
        if self._metrics is not None:
            self._metrics.set_leader(True)
        self._log.info("became %s (Lease %s/%s, identity %s)", self._role,
                       self.settings.namespace, self.settings.name, self.settings.identity)
        self._on_started()

    def _stop_leading(self, why: str, *, lost: bool = True) -> None:
        self._tenure_end = None
        self._leading = False
        self._ended = True
        self._written = None
        self._on_stopped()
        if self._metrics is not None:
            self._metrics.set_leader(False)
        self._log.log(logging.WARNING if lost else logging.INFO, "no longer %s: %s", self._role, why)
