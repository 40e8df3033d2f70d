"""`bench/pass_counts.py`: the passes of a benchmark's replicas, read from their metrics pages on 127.0.0.1 while
they run; a replica that stops answering keeps its last count, and no sum is given until every replica answered."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, generate_latest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import pass_counts  # noqa: E402  (bench/ is no package)


def page(results: dict[str, int]) -> str:
    """A metrics page as a replica serves it: passes by result, and another counter beside them."""
    registry = CollectorRegistry()
    passes = Counter("c5c3_operator_reconcile_total", "Passes run.", ["result"], registry=registry)
    for result, count in results.items():
        passes.labels(result=result).inc(count)
    Counter("c5c3_operator_pass_wakes_total", "Wakes.", ["cause"], registry=registry).labels(cause="event").inc(99)
    return generate_latest(registry).decode()


@contextmanager
def replica(answer: dict[str, str], port: int = 0) -> Iterator[ThreadingHTTPServer]:
    """A metrics endpoint on 127.0.0.1 (``port``: the kernel's pick) serving ``answer["page"]``; stopped on leaving."""
    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = answer["page"].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError("not reached in time")


def test_passes_sum_every_result_and_nothing_else() -> None:
    assert pass_counts.passes(page({"success": 1000, "requeue_after": 6012, "error": 3})) == 7015
    assert pass_counts.passes(page({})) == 0


def test_the_sum_waits_for_every_replica_and_keeps_a_stopped_replicas_last_count() -> None:
    first, second = {"page": page({"success": 5})}, {"page": page({"success": 2, "requeue_after": 4})}
    later = pass_counts.free_ports(1)[0]
    with replica(first) as one, pass_counts.Scraper([one.server_address[1], later], every=0.05) as scraper:
        time.sleep(0.3)
        assert scraper.passes() is None  # the second replica is not serving yet
        with replica(second, later):
            wait_for(lambda: scraper.passes() == 11)
            first["page"] = page({"success": 7})
            wait_for(lambda: scraper.passes() == 13)
        time.sleep(0.3)  # the second replica is gone: its last count stays
        assert scraper.passes() == 13


def test_no_port_gives_no_count() -> None:
    with pass_counts.Scraper([], every=0.05) as scraper:
        time.sleep(0.1)
        assert scraper.passes() is None


def test_free_ports_are_distinct_loopback_ports() -> None:
    ports = pass_counts.free_ports(3)
    assert len(set(ports)) == 3 and all(0 < port < 65536 for port in ports)
