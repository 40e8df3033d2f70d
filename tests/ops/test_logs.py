"""JSON log lines: their fields, and secrets blanked before anything is written."""

from __future__ import annotations

import base64
import io
import json
import logging
from collections.abc import Iterator

import pytest

from engine.expr.functions import SecretSink
from engine.logs import JsonFormatter, RedactingFilter, Redactor, configure

PASSWORD = "Zm9vYmFyLXRoaXMtaXMtYS1nZW5lcmF0ZWQtcGFzc3dvcmQ"


@pytest.fixture
def sink() -> SecretSink:
    sink = SecretSink()
    sink.add(PASSWORD)
    return sink


@pytest.fixture
def lines(sink: SecretSink) -> Iterator[io.StringIO]:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    configure("info", sink=sink, stream=stream)
    try:
        yield stream
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])


def records(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_one_json_object_per_line_with_the_engine_fields(lines: io.StringIO) -> None:
    """A record becomes one object: time, level, logger, message and the extra fields passed."""
    logging.getLogger("engine.reconcile").info(
        "pass ended in an error", extra={"order": "tenant-a/app", "kind": "Widget", "cluster": "edge-1",
                                         "step": "provision", "error": "boom", "unrelated": "x"})
    [doc] = records(lines)
    assert doc["level"] == "info"
    assert doc["logger"] == "engine.reconcile"
    assert doc["message"] == "pass ended in an error"
    assert (doc["order"], doc["kind"], doc["cluster"], doc["step"], doc["error"]) == (
        "tenant-a/app", "Widget", "edge-1", "provision", "boom")
    assert "unrelated" not in doc
    assert str(doc["time"]).endswith("Z")


def test_the_management_cluster_is_written_as_an_empty_name(lines: io.StringIO) -> None:
    """cluster "" is kept (it means the management cluster); other empty fields are left out."""
    logging.getLogger("engine").warning("x", extra={"cluster": "", "step": ""})
    [doc] = records(lines)
    assert doc["cluster"] == ""
    assert "step" not in doc


def test_below_the_level_nothing_is_written(lines: io.StringIO) -> None:
    """At info, debug records are dropped."""
    logging.getLogger("engine").debug("quiet")
    assert records(lines) == []


def test_generated_passwords_never_reach_a_line(lines: io.StringIO) -> None:
    """A value the sink has seen is blanked in the message, its arguments and the extra fields."""
    log = logging.getLogger("engine")
    log.info("applied %s", {"data": {"password": PASSWORD}}, extra={"error": f"bad {PASSWORD}"})
    log.info(f"inline {PASSWORD}")
    text = lines.getvalue()
    assert PASSWORD not in text
    assert text.count("[redacted]") == 3


def test_base64_encoded_passwords_are_blanked(lines: io.StringIO) -> None:
    """A generated password as a Secret's data holds it (base64) is blanked as well."""
    encoded = base64.b64encode(PASSWORD.encode()).decode()
    logging.getLogger("engine").info("data: {'password': '%s'}", encoded)
    assert encoded not in lines.getvalue()
    assert records(lines)[0]["message"] == "data: {'password': '[redacted]'}"


def test_client_libraries_stay_quiet_at_debug(sink: SecretSink) -> None:
    """At debug the kubernetes client would log response bodies (Secret data): it stays at warning."""
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure("debug", sink=sink, stream=stream)
        logging.getLogger("kubernetes.client.rest").debug("response body: %s", "secret data")
        logging.getLogger("engine").debug("engine detail")
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
    assert "secret data" not in stream.getvalue()
    assert "engine detail" in stream.getvalue()


def test_passwords_in_urls_are_blanked(lines: io.StringIO) -> None:
    """A URL with credentials (a transport URL) keeps its user and host, never its password."""
    logging.getLogger("engine").error("cannot reach rabbit://app:hunter2-long@rabbit.svc:5672/vhost, "
                                      "see https://example.com/docs")
    [doc] = records(lines)
    assert doc["message"] == ("cannot reach rabbit://app:[redacted]@rabbit.svc:5672/vhost, "
                              "see https://example.com/docs")


def test_tracebacks_are_redacted_too(lines: io.StringIO) -> None:
    """An exception's text passes the same redaction, and is written as traceback."""
    try:
        raise RuntimeError(f"leaked {PASSWORD}")
    except RuntimeError:
        logging.getLogger("engine").exception("the pass raised")
    [doc] = records(lines)
    assert "RuntimeError: leaked [redacted]" in str(doc["traceback"])
    assert PASSWORD not in lines.getvalue()


def test_secrets_added_later_are_blanked_from_then_on(sink: SecretSink, lines: io.StringIO) -> None:
    """The sink is read at each record: a password generated after startup is covered."""
    later = "another-generated-password-value-0123456789"
    sink.add(later)
    logging.getLogger("engine").info("value %s", later)
    assert later not in lines.getvalue()


def test_a_malformed_call_still_logs(lines: io.StringIO) -> None:
    """Arguments that do not fit the message do not raise out of the logging call."""
    logging.getLogger("engine").info("two %s %s", "one")
    assert len(records(lines)) == 1


def test_configure_refuses_an_unknown_level(sink: SecretSink) -> None:
    """Only debug, info, warning and error."""
    with pytest.raises(ValueError, match="not one of debug, info, warning, error"):
        configure("verbose", sink=sink)


def test_filter_and_formatter_compose_on_any_handler(sink: SecretSink) -> None:
    """The filter rewrites the record, so a formatter that runs after it sees no secret."""
    record = logging.LogRecord("engine", logging.INFO, __file__, 1, "x=%s", (PASSWORD,), None)
    RedactingFilter(Redactor(sink)).filter(record)
    assert json.loads(JsonFormatter().format(record))["message"] == "x=[redacted]"
