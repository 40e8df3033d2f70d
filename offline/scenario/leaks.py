"""What `noSecretLeak` compares: every secret value written, against every text a person could read.

Secret values are what the engine's sink collected (generated passwords, and what passes read
back) and, in any version a Secret ever had, its secret values by the engine's one rule
(``engine.expr.secret_data``, shared with the log redactor): the decoded value (8 characters
or longer) of a data key whose name contains password, token, secret or clouds, and the
password of a URL with credentials under a key whose name contains url. Readable texts are the
operator's log records (message, extra fields, exception text), pass errors, and every
string under ``status`` of every version of every object the scenario knows of.

Versions are followed through each cluster's watch log from a cursor per kind, so a
condition message overwritten within one ``settle`` is still seen.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterable, Iterator
from typing import Any

from engine.cluster.api import ApiError, Cluster, Obj
from engine.expr.functions import SecretSink
from engine.expr.secret_data import secret_values_of

__all__ = ["LeakWatch", "LogCapture", "secret_values_of"]

_STANDARD_RECORD_FIELDS = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


class LogCapture(logging.Handler):
    """Keeps every record of the ``engine`` loggers as text: message, extra fields, exception."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            parts = [record.getMessage()]
        except Exception:  # a bad format string must not break the scenario
            parts = [str(record.msg)]
        parts.extend(f"{k}={v}" for k, v in vars(record).items() if k not in _STANDARD_RECORD_FIELDS)
        if record.exc_info and record.exc_info[1] is not None:
            parts.append("".join(traceback.format_exception(record.exc_info[1])))
        self.records.append((record.levelno, " ".join(parts)))

    def texts(self) -> list[str]:
        return [text for _, text in self.records]

    def recent(self, level: int, count: int) -> list[str]:
        return [text for lvl, text in self.records if lvl >= level][-count:]


class LeakWatch:
    """Collects secret values and readable texts as the scenario goes, and finds leaks."""

    def __init__(self, sink: SecretSink, logs: LogCapture) -> None:
        self.sink = sink
        self.logs = logs
        self._secrets: set[str] = set()
        self._texts: dict[str, str] = {}
        """text -> where it was read (first place)."""
        self._cursors: dict[tuple[str, str, str], str] = {}

    def secrets(self) -> set[str]:
        return self._secrets | set(self.sink.values())

    def add_text(self, where: str, text: str) -> None:
        if text:
            self._texts.setdefault(text, where)

    def scan(self, clusters: Iterable[tuple[str, Cluster]], kinds: Iterable[tuple[str, str]]) -> None:
        """Read every version written since the last scan of each (cluster, kind)."""
        kinds = sorted(set(kinds))
        for cluster_name, cluster in clusters:
            for api_version, kind in kinds:
                for obj in self._versions(cluster_name, cluster, api_version, kind):
                    self._take(cluster_name, obj)

    def leaks(self) -> list[tuple[str, int]]:
        """(where, length of the secret) for each readable text holding a secret value."""
        secrets = sorted(self.secrets(), key=len, reverse=True)
        texts = {**self._texts, **{text: "a log record" for text in self.logs.texts()}}
        found = []
        for text, where in texts.items():
            for secret in secrets:
                if secret and secret in text:
                    found.append((where, len(secret)))
                    break
        return found

    def redact(self, text: str) -> str:
        for secret in sorted(self.secrets(), key=len, reverse=True):
            if secret:
                text = text.replace(secret, "[secret]")
        return text

    def _versions(self, cluster_name: str, cluster: Cluster, api_version: str, kind: str) -> list[Obj]:
        key = (cluster_name, api_version, kind)
        cursor = self._cursors.get(key)
        try:
            if cursor is None:
                listed = cluster.list(api_version, kind)
                self._cursors[key] = listed.resource_version
                return listed.items
            out = []
            for event in cluster.watch(api_version, kind, resource_version=cursor, timeout=0, bookmarks=True):
                obj = event["object"]
                if event["type"] == "BOOKMARK":
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        self._cursors[key] = str(rv)
                else:
                    out.append(obj)
            return out
        except ApiError:
            # Not served (yet), or the log moved past the cursor: read what is there now.
            self._cursors.pop(key, None)
            try:
                listed = cluster.list(api_version, kind)
            except ApiError:
                return []
            self._cursors[key] = listed.resource_version
            return listed.items

    def _take(self, cluster_name: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        if obj.get("kind") == "Secret" and str(obj.get("apiVersion")) == "v1":
            self._secrets.update(secret_values_of(obj))
        status = obj.get("status")
        if status is None:
            return
        where_cluster = f" on cluster {cluster_name!r}" if cluster_name else ""
        namespace = f"{meta.get('namespace')}/" if meta.get("namespace") else ""
        name = f"{obj.get('kind')} {namespace}{meta.get('name')}{where_cluster}"
        for path, text in _strings(status, "status"):
            self.add_text(f"{path} of {name}", text)
