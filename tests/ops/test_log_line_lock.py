"""How long a log line holds `engine run`'s handler lock, counted (never timed): the workers of a busy operator log
their orders' transitions at once, and a thread that finds the lock taken sleeps until it is free. The line is
formatted (and its secrets blanked) before the lock is taken, which is held once, for the write and the flush."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from engine.expr.functions import SecretSink
from engine.logs import configure

LOG = logging.Logger("engine.runtime", logging.INFO)
"""A logger outside the hierarchy: it has `engine run`'s handler only."""


class CountingLock:
    """The handler's lock, counting its acquisitions and telling whether this thread holds it."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.acquired = 0
        self.depth = 0

    def acquire(self, *args: Any) -> bool:
        got = self._lock.acquire(*args)
        if got:
            self.acquired += 1
            self.depth += 1
        return got

    def release(self) -> None:
        self.depth -= 1
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@pytest.fixture
def handler() -> Iterator[tuple[logging.Handler, io.StringIO, SecretSink]]:
    sink = SecretSink()
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, logging.root.manager.disable)
    logging.disable(logging.NOTSET)
    made = configure("info", sink=sink, stream=stream)
    LOG.addHandler(made)
    try:
        yield made, stream, sink
    finally:
        LOG.removeHandler(made)
        for old in list(root.handlers):
            root.removeHandler(old)
        for old in saved[0]:
            root.addHandler(old)
        root.setLevel(saved[1])
        logging.disable(saved[2])


def test_a_line_takes_the_handler_lock_once_and_is_formatted_outside_it(
        handler: tuple[logging.Handler, io.StringIO, SecretSink]) -> None:
    made, stream, sink = handler
    lock = CountingLock()
    made.lock = lock  # type: ignore[assignment]
    formatter = made.formatter
    assert formatter is not None
    held_while_formatting: list[int] = []
    original = formatter.format

    def format_(record: logging.LogRecord) -> str:
        held_while_formatting.append(lock.depth)
        return original(record)

    formatter.format = format_  # type: ignore[method-assign]
    sink.add("s3cr3t-value-0042")
    for i in range(10):
        LOG.info("order %d: Ready is True, password s3cr3t-value-0042", i, extra={"order": f"tenant-a/ku-{i:05d}"})
    assert lock.acquired == 10, "one acquisition a line (the write and its flush together)"
    assert held_while_formatting == [0] * 10, "formatted before the lock is taken"
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["message"] for line in lines] == [f"order {i}: Ready is True, password [redacted]" for i in range(10)]
    assert lines[3]["order"] == "tenant-a/ku-00003" and lines[3]["level"] == "info"
