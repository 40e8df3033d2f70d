"""Live rule reload: poll the rule folder, lint a changed set, swap it in between passes or refuse it.

Polling (a content hash every few seconds; a rule set is tens of kilobytes) needs no inotify and sees
a mounted ConfigMap's ``..data`` swap like any edit. A changed set is linted and compiled; if the
folder changed again meanwhile (a swap or an editor still writing), nothing is taken and the next
poll tries again. A set that fails lint is refused: one error line per lint error (file:line:col),
a summary naming the hash still served, ``rules_reload_total{result="refused"}``; the running rules
stay, and the same broken set is not reported twice. A clean set is handed to ``swap`` (the
manager's ``replace_catalog``: passes already running finish on the rules they started with).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Protocol

from engine.metrics import Metrics
from engine.runtime.kinds import Catalog, Log

DEFAULT_RELOAD_INTERVAL = 5.0
"""Seconds between two looks at the rule folder."""


class RuleSource(Protocol):
    """Where rule sets come from (``engine.rules.folder.RuleFolder``)."""

    def fingerprint(self) -> str: ...

    def lint(self) -> Sequence[object]: ...

    def load(self) -> Catalog: ...


class Reload(StrEnum):
    """What one look at the folder found."""

    UNCHANGED = "unchanged"
    LOADED = "loaded"
    REFUSED = "refused"
    UNSETTLED = "unsettled"
    """The folder changed while it was read: tried again at the next poll."""


def short(fingerprint: str) -> str:
    """The hash as logs and the info metric show it."""
    return fingerprint[:16]


class RuleReloader:
    """Watches one rule source and swaps clean changed sets in."""

    def __init__(self, source: RuleSource, swap: Callable[[Catalog], None], *, loaded: str,
                 metrics: Metrics, log: Log, interval: float = DEFAULT_RELOAD_INTERVAL) -> None:
        """loaded: the fingerprint of the set the operator started with."""
        self._source = source
        self._swap = swap
        self._metrics = metrics
        self._log = log
        self.interval = interval
        self.loaded = loaded
        self._refused: str | None = None
        metrics.set_rules_hash(short(loaded))

    def poll(self) -> Reload:
        """Look once: reload, refuse, or leave things as they are."""
        try:
            seen = self._source.fingerprint()
        except OSError:
            return Reload.UNSETTLED
        if seen in (self.loaded, self._refused):
            return Reload.UNCHANGED
        errors = list(self._source.lint())
        catalog: Catalog | None = None
        if not errors:
            try:
                catalog = self._source.load()
            except Exception as exc:  # lint passed but it does not compile: refuse, never crash the poller
                errors = [f"{exc}"]
        try:
            settled = self._source.fingerprint() == seen
        except OSError:
            settled = False
        if not settled:
            self._log.info("the rule files changed while being read; looking again in %ss", self.interval)
            return Reload.UNSETTLED
        if errors or catalog is None:
            return self._refuse(seen, errors)
        self._swap(catalog)
        self._log.info("rules reloaded: %d kind(s), hash %s (was %s)", len(catalog), short(seen), short(self.loaded),
                       extra={"rules_hash": short(seen)})
        self.loaded, self._refused = seen, None
        self._metrics.record_rules_reload(Reload.LOADED.value)
        self._metrics.set_rules_hash(short(seen))
        return Reload.LOADED

    def _refuse(self, seen: str, errors: Sequence[object]) -> Reload:
        for error in errors:
            self._log.error("%s", error, extra={"rules_hash": short(seen)})
        self._log.error("changed rule files refused: %d lint error(s); still serving rules %s",
                        len(errors), short(self.loaded), extra={"rules_hash": short(seen)})
        self._refused = seen
        self._metrics.record_rules_reload(Reload.REFUSED.value)
        return Reload.REFUSED

    def run(self, stop: threading.Event) -> None:
        """Poll every ``interval`` seconds until ``stop`` is set; a failing poll never ends the loop."""
        while not stop.wait(self.interval):
            try:
                self.poll()
            except Exception:
                self._log.exception("looking at the rule files failed; trying again in %ss", self.interval)
