"""A restarted operator (a fresh secret sink) blanks the passwords it reads back from Secrets in its logs,
as it blanks those it generated itself."""

from __future__ import annotations

import datetime as dt
import io
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine import logs
from engine.cluster.registry import ClusterSet
from engine.expr.functions import SecretSink, use_sink
from engine.outcome import Request
from engine.reconcile.run import run_pass
from engine.rules.catalog import load_catalog
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster
from tests.conftest import WIDGET

SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: {{ (prefix ~ 'secret') | tojson }}
  namespace: {{ childNamespace | tojson }}
  labels: {{ childLabels | tojson }}
data:
  password: {{ b64enc(password()) | tojson }}
"""

READS_BACK = WIDGET.replace("""    do:
      - apply: part.yaml.j2""", """    do:
      - ensure: secret.yaml.j2
        as: secret
      - log: "the Secret holds {{ b64dec(secret.data.password) }}"
        level: warning
      - apply: part.yaml.j2""")
assert READS_BACK != WIDGET


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    out = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        yield out
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])


def test_a_password_read_back_after_a_restart_is_blanked(rules_dir: Callable[..., Path],
                                                         stream: io.StringIO) -> None:
    rules = rules_dir(READS_BACK, extra={"templates/widget/secret.yaml.j2": SECRET})
    [kind] = load_catalog(rules).values()
    clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    cluster = MemoryCluster("", clock=clock, permissive=True)
    cluster.create({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
                    "spec": {}})
    request = Request(kind.key, "", "ns", "w")

    first = SecretSink()  # the operator that generated the password
    with use_sink(first):
        for _ in range(3):  # the finalizer first, then the step
            result = run_pass(kind, request, clusters=ClusterSet(cluster), clock=clock)
            assert result.error is None, result.error
    [password] = first.values()

    restarted = SecretSink()  # a new process: it never generated that password
    logs.configure("info", sink=restarted, stream=stream)
    with use_sink(restarted):
        run_pass(kind, request, clusters=ClusterSet(cluster), clock=clock)
    written = stream.getvalue()
    assert "the Secret holds [redacted]" in written
    assert password not in written
