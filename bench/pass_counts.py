"""Passes the replicas of a benchmark run ran, read from their metrics endpoints while the run goes on.

A benchmark that compares one replica with several (``sharded_cpu.py``) needs to know whether they did the same
work: equal requests per order do not show that, since a pass that finds nothing to write sends nothing. Each
replica serves ``c5c3_operator_reconcile_total`` on its own 127.0.0.1 port; ``Scraper`` reads every port each
half second and keeps the last answer, so the count survives the harness stopping the replicas at its end.
"""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from types import TracebackType

from prometheus_client.parser import text_string_to_metric_families

PASSES = "c5c3_operator_reconcile"
"""The counter family of passes by result (``_total`` is the sample's suffix)."""


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that were free a moment ago (the kernel's pick)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for one in sockets:
            one.bind(("127.0.0.1", 0))
        return [one.getsockname()[1] for one in sockets]
    finally:
        for one in sockets:
            one.close()


def passes(exposition: str) -> int:
    """The passes one replica's metrics page counts, over every result (0 when the page has none)."""
    return int(sum(sample.value for family in text_string_to_metric_families(exposition) if family.name == PASSES
                   for sample in family.samples if sample.name == PASSES + "_total"))


class Scraper:
    """Reads each port's ``/metrics`` every ``every`` seconds in a thread; ``passes()`` sums the last answers."""

    def __init__(self, ports: Sequence[int], every: float = 0.5) -> None:
        self.ports, self.every = list(ports), every
        self._last: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pass-scraper", daemon=True)

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            for port in self.ports:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as page:
                        self._last[port] = passes(page.read().decode())
                except (OSError, ValueError, urllib.error.URLError):
                    continue  # not serving yet, or gone: keep the last answer

    def passes(self) -> int | None:
        """Passes summed over the replicas' last answers; None with no port, or until every replica has answered."""
        return sum(self._last.values()) if self.ports and len(self._last) == len(self.ports) else None
