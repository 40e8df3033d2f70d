"""Structured JSON logs for ``engine run``, with secrets blanked before anything is written.

One JSON object per line on stderr: ``time`` (RFC 3339, UTC, milliseconds),
``level``, ``logger``, ``message``, then whichever of the fields the engine passes
as ``extra`` a record carries (``request``, ``order``, ``kind``, ``cluster``,
``step``, ``error``), and ``traceback`` when there is one.

Redaction happens in a filter on the handler, before formatting, so no formatter
ever sees a secret: every value the process's secret sink has collected (each
password a rule generated, and each secret value of every Secret a pass read, by the
one rule of ``engine.expr.secret_data``, so passwords read back after a restart
too), plain or base64-encoded as Secret data holds it,
becomes ``[redacted]``, and so does the password of
any URL with credentials (``amqp://user:[redacted]@host``, a transport URL). It
applies to the message, the extra fields and the traceback.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import re
import sys
import traceback
from typing import Any, TextIO

from engine.expr.functions import SecretSink

FIELDS = ("request", "order", "kind", "cluster", "step", "error")
"""The ``extra`` fields a record may carry, in the order they are written."""

LEVELS = ("debug", "info", "warning", "error")

REDACTED = "[redacted]"
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/@:]*:)(?P<password>[^\s/@]+)(?P<at>@)")

NOISY = ("urllib3", "kubernetes")
"""Client libraries kept at warning whatever the level: at debug they log request and response bodies,
Secret data included."""


class DropRetryWarnings(logging.Filter):
    """urllib3 warns on every retry of every request, naming no cluster (eight unreachable clusters made 360
    lines a minute); the request's final failure reaches our informers, which warn once a minute per cluster."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Retrying (")


RETRY_FILTER = DropRetryWarnings()


class Redactor:
    """Blanks the sink's values and URL passwords in any text. The values, longest first, and their base64 forms
    are worked out once per size of the sink (it only grows), not once per line: a line then costs one substring
    search per form, and the operator with hundreds of secrets logs a line per order transition."""

    def __init__(self, sink: SecretSink) -> None:
        self.sink = sink
        self._forms: tuple[tuple[str, str], ...] = ()
        self._known = 0

    def _current_forms(self) -> tuple[tuple[str, str], ...]:
        values = self.sink.values()
        if len(values) != self._known:
            ordered = sorted((value for value in values if value), key=len, reverse=True)
            self._forms = tuple((value, base64.b64encode(value.encode("utf-8")).decode("ascii")) for value in ordered)
            self._known = len(values)
        return self._forms

    def __call__(self, text: str) -> str:
        text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{REDACTED}{m['at']}", text)
        for value, encoded in self._current_forms():
            if value in text:
                text = text.replace(value, REDACTED)
            if encoded in text:
                text = text.replace(encoded, REDACTED)
        return text


class RedactingFilter(logging.Filter):
    """Rewrites a record in place with every secret blanked; never drops a record."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self._redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed call must not break logging: keep its raw message
            message = f"{record.msg} {record.args}"
        record.msg = self._redact(message)
        record.args = None
        for name in FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                record.__dict__[name] = self._redact(str(value))
        if record.exc_info and not record.exc_text:
            record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        if record.exc_text:
            record.exc_text = self._redact(record.exc_text)
            record.exc_info = None
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = record.__dict__.get(name)
            if value is None or (value == "" and name != "cluster"):  # "": the management cluster
                continue
            doc[name] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            doc["traceback"] = record.exc_text
        if record.stack_info:
            doc["stack"] = record.stack_info
        return json.dumps(doc, ensure_ascii=False, default=str)


def configure(level: str = "info", *, sink: SecretSink, stream: TextIO | None = None) -> logging.Handler:
    """Send every log record of the process through one redacting JSON handler; returns it.

    Replaces the root logger's handlers, so nothing else writes unredacted lines.
    """
    if level not in LEVELS:
        raise ValueError(f"log level {level!r} is not one of {', '.join(LEVELS)}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.addFilter(RedactingFilter(Redactor(sink)))
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in NOISY:
        logging.getLogger(name).setLevel(logging.WARNING)
    pool = logging.getLogger("urllib3.connectionpool")
    if RETRY_FILTER not in pool.filters:
        pool.addFilter(RETRY_FILTER)
    return handler
