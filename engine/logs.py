"""Structured JSON logs for ``engine run``, with secrets blanked before anything is written.

One JSON object per line on stderr: ``time`` (RFC 3339, UTC, milliseconds), ``level``, ``logger``, ``message``,
then whichever of the fields the engine passes as ``extra`` a record carries (``request``, ``order``, ``kind``,
``cluster``, ``step``, ``error``), and ``traceback`` when there is one.

Redaction happens in a filter on the handler, before formatting, so no formatter ever sees a secret: every value
the process's secret sink has collected (each password a rule generated, each secret value of every Secret a pass
read, by ``engine.expr.secret_data``), plain or base64-encoded, becomes ``[redacted]``, and so does the password
of any URL with credentials (``amqp://user:[redacted]@host``). It applies to the message, the extra fields and the
traceback.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import re
import sys
import threading
import traceback
from typing import Any, TextIO

from engine.expr.functions import SecretSink

FIELDS = ("request", "order", "kind", "cluster", "step", "error")
"""The ``extra`` fields a record may carry, in the order they are written."""

LEVELS = ("debug", "info", "warning", "error")

REDACTED = "[redacted]"
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/@:]*:)(?P<password>[^\s/@]+)(?P<at>@)")
_URL_BLANKED = rf"\g<head>{REDACTED}\g<at>"

NOISY = ("urllib3", "kubernetes")
"""Client libraries kept at warning whatever the level: at debug they log request and response bodies,
Secret data included."""


class DropRetryWarnings(logging.Filter):
    """urllib3 warns on every retry of every request, naming no cluster (eight unreachable clusters made 360
    lines a minute); the request's final failure reaches our informers, which warn once a minute per cluster."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Retrying (")


RETRY_FILTER = DropRetryWarnings()


GRAM = 4
"""Characters of a secret's form by which it is indexed: a text is searched only for the forms whose first ``GRAM``
characters occur in it."""


class Redactor:
    """Blanks the sink's values, plain and base64-encoded, and URL passwords in any text.

    The forms are indexed by their first ``GRAM`` characters, learned as the sink grows (it only grows, and a new
    password arrives between most lines of a busy operator): a text costs one pass over its ``GRAM``-grams and a
    substring search per form that could start in it, whatever the number of secrets known. Forms shorter than
    ``GRAM`` are searched for in every text. Those found are replaced longest first, so no part of a longer secret
    is left beside a shorter one's blank."""

    def __init__(self, sink: SecretSink) -> None:
        self.sink = sink
        self._known = 0
        self._starts: dict[str, tuple[str, ...]] = {}
        self._short: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def _learn(self) -> None:
        """Index the values the sink learned since the last call (new tuples, so readers in other threads always
        see a whole bucket)."""
        with self._lock:
            new = self.sink.values_from(self._known)
            for value in new:
                if not value:
                    continue
                for form in (value, base64.b64encode(value.encode("utf-8")).decode("ascii")):
                    if len(form) < GRAM:
                        self._short = (*self._short, form)
                    else:
                        self._starts[form[:GRAM]] = (*self._starts.get(form[:GRAM], ()), form)
            self._known += len(new)

    def found(self, text: str) -> list[str]:
        """The forms that occur in ``text``, longest first."""
        if self.sink.count() != self._known:
            self._learn()
        starts = self._starts
        grams = starts.keys() & {text[i:i + GRAM] for i in range(len(text) - GRAM + 1)}
        found = [form for gram in grams for form in starts[gram] if form in text]
        found += [form for form in self._short if form in text]
        if len(found) > 1:
            found.sort(key=len, reverse=True)
        return found

    def __call__(self, text: str, forms: list[str] | None = None) -> str:
        """``text`` blanked; ``forms``: those to look for (``found`` of a text that holds this one), else its own."""
        if "://" in text:
            text = _URL_PASSWORD.sub(_URL_BLANKED, text)
        for form in self.found(text) if forms is None else forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text


class RedactingFilter(logging.Filter):
    """Rewrites a record in place with every secret blanked; never drops a record. The message and the fields are
    searched for secrets together, once."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self._redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed call must not break logging: keep its raw message
            message = f"{record.msg} {record.args}"
        if record.exc_info and not record.exc_text:
            record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        fields = record.__dict__
        texts = [message]
        for name in FIELDS:
            value = fields.get(name)
            if value is not None:
                text = value if type(value) is str else str(value)
                if text not in message:  # the order, its kind and the request are mostly in the message already
                    texts.append(text)
        if record.exc_text:
            texts.append(record.exc_text)
        if record.stack_info:
            texts.append(record.stack_info)
        redact = self._redact
        forms = redact.found("\0".join(texts))
        record.msg = redact(message, forms)
        record.args = None
        for name in FIELDS:
            value = fields.get(name)
            if value is not None:
                fields[name] = redact(value if type(value) is str else str(value), forms)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, forms)
            record.exc_info = None
        if record.stack_info:
            record.stack_info = redact(record.stack_info, forms)
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


class LineHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler that redacts and formats a record before it takes its lock, then holds the lock once, for
    the line's write and flush: a busy operator's workers log at once, and one that finds the lock taken sleeps
    (``logging.StreamHandler`` formats under the lock and takes it again to flush). The lines are the same."""

    def handle(self, record: logging.LogRecord) -> bool:
        kept = self.filter(record)
        if not kept:
            return False
        if isinstance(kept, logging.LogRecord):  # a filter may hand back a record to log instead (Python 3.12)
            record = kept
        try:
            line = self.format(record) + self.terminator
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)
            return True
        with self.lock:  # type: ignore[union-attr]
            try:
                stream = self.stream
                stream.write(line)
                if hasattr(stream, "flush"):
                    stream.flush()
            except RecursionError:
                raise
            except Exception:
                self.handleError(record)
        return True


def configure(level: str = "info", *, sink: SecretSink, stream: TextIO | None = None) -> logging.Handler:
    """Send every log record of the process through one redacting JSON handler; returns it.

    Replaces the root logger's handlers, so nothing else writes unredacted lines.
    """
    if level not in LEVELS:
        raise ValueError(f"log level {level!r} is not one of {', '.join(LEVELS)}")
    handler = LineHandler(stream if stream is not None else sys.stderr)
    handler.addFilter(RedactingFilter(Redactor(sink)))
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # The line writes no source file, function, thread or process: the record need not look them up (the logging
    # HOWTO's "Optimization" knobs; the caller's lookup walked three frames per line).
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    for name in NOISY:
        logging.getLogger(name).setLevel(logging.WARNING)
    pool = logging.getLogger("urllib3.connectionpool")
    if RETRY_FILTER not in pool.filters:
        pool.addFilter(RETRY_FILTER)
    return handler
