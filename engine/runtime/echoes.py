"""Watch events that only echo a pass's own writes: recognised, and not queued for that order again.

A pass that writes a child sees the answer of its write; the watch event the write causes carries that same
object (the same resourceVersion), so it tells the pass's order nothing new, and queueing it only runs a pass that
finds everything done (decision 0022). The cluster tells the ledger (``Echoes``) of each write a pass sends and of
its answer, and of every object a pass reads; the informers ask it which order an event echoes, and that order
alone is not woken by it. An event that arrives while its order's pass runs is held for that pass, and does not
wake it again if the pass already saw it. ``Echoes`` says how writes in flight, removals and re-lists are handled.
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from engine.cluster.api import Obj
from engine.outcome import Request

CURRENT_PASS: contextvars.ContextVar[Request | None] = contextvars.ContextVar("current_pass", default=None)
"""The order whose pass runs on this thread (set by the controller around each pass)."""

LIMIT = 100_000
"""Answered writes remembered until their echo arrives (the oldest is forgotten first: it only costs a pass)."""

Key = tuple[str, str, str, str, str]
"""(cluster, API group, kind, namespace or "", name) of a written object."""


@dataclass
class _Pass:
    """What one running pass read, and the events on its order held until it ends."""

    request: Request
    present: dict[Key, int] = field(default_factory=dict)
    """The oldest resourceVersion the pass read of each object it found (-1: not a number)."""
    absent: set[Key] = field(default_factory=set)
    """Objects a read of the pass found absent."""
    written: set[Key] = field(default_factory=set)
    """Objects the pass wrote: found absent before, they exist after, so their removal is news."""
    held: list[tuple[Key, int | None, bool]] = field(default_factory=list)
    """Events on the order while the pass ran: (object, resourceVersion, whether it was a removal)."""
    converging: bool = False
    """The pass read its order and found it not being deleted (a converge pass, not a teardown)."""

    def saw(self, key: Key, rv: int | None, removed: bool) -> bool:
        """Whether every read of the object shows this event's state or a later one."""
        if removed:
            return key in self.absent and key not in self.present and key not in self.written
        oldest = self.present.get(key)
        return oldest is not None and rv is not None and key not in self.absent and oldest >= rv


_RUNNING: contextvars.ContextVar[_Pass | None] = contextvars.ContextVar("running_pass", default=None)
"""The pass running on this thread whose reads the ledger records (``begin``/``end``)."""


@dataclass
class _InFlight:
    request: Request
    held: list[str] = field(default_factory=list)
    """resourceVersions of events on the object seen while the write was in flight."""
    unlisted: tuple[int | None, Callable[[Mapping[str, str]], bool]] | None = None
    """The last list of the object's kind and namespace made meanwhile did not hold it: (its resourceVersion, None
    if not a number; whether its labels select an object)."""


def _number(rv: str) -> int | None:
    try:
        return int(rv)
    except ValueError:
        return None


def _unlisted_after(unlisted: tuple[int | None, Callable[[Mapping[str, str]], bool]], rv: str,
                    labels: Mapping[str, str]) -> bool:
    """Whether a list that did not hold an object was answered after a write of it left it at ``rv`` with ``labels``
    (in the list's labels: a list answered before the write, or of other labels, could not hold it)."""
    at, selects = unlisted
    mine = _number(rv)
    return (at is None or mine is None or mine <= at) and selects(labels)


def _key(cluster: str, api_version: str, kind: str, namespace: str | None, name: str) -> Key:
    return (cluster, api_version.rpartition("/")[0], kind, namespace or "", name)


