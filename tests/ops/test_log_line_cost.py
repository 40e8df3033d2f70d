"""What an order's transition line costs through `engine run`'s redacting JSON handler, in Python calls: the same
whether the process knows ten secrets or two thousand (an operator at N=1000 has learned a password and a Secret's
values per order, and a new one arrives between most lines). Counts are exact and load-independent; no time is
asserted. The secrets are still blanked: a line that carries one shows ``[redacted]``."""

from __future__ import annotations

import base64
import cProfile
import io
import json
import logging
import pstats
from collections.abc import Iterator

import pytest

from engine.expr.functions import SecretSink
from engine.logs import configure
from engine.reconcile.transitions import log_condition_changes

CALLS_PER_LINE = 118
"""Calls of one transition line (LogRecord, the redacting filter, the JSON formatter, the stream write), a new secret
learned before it: 112 measured, at 10 secrets known as at 2,000 (136 while the record still looked up its caller,
thread and process, which the line never writes). At 18054a9, which worked out every secret's forms again after
each new one, 197 at 10 secrets and 12,137 at 2,000 (1,356 microseconds a line there at 2,000, 31 now)."""

FIELDS = {"request": "KeystoneUser tenant-a/ku-00996", "order": "tenant-a/ku-00996", "kind": "KeystoneUser",
          "cluster": ""}
BEFORE = [{"type": "Ready", "status": "False", "reason": "Waiting"}]
AFTER = [{"type": "Ready", "status": "True", "reason": "AllReady"}]
LOG = logging.Logger("engine.runtime", logging.INFO)
"""A logger outside the hierarchy: it has `engine run`'s handler only (pytest's capturing handlers are not counted)."""


@pytest.fixture
def handler_stream() -> Iterator[tuple[SecretSink, io.StringIO]]:
    """`engine run`'s handler on ``LOG``, the root logger's handlers and level restored afterwards."""
    sink = SecretSink()
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, logging.root.manager.disable)
    logging.disable(logging.NOTSET)
    handler = configure("info", sink=sink, stream=stream)
    LOG.addHandler(handler)
    try:
        yield sink, stream
    finally:
        LOG.removeHandler(handler)
        for old in list(root.handlers):
            root.removeHandler(old)
        for old in saved[0]:
            root.addHandler(old)
        root.setLevel(saved[1])
        logging.disable(saved[2])


def _line_calls(sink: SecretSink, known: int) -> int:
    """Calls of one transition line logged after ``known`` secrets and then one new one were learned."""
    sink.add_all(f"generated-password-{i:05d}-Zx9q" for i in range(known))
    log = LOG
    log_condition_changes(log, FIELDS, BEFORE, AFTER)  # warms the redactor up to the sink's size
    sink.add(f"the-newest-password-{known}")
    profile = cProfile.Profile()
    profile.enable()
    try:
        log_condition_changes(log, FIELDS, BEFORE, AFTER)
    finally:
        profile.disable()
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def test_a_transition_line_costs_the_same_calls_whatever_the_secrets_known(
        handler_stream: tuple[SecretSink, io.StringIO]) -> None:
    sink, _ = handler_stream
    few = _line_calls(sink, 10)
    many = _line_calls(sink, 2000)
    assert few <= CALLS_PER_LINE, few
    assert many <= CALLS_PER_LINE, many


def test_the_cheap_line_still_blanks_every_form_of_a_secret(handler_stream: tuple[SecretSink, io.StringIO]) -> None:
    """Secrets plain and base64-encoded, long and short, learned before and after earlier lines, in the message and
    in the fields: all blanked, the longer one whole when a shorter secret is part of it."""
    sink, stream = handler_stream
    sink.add_all(f"generated-password-{i:05d}-Zx9q" for i in range(500))
    log = LOG
    log.info("warm")
    late = "a-late-password-Q7r2"
    short = "k9"
    sink.add_all([late, short, "a-late-password-Q7r2-and-more"])
    encoded = base64.b64encode(late.encode()).decode()
    log.info(f"x {late} y {encoded} z generated-password-00042-Zx9q w a-late-password-Q7r2-and-more k9",
             extra={"order": f"ns/{late}", "error": f"amqp://user:{late}k9@host/"})
    line = json.loads(stream.getvalue().splitlines()[-1])
    assert line["message"] == "x [redacted] y [redacted] z [redacted] w [redacted] [redacted]"
    assert line["order"] == "ns/[redacted]"
    assert line["error"] == "amqp://user:[redacted]@host/"
    assert "k9" not in stream.getvalue().replace("Zx9q", "")
