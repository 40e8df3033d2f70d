"""A readable timeline of one order and its children, read from the cluster's watch streams.

Every line is stamped with the simulated time since the story began. It prints what a
reader needs to follow the order (its conditions, status fields, finalizers, deletion, and its
children coming, changing and going) and never a value of a Secret: a changed Secret reads
"password changed", naming keys only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from engine.clock import Clock
from engine.cluster.api import Cluster, Obj, WatchEvent

_QUIET_STATUS = {"conditions", "observedGeneration"}


@dataclass(frozen=True)
class Stream:
    """One watch the timeline follows: a kind in a namespace, optionally narrowed by labels or name."""

    api_version: str
    kind: str
    namespace: str
    labels: Mapping[str, str] | None = None
    name: str | None = None
    order: bool = False
    """The order itself (conditions and status are told); otherwise a child."""


class Timeline:
    """Prints changes as they happen; ``drain`` reads every event since the last drain, in order."""

    def __init__(self, cluster: Cluster, clock: Clock, streams: Sequence[Stream], out: TextIO) -> None:
        self.cluster = cluster
        self.clock = clock
        self.start = clock.now()
        self.streams = tuple(streams)
        self.out = out
        self._seen: dict[tuple[str, str, str], Obj] = {}
        self._cursor = self._now_cursor()

    def stamp(self) -> str:
        """``+HH:MM:SS`` since the story began."""
        seconds = int((self.clock.now() - self.start) / dt.timedelta(seconds=1))
        return f"+{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"

    def say(self, text: str) -> None:
        self.out.write(f"{self.stamp()}  {text}\n")

    def section(self, title: str) -> None:
        self.out.write(f"\n== {title}\n")

    def note(self, text: str) -> None:
        """An unstamped remark under the current section."""
        self.out.write(f"           {text}\n")

    def drain(self) -> None:
        """Tell every change since the last drain, in the order the cluster made them."""
        events: list[tuple[int, Stream, WatchEvent]] = []
        for stream in self.streams:
            for event in self.cluster.watch(
                stream.api_version, stream.kind, stream.namespace,
                resource_version=self._cursor, labels=stream.labels, timeout=0,
            ):
                obj = event["object"]
                if stream.name is not None and obj["metadata"].get("name") != stream.name:
                    continue
                events.append((int(obj["metadata"]["resourceVersion"]), stream, event))
        for _, stream, event in sorted(events, key=lambda item: item[0]):
            self._tell(stream, event)
        self._cursor = self._now_cursor() if not events else str(max(rv for rv, _, _ in events))

    def _now_cursor(self) -> str:
        first = self.streams[0]
        return self.cluster.list(first.api_version, first.kind, first.namespace).resource_version

    def _tell(self, stream: Stream, event: WatchEvent) -> None:
        obj = event["object"]
        meta = obj["metadata"]
        ident = (obj["kind"], meta.get("namespace", ""), meta["name"])
        what = f"{obj['kind']} {meta.get('namespace')}/{meta['name']}"
        old = self._seen.get(ident)
        if event["type"] == "DELETED":
            self._seen.pop(ident, None)
            self.say(f"{what} is gone" if stream.order else f"deleted {what}")
            return
        self._seen[ident] = obj
        if old is None or event["type"] == "ADDED":
            self.say(f"created {what}")
            old = {"metadata": {}}
        if stream.order:
            for line in _order_lines(old, obj):
                self.say(f"{what}  {line}")
        else:
            for line in _child_lines(what, old, obj):
                self.say(line)


def _order_lines(old: Obj, new: Obj) -> list[str]:
    """The order's finalizers, deletion, conditions and status fields, as they changed."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    lines = _finalizer_lines(old_meta, new_meta)
    if new_meta.get("deletionTimestamp") and not old_meta.get("deletionTimestamp"):
        lines.append(f"deletion requested; held by finalizer {', '.join(new_meta.get('finalizers') or ())}")
    return lines + _order_status_lines(old.get("status") or {}, new.get("status") or {})


def _child_lines(what: str, old: Obj, new: Obj) -> list[str]:
    """A child's deletion, data keys, spec and annotations as they changed (its status and
    finalizers belong to its controller, which tells them itself)."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    lines: list[str] = []
    if new_meta.get("deletionTimestamp") and not old_meta.get("deletionTimestamp"):
        lines.append(f"deleting {what} (held by finalizer {', '.join(new_meta.get('finalizers') or ())})")
    if not old_meta:
        return lines
    details: list[str] = []
    if new.get("kind") == "Secret":
        details += [f"{k} changed" for k in _changed_keys(old.get("data") or {}, new.get("data") or {})]
    else:
        details += [f"{path}: {a} -> {b}" for path, a, b in _leaf_changes(old.get("spec"), new.get("spec"))]
    old_notes, new_notes = old_meta.get("annotations") or {}, new_meta.get("annotations") or {}
    notes = sorted(k for k in new_notes if new_notes[k] != old_notes.get(k))
    if notes:
        details.append("annotation " + ", ".join(notes) + " set")
    if details:
        lines.append(f"updated {what} ({'; '.join(details)})")
    return lines


def _finalizer_lines(old_meta: Obj, new_meta: Obj) -> list[str]:
    before, after = list(old_meta.get("finalizers") or ()), list(new_meta.get("finalizers") or ())
    return [f"finalizer {f} added" for f in after if f not in before] + [
        f"finalizer {f} removed" for f in before if f not in after
    ]


def _order_status_lines(old: Obj, new: Obj) -> list[str]:
    lines: list[str] = []
    conditions = [(c.get("type"), c.get("status"), c.get("reason")) for c in new.get("conditions") or ()]
    if conditions != [(c.get("type"), c.get("status"), c.get("reason")) for c in old.get("conditions") or ()]:
        lines.append("  ".join(f"{t}={s}/{r}" for t, s, r in conditions))
    fields = [
        f"{name}={_show(new.get(name))}"
        for name in new
        if name not in _QUIET_STATUS and new.get(name) != old.get(name)
    ]
    fields += [f"{name} removed" for name in old if name not in _QUIET_STATUS and name not in new]
    if fields:
        lines.append("status " + " ".join(fields))
    return lines


def _show(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def _changed_keys(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Keys whose value changed, came or went; the values are never returned."""
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def _leaf_changes(old: Any, new: Any, path: str = "spec") -> list[tuple[str, Any, Any]]:
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[tuple[str, Any, Any]] = []
        for k in sorted(set(old) | set(new)):
            out += _leaf_changes(old.get(k), new.get(k), f"{path}.{k}")
        return out
    return [] if old == new else [(path, old, new)]