class Echoes:
    """The ledger of the passes' writes and their echoes, for every engaged cluster. Thread-safe.

    A pass that writes a child sees the answer of its write; the watch event the write causes carries that same object
    (the same resourceVersion), so it tells the pass's order nothing new, and queueing it only runs a pass that finds
    everything done. The cluster tells this ledger of each write a pass sends (``sending``) and of its answer
    (``answered``); the runtime's informers ask it, for each event, which order it echoes (``echo_of``), and that
    order alone is not woken by it: every other order the event maps to still is, and so is the writer for any other
    event on the object. A foreign edit right after our write has another resourceVersion, so it wakes the order as
    before.

    An event can arrive before the write's answer does (the watch and the answer race). While a write is in flight,
    the events on its object are held for the writer: once the answer is in, those with another resourceVersion wake
    it, the one with the answer's resourceVersion does not; a write that fails wakes it for all of them. The order's
    own object is not tracked: its echoes (the finalizer added) keep waking it, as the seeds' watch on the order does.
    A delete that finalizers hold is a write like the others (its answer, the object with its deletionTimestamp, is
    what its echo carries); the object's removal later is a change of its own and wakes the writer.

    An event that arrives while its order's pass runs is held for that pass (``held_by_pass``) rather than marking the
    order for another pass at once: the cluster tells the ledger of every object a pass reads (``read``), and when the
    pass ends (``end``) an event it already saw does not wake it again. The pass saw an event when every read it made
    of that object came from the event's state or a later one (the caches take an event before the runtime maps it),
    or, for a removal, when every read found the object absent and the pass did not write it (a pass that found it
    absent and then created it did not see it removed). An event on an object the pass never read still wakes it (a
    list the pass made may have missed it).

    A removal is never an echo by its resourceVersion (a re-list maps one with the last state the cache held, which
    may carry a write's). A watch's list tells the ledger what it holds (``listed``): a write still waiting for its
    echo on an object in the list's scope, written before the list and held neither by it nor by the cache, wakes its
    writer.
    """

    def __init__(self, wake: Callable[[Request, str], None], *, limit: int = LIMIT) -> None:
        """wake: queues an order (an event held for a write turned out not to be its echo, or a pass did not see
        it), with the kind of that event's object."""
        self._wake = wake
        self._limit = limit
        self._lock = threading.Lock()
        self._in_flight: dict[Key, _InFlight] = {}
        self._answered: OrderedDict[Key, tuple[str, Request, bool, Mapping[str, str]]] = OrderedDict()
        """Answered writes: (resourceVersion, writer, whether a converge pass left the object being deleted, the labels
        the write left it with)."""
        self._passes: dict[Request, _Pass] = {}

    def observer(self, cluster: str) -> ClusterWrites:
        """What one cluster tells of its writes (``KubeCluster.observe_writes``)."""
        return ClusterWrites(self, cluster)

    # -- the writes ---------------------------------------------------------------

    def sending(self, cluster: str, api_version: str, kind: str, namespace: str | None, name: str) -> Key | None:
        """A pass is about to write this object: a ticket for ``answered``, or None when it is not tracked
        (no pass runs here, the object is the pass's own order, or another pass writes it now)."""
        request = CURRENT_PASS.get()
        if request is None or not name:
            return None
        key = _key(cluster, api_version, kind, namespace, name)
        running = _RUNNING.get()
        if running is not None:
            running.written.add(key)  # before any early return: a write the ledger does not track still counts
        order_api_version, _, order_kind = request.kind.rpartition("/")
        if (request.cluster, request.namespace, request.name, order_kind) == (cluster, namespace or "", name, kind) \
                and order_api_version.rpartition("/")[0] == api_version.rpartition("/")[0]:
            return None
        with self._lock:
            if key in self._in_flight:
                return None
            self._in_flight[key] = _InFlight(request)
            self._answered.pop(key, None)
        return key

    def answered(self, ticket: Key, obj: Obj | None, *, deleted: bool = False) -> None:
        """The write's answer (None: it failed). Events held meanwhile that are not its echo wake the writer.

        deleted: the write was a delete that finalizers hold; when a converge pass (not a teardown) sent it, the
        object's removal later may be quiet for the writer (``echo_of``)."""
        meta = (obj.get("metadata") or {}) if obj is not None else {}
        rv = str(meta.get("resourceVersion") or "")
        with self._lock:
            flight = self._in_flight.pop(ticket, None)
            if flight is None:
                return
            others = [held for held in flight.held if not rv or held != rv]
            labels = meta.get("labels")
            labels = labels if isinstance(labels, dict) else {}
            # A list of its kind made after the write did not hold the object: it went, and no event will say so.
            gone = bool(rv) and flight.unlisted is not None and _unlisted_after(flight.unlisted, rv, labels)
            running = _RUNNING.get()
            deleting = deleted and running is not None and running.converging and running.request == flight.request
            if rv and not gone and (rv not in flight.held or deleting):  # a delete's entry waits for the removal
                self._answered[ticket] = (rv, flight.request, deleting, labels)
                while len(self._answered) > self._limit:
                    self._answered.popitem(last=False)
        if others or gone:
            self._wake(flight.request, ticket[2])

    # -- the passes ----------------------------------------------------------------

    def begin(self, request: Request) -> contextvars.Token[_Pass | None]:
        """A pass of ``request`` starts on this thread: its reads are recorded, its order's events held."""
        running = _Pass(request)
        with self._lock:
            self._passes[request] = running
        return _RUNNING.set(running)

    def end(self, token: contextvars.Token[_Pass | None]) -> None:
        """The pass ends: any event held for it that it did not see wakes its order (it is still processing,
        so the queue runs it again once the pass is done)."""
        running = _RUNNING.get()
        _RUNNING.reset(token)
        if running is None:
            return
        with self._lock:
            self._passes.pop(running.request, None)
        unseen = next((event for event in running.held if not running.saw(*event)), None)
        if unseen is not None:
            self._wake(running.request, unseen[0][2])

    def read(self, cluster: str, api_version: str, kind: str, namespace: str | None, name: str,
             obj: Obj | None) -> None:
        """A read of the pass running on this thread found ``obj`` (None: found nothing)."""
        running = _RUNNING.get()
        if running is None:
            return
        key = _key(cluster, api_version, kind, namespace, name)
        if obj is None:
            running.absent.add(key)
            return
        request = running.request
        if request.name == name and request.cluster == cluster and request.namespace == (namespace or "") \
                and request.kind == f"{api_version}/{kind}":
            running.converging = not (obj.get("metadata") or {}).get("deletionTimestamp")
        rv = _number(str((obj.get("metadata") or {}).get("resourceVersion") or ""))
        rv = -1 if rv is None else rv
        oldest = running.present.get(key)
        if oldest is None or rv < oldest:
            running.present[key] = rv

    def held_by_pass(self, request: Request, cluster: str, api_version: str, kind: str, obj: Obj,
                     removed: bool) -> bool:
        """Hold an event for ``request``'s running pass (True), or False when none runs: queue it."""
        if request not in self._passes:
            return False
        meta = obj.get("metadata") or {}
        key = _key(cluster, api_version, kind, meta.get("namespace"), str(meta.get("name") or ""))
        rv = _number(str(meta.get("resourceVersion") or ""))
        with self._lock:
            running = self._passes.get(request)
            if running is None:
                return False
            running.held.append((key, rv, removed))
        return True

    # -- the events ----------------------------------------------------------------

    def echo_of(self, cluster: str, api_version: str, kind: str, obj: Obj, *,
                quiet: Callable[[Request], bool] | None = None,
                at: tuple[tuple[str, str], str] | None = None) -> Request | None:
        """The order this event must not wake: the writer of a write it echoes, or of a write in flight on
        its object (held until the answer says). None: it wakes whatever it maps to.

        quiet (given for a removal, and only then): whether the order's rules say this child's removal changes
        nothing for them (``children.quietRemoval``); when the order's converge pass deleted it, its removal is an
        echo too. A removal is never matched by its resourceVersion: a re-list maps one with the last state the
        cache held, which may carry the resourceVersion a write answered (the delete's deletionTimestamp, a write
        that changed nothing).
        at: ((namespace or "", name), resourceVersion) of ``obj``, when the caller has read them already."""
        if at is None:
            meta = obj.get("metadata") or {}
            at = ((meta.get("namespace") or "", str(meta.get("name") or "")), str(meta.get("resourceVersion") or ""))
        (namespace, name), rv = at
        if not rv:
            return None
        key = (cluster, api_version.rpartition("/")[0], kind, namespace, name)
        removed = quiet is not None
        with self._lock:
            flight = self._in_flight.get(key)
            if flight is not None:
                flight.held.append("" if removed else rv)  # a removal held for a write wakes it at the answer
                return flight.request
            answered = self._answered.get(key)
            if answered is None:
                return None
            written, request, deleting, _ = answered
            if rv == written and not removed:
                if not deleting:
                    del self._answered[key]  # a converge pass's delete is kept for the object's removal
                return request
            if deleting and quiet is not None and quiet(request):
                del self._answered[key]
                return request
            seen, mine = _number(rv), _number(written)
            if seen is None or mine is None or seen > mine:
                del self._answered[key]  # a later change: ours was echoed already, or will never be
            return None  # an older event (before our write) or a later one: it wakes the writer

    def listed(self, cluster: str, api_version: str, kind: str, namespace: str | None,
               selects: Callable[[Mapping[str, str]], bool], held: Collection[tuple[str, str]],
               resource_version: str) -> None:
        """A watch's list of this kind and scope (namespace, the labels ``selects``), answered at ``resource_version``,
        and ``held``: the (namespace, name) of every object it holds or its cache held before (their changes map as
        events). A write a pass made before that list on an object in the scope that neither holds waits for an echo
        no watch will carry (the object was removed, or left the scope, while no watch was open, or while it had
        expired): its writer is woken, and the entry forgotten. A write still in flight is judged so at its answer."""
        at = _number(resource_version)
        group = api_version.rpartition("/")[0]
        woken: list[Request] = []
        with self._lock:
            for key, flight in self._in_flight.items():
                if key[0] == cluster and key[1] == group and key[2] == kind and (not namespace or key[3] == namespace):
                    flight.unlisted = None if (key[3], key[4]) in held else (at, selects)
            for key, (written, request, _, labels) in list(self._answered.items()):
                if key[0] != cluster or key[1] != group or key[2] != kind or (key[3], key[4]) in held:
                    continue
                if (namespace and key[3] != namespace) or not selects(labels):
                    continue
                mine = _number(written)
                if at is not None and mine is not None and mine > at:
                    continue  # written after the list: the watch from its resourceVersion carries the echo
                del self._answered[key]
                woken.append(request)
        for request in dict.fromkeys(woken):
            self._wake(request, kind)

    def __len__(self) -> int:
        with self._lock:
            return len(self._in_flight) + len(self._answered)


@dataclass(frozen=True)
class ClusterWrites:
    """The ``WriteObserver`` of one cluster: its writes go to the ledger under its name."""

    echoes: Echoes
    cluster: str

    def sending(self, api_version: str, kind: str, namespace: str | None, name: str) -> object:
        return self.echoes.sending(self.cluster, api_version, kind, namespace, name)

    def answered(self, ticket: object, obj: Obj | None, *, deleted: bool = False) -> None:
        if ticket is not None:
            self.echoes.answered(ticket, obj, deleted=deleted)  # type: ignore[arg-type]

    def read(self, api_version: str, kind: str, namespace: str | None, name: str, obj: Obj | None) -> None:
        self.echoes.read(self.cluster, api_version, kind, namespace, name, obj)
