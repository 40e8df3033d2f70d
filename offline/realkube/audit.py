"""What a real API server served to some users, read from its audit log: the real server's request log.

The emulator keeps a request log of its own (``offline.emulator.requestlog``); a real kube-apiserver
writes an audit log instead. ``policy`` asks for one event per request stage of the named users at level
Metadata (no bodies: request bodies carry Secret data), and ``AuditLog`` reads the file back as the
emulator's ``RequestRecord`` s, so a test that judges an operator by what the server saw (who touched which
order when, which watches are open) reads either log the same way.

Times are the server's wall clock (``requestReceivedTimestamp`` and the ``ResponseComplete`` stage's), in
seconds since the epoch: the emulator's monotonic fields carry the wall clock here, so records of several
servers on one machine merge on one clock. A watch is open from its ``ResponseStarted`` event until its
``ResponseComplete``.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from engine.cluster.api import Obj
from offline.emulator.requestlog import RequestRecord

METHODS = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT", "patch": "PATCH",
           "delete": "DELETE", "deletecollection": "DELETE"}
"""The HTTP method of each audit verb (an apply is a ``patch``)."""


def policy(users: tuple[str, ...]) -> Obj:
    """An audit policy: every request of ``users`` at level Metadata, from the response's start on; nothing else."""
    return {
        "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
        "rules": [{"level": "Metadata", "users": list(users)}, {"level": "None"}],
    }


def _seconds(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp).timestamp()


class AuditLog:
    """The audit log file of one server, read as it grows (thread-safe); ``dropped`` is always 0 (the file keeps
    everything), as a request log that never overflowed."""

    dropped = 0

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._offset = 0
        self._records: list[RequestRecord] = []
        self._open: dict[str, RequestRecord] = {}
        """auditID -> every watch started and not yet ended (its ``ended`` is its start)."""

    def records(self) -> list[RequestRecord]:
        """Every request answered so far, in the order the server finished them."""
        with self._lock:
            self._read()
            return list(self._records)

    def open_records(self) -> list[RequestRecord]:
        """The watches open now (not answered in full yet: each one's ``ended`` is its start)."""
        with self._lock:
            self._read()
            return list(self._open.values())

    def open_watches(self) -> dict[tuple[str, str], int]:
        """The watch streams open now, by (path, label selector), as the emulator's ``open_watches``."""
        counted: dict[tuple[str, str], int] = {}
        for record in self.open_records():
            parts = urlsplit(record.path)
            key = (parts.path, dict(parse_qsl(parts.query)).get("labelSelector", ""))
            counted[key] = counted.get(key, 0) + 1
        return counted

    def _read(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as log:
            log.seek(self._offset)
            chunk = log.read()
        complete = chunk.rfind(b"\n") + 1  # a line being written is read next time
        self._offset += complete
        for line in chunk[:complete].splitlines():
            if line.strip():
                self._event(json.loads(line))

    def _event(self, event: dict[str, Any]) -> None:
        stage, verb = event.get("stage"), str(event.get("verb", ""))
        audit_id = str(event.get("auditID", ""))
        if verb == "watch" and stage == "ResponseStarted":
            self._open[audit_id] = _record(event, verb, ended=event["requestReceivedTimestamp"])
        elif stage == "ResponseComplete":
            self._open.pop(audit_id, None)
            self._records.append(_record(event, verb, ended=event["stageTimestamp"]))


def _record(event: dict[str, Any], verb: str, *, ended: str) -> RequestRecord:
    started = _seconds(event["requestReceivedTimestamp"])
    return RequestRecord(
        started=started, ended=_seconds(ended), wall_started=started, wall_ended=_seconds(ended),
        method=METHODS.get(verb, verb.upper()), path=str(event.get("requestURI", "")),
        user_agent=str(event.get("userAgent", "")), code=int((event.get("responseStatus") or {}).get("code", 0)))
