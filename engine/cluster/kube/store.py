"""The objects one informer has seen: keyed by (namespace, name), indexed by label, at a resourceVersion.

Reads cost what they answer, not what the store holds: objects are indexed by namespace and by label, and a select
walks the smallest index set its namespace and equality clauses name, copying none of them.

The store only ever reflects the watch stream, so it is a consistent snapshot at ``position`` (the resourceVersion
a watch resumes from). Read-your-writes comes from *expectations* instead of from writing responses into the
store: after a write, reads wait until the stream has delivered it, at most a timeout after the write, then read
live until it is delivered (decision 0048). Objects keep only the Apply entries of managedFields and are handed out
as they are: what a read answers is read-only to its caller (``engine.cluster.readonly``).
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from engine.cluster.api import Obj, WatchEvent
from engine.cluster.projection import project
from engine.cluster.readonly import handed_out
from engine.cluster.selectors import FieldSelector, Selector

Key = tuple[str, str]
"""(namespace or "", name)."""

_T = TypeVar("_T")


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def version_number(value: Any) -> int | None:
    """A resourceVersion as a number, when it is one (etcd's are; the API calls them opaque)."""
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def rv_of(obj: Obj) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv else None


SHORT_TEXT = 16
"""String values up to this length are interned too (condition types, statuses, reasons, kinds)."""


def interned(value: _T) -> _T:
    """JSON-shaped data with every short string value interned, in place; the map keys as they were decoded.

    The keys were a third of what the caches held per order (16 of 44 KiB in the benchmark): the kube client's
    decoder (orjson, ``codec``) hands out one copy of each key it decoded recently, so every cached object shares
    one ``"metadata"``, one ``"lastTransitionTime"`` without a walk rebuilding each map (that walk was three
    quarters of a watch event's CPU). Short values are interned here: every cached object shares one ``"True"``,
    one ``"Ready"``. Every watch event goes through here, so a scalar value costs no call of its own, values are
    replaced where they stand (a map keeps its keys and size), and containers are told apart by exact type (what
    the decoder makes: a dict or list subclass is kept as it is, not walked)."""
    kind = type(value)
    if kind is dict:
        _intern_map(value)  # type: ignore[arg-type]
    elif kind is list:
        _intern_list(value)  # type: ignore[arg-type]
    elif kind is str and len(value) <= SHORT_TEXT:  # type: ignore[arg-type]
        return _intern(value)  # type: ignore[call-overload, no-any-return]
    return value


def _intern_map(value: dict[str, Any]) -> None:
    for key, item in value.items():  # values replaced in place: the keys (and the dict's size) stay as they are
        kind = type(item)
        if kind is str:
            if len(item) <= SHORT_TEXT:
                value[key] = _intern(item)
        elif kind is dict:
            if key != "fieldsV1":  # a managedFields entry's field set: maps down to empty maps, no value to share
                _intern_map(item)
        elif kind is list:
            _intern_list(item)


def _intern_list(value: list[Any]) -> None:
    for i, item in enumerate(value):
        kind = type(item)
        if kind is str:
            if len(item) <= SHORT_TEXT:
                value[i] = _intern(item)
        elif kind is dict:
            _intern_map(item)
        elif kind is list:
            _intern_list(item)


_intern = sys.intern


def _same_labels(old: Obj, new: Obj) -> bool:
    """Whether two versions of an object carry the same labels, each a string (as the indexes key them)."""
    before = (old.get("metadata") or {}).get("labels") or {}
    after = (new.get("metadata") or {}).get("labels") or {}
    # every value's type is str: the set of their types, built by map (no generator step per label, every event)
    return type(after) is dict and before == after and set(map(type, after.values())) <= _STR_ONLY


_STR_ONLY = frozenset({str})


def stripped(obj: Obj) -> Obj:
    """The object as the cache keeps it: of managedFields only the Apply entries (the engine reads
    what its field manager applied, to send an apply that drops a field; the rest is bulk)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta and not _slim(meta):
        obj = dict(obj)
        obj["metadata"] = slim_metadata(meta)
    return obj


def _slim(meta: Obj) -> bool:
    """Whether ``meta`` is as ``slim_metadata`` leaves it already (it is then kept as it is, not copied:
    an object the runtime's watch caches is the one object in memory, not one per cache)."""
    rows = meta.get("managedFields")
    return isinstance(rows, list) and bool(rows) and all(
        isinstance(row, dict) and row.get("operation") == "Apply" for row in rows)


def slim_metadata(meta: Obj) -> Obj:
    """``meta`` with only the managedFields entries of operation Apply (none: no managedFields)."""
    out = {k: v for k, v in meta.items() if k != "managedFields"}
    rows = meta.get("managedFields") or []
    applied = [row for row in rows if isinstance(row, dict) and row.get("operation") == "Apply"]
    if applied:
        out["managedFields"] = applied
    return out


@dataclass(frozen=True)
class Expectation:
    """A write the store must have seen before it may answer: a resourceVersion reached, or an
    object (by key, and uid when known) gone.

    ``about``: the object written (a deletion is about the object gone). A get of another object does not wait
    for it, a list waits for every expectation; None (what a watch event showed, ``expect_version``): every read
    waits."""

    version: int | None = None
    gone: Key | None = None
    uid: str | None = None
    about: Key | None = None
    labels: Mapping[str, Any] | None = None
    """The labels the written object (``about``) carries after the write."""
    since: float = field(default=0.0, compare=False)
    """When the write answered (``time.monotonic``; 0: now, as ``Store.expect`` records it): a read waits for it
    until ``timeout`` after that, then reads live."""

    @property
    def subject(self) -> Key | None:
        """The object the expectation is about (written or gone); None: none in particular."""
        return self.about if self.about is not None else self.gone


class Store:
    """Thread-safe; reads return the stored objects themselves, read-only to the caller (decision 37): the
    store never changes an object it holds (a new version replaces it), and no reader may."""

    def __init__(self, shape: Mapping[str, Any] | None = None) -> None:
        """shape: keep each object projected to it (``engine.cluster.projection.tree``); None keeps it whole."""
        self.shape = shape
        self._lock = threading.Lock()
        """Held for every read and change; ``with self._lock`` rather than ``with self._changed``: the condition's
        ``__enter__`` and ``__exit__`` are two Python calls more on every cached read and every watch event (they
        only take and release this same lock)."""
        self._changed = threading.Condition(self._lock)
        self._objects: dict[Key, Obj] = {}
        self._labels: dict[tuple[str, str], set[Key]] = {}
        self._namespaces: dict[str, set[Key]] = {}
        self._position: str = ""
        self._reached: int | None = None
        """``position`` as a number (None: not one), so a version check parses nothing."""
        self._general: list[Expectation] = []
        """Expectations about no object in particular (what a watch event showed): every read waits for them."""
        self._about: dict[Key, list[Expectation]] = {}
        """Expectations about one object (a write's, a deletion's), by that object: a get looks up its own only."""
        self._waiting = 0
        """Reads waiting on ``_changed`` now: an event wakes them only when there are some."""

    # -- fed by the informer --------------------------------------------------

    def replace(self, items: Iterable[Obj], resource_version: str) -> None:
        """Everything, as a list answered it."""
        with self._lock:
            self._objects.clear()
            self._labels.clear()
            self._namespaces.clear()
            for obj in items:
                self._put(obj)
            self._moved(resource_version)
            self._prune()
            self._changed.notify_all()

    def apply(self, event: WatchEvent, key: Key | None = None) -> None:
        """One watch event: ADDED or MODIFIED stores, DELETED removes, BOOKMARK only moves the position.
        key: the object's, when the caller has read it already."""
        obj = event["object"]
        kind = event["type"]
        with self._lock:
            if kind != "BOOKMARK":
                key = key_of(obj) if key is None else key
                if kind == "ADDED" or kind == "MODIFIED":
                    self._put(obj, key)
                elif kind == "DELETED":
                    self._drop(key)
            rv = rv_of(obj)
            if rv is not None:
                self._moved(rv)
            if self._about and key is not None and kind != "BOOKMARK":
                self._prune_about(key)  # the echo of a write (or the deletion) meets its expectations
            if self._general:
                self._general = [e for e in self._general if not self._met(e)]
            if self._waiting:
                self._changed.notify_all()  # only reads waiting for a write wait here, and only this wakes them

    def _moved(self, position: str) -> None:
        self._position = position
        try:  # version_number, inline: every watch event moves the position
            self._reached = int(str(position))
        except (TypeError, ValueError):
            self._reached = None

    def _put(self, obj: Obj, key: Key | None = None) -> None:
        if key is None:
            key = key_of(obj)
        obj = stripped(obj) if self.shape is None else project(obj, self.shape)
        old = self._objects.get(key)
        if old is not None and _same_labels(old, obj):  # a status or spec change: the indexes stay as they are
            self._objects[key] = obj
            return
        self._drop(key)
        self._objects[key] = obj
        self._namespaces.setdefault(key[0], set()).add(key)
        for label in ((obj.get("metadata") or {}).get("labels") or {}).items():
            self._labels.setdefault((str(label[0]), str(label[1])), set()).add(key)

    def _drop(self, key: Key) -> None:
        old = self._objects.pop(key, None)
        if old is None:
            return
        in_namespace = self._namespaces.get(key[0])
        if in_namespace is not None:
            in_namespace.discard(key)
            if not in_namespace:
                del self._namespaces[key[0]]
        for label in ((old.get("metadata") or {}).get("labels") or {}).items():
            members = self._labels.get((str(label[0]), str(label[1])))
            if members is not None:
                members.discard(key)
                if not members:
                    del self._labels[(str(label[0]), str(label[1]))]

    # -- read-your-writes -----------------------------------------------------

    def expect(self, expectation: Expectation) -> None:
        """A read must wait until this write is visible (satisfied ones are never recorded)."""
        if not expectation.since:
            expectation = dataclasses.replace(expectation, since=time.monotonic())
        with self._lock:
            if not self._met(expectation):
                subject = expectation.subject
                if subject is None:
                    self._general.append(expectation)
                else:
                    self._about.setdefault(subject, []).append(expectation)

    def expect_version(self, version: int) -> None:
        """``expect`` of a resourceVersion reached, without building the expectation when it is (every watch
        event asks this of the cache it has just fed)."""
        with self._lock:
            reached = self._reached
            if reached is not None and reached < version:
                self._general.append(Expectation(version=version))

    def settle(self, timeout: float, key: Key | None = None,
               listing: tuple[str | None, Selector] | None = None) -> bool:
        """Wait until the expected writes a read depends on are visible; False when the read must go live instead.
        ``key``: a get's, which waits for the writes of that object; ``listing``: a list's namespace (None: all) and
        label selector, which waits for the writes of objects it would answer before or after them; neither: every
        expected write. Expectations about no object in particular (what a watch event showed) hold every read, for
        ``timeout``, and are dropped when it passes.

        A write of an object is waited for until ``timeout`` after the write; a read that needs one older than that
        reads live at once, and the expectation stays until the watch delivers the write. So a watch that lags
        costs each read at most what is left of the write's timeout, and no read, of that object or another,
        ever answers a copy older than this cluster's own write (decision 0048).

        Every cached read asks, and most find nothing they wait for: that answer takes no lock (expectations are
        only added by the writing thread before its write returns, so a thread sees its own) and, for a get, looks
        at its own object's expectations only. Read-your-writes is per object (decision 0041): with several workers
        writing, some write of the kind is nearly always on its way, and waiting for all of them would make most
        reads wait for the watch."""
        if not self._general and (not self._about or (key is not None and key not in self._about)):
            return True
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                if self._general:
                    self._general = [e for e in self._general if not self._met(e)]
                pending = self._pending(key, listing)
                if not self._general and not pending:
                    return True
                now = time.monotonic()
                until = min(min((e.since for e in pending), default=deadline) + timeout, deadline)
                if until <= now:
                    if now >= deadline:
                        self._general = []  # what a watch event showed, waited for in vain: no later read waits
                    return False
                self._waiting += 1
                try:
                    self._changed.wait(until - now)
                finally:
                    self._waiting -= 1

    def _pending(self, key: Key | None, listing: tuple[str | None, Selector] | None) -> list[Expectation]:
        """The unmet expectations about objects that a read (``settle``'s ``key`` or ``listing``) waits for (lock
        held)."""
        if key is not None:
            self._prune_about(key)
            return self._about.get(key, [])
        self._prune()
        if listing is None:
            return [e for pending in self._about.values() for e in pending]
        return [e for pending in self._about.values() for e in pending if self._listed_by(e, *listing)]

    def _prune_about(self, key: Key) -> None:
        """Drop the met expectations about one object (lock held)."""
        pending = self._about.get(key)
        if pending is not None:
            kept = [e for e in pending if not self._met(e)]
            if kept:
                self._about[key] = kept
            else:
                del self._about[key]

    def _prune(self) -> None:
        """Drop every met expectation (lock held): a list's wait, a list from the server."""
        self._general = [e for e in self._general if not self._met(e)]
        for key in list(self._about):
            self._prune_about(key)

    def _listed_by(self, expectation: Expectation, namespace: str | None, selector: Selector) -> bool:
        """Whether a list must wait for this expectation: it names no object, or the object it names is in the list's
        namespace and matches its selector after the write or as the store holds it now (a write that took the
        object out of the selection must be seen as much as one that put it in)."""
        subject = expectation.subject
        if subject is None:
            return True
        if namespace is not None and subject[0] != namespace:
            return False
        if expectation.about is not None and selector.matches(expectation.labels):
            return True
        held = self._objects.get(subject)
        return held is not None and selector.matches_object(held)

    def _met(self, expectation: Expectation) -> bool:
        if expectation.version is not None:
            position = self._reached
            if position is not None and position < expectation.version:
                return False
        if expectation.gone is not None:
            found = self._objects.get(expectation.gone)
            if found is not None and (expectation.uid is None or (found.get("metadata") or {}).get("uid")
                                      == expectation.uid):
                return False
        return True

    # -- reads ------------------------------------------------------------------

    @property
    def position(self) -> str:
        with self._lock:
            return self._position

    def uid_at(self, key: Key) -> str | None:
        with self._lock:
            found = self._objects.get(key)
            return None if found is None else (found.get("metadata") or {}).get("uid")

    def get(self, key: Key) -> Obj | None:
        with self._lock:
            found = self._objects.get(key)
            return None if found is None else handed_out(found)

    def select(self, namespace: str | None, labels: Selector, fields: FieldSelector) -> tuple[list[Obj], str]:
        """Matching objects ordered by namespace then name (as the API server lists), and the position."""
        with self._lock:
            keys = self._candidates(namespace, labels)
            found = [
                handed_out(self._objects[key])
                for key in sorted(keys)
                if (namespace is None or key[0] == namespace)
                and labels.matches_object(self._objects[key]) and fields.matches(self._objects[key])
            ]
            return found, self._position

    def _candidates(self, namespace: str | None, labels: Selector) -> Collection[Key]:
        """The smallest index set that holds every match: the namespace's keys or an equality (or set)
        clause's, whichever is smallest (all keys when there is neither). The sets are read, never copied or
        intersected, so a select by a rare label costs its few matches whatever the store holds; the caller
        checks every clause on each candidate."""
        smallest: Collection[Key] = self._objects.keys()
        if namespace is not None:
            smallest = self._namespaces.get(namespace, ())
        size = len(smallest)
        for requirement in labels.requirements:
            if size == 0:
                break
            if requirement.operator not in ("=", "in"):
                continue
            sets = [self._labels.get((requirement.key, value), ()) for value in requirement.values]
            count = sum(len(members) for members in sets)
            if count < size:
                smallest = sets[0] if len(sets) == 1 else {key for members in sets for key in members}
                size = count
        return smallest

    def keys(self) -> list[Key]:
        with self._lock:
            return list(self._objects)

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)
