"""A rule that fails at run time says which expression failed, where it is written and why: on the order's
condition, in the pass's Event note and in the error log line, never a secret value."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.expr.functions import SecretSink, use_sink
from engine.rules.catalog import load_catalog
from tests.conftest import WIDGET, RuleText
from tests.reconcile.test_run import World, part_is_ready

ASSIGNED = WIDGET.swap("steps:\n", """gates:
  - name: assigned
    when: "assignment == `null`"
    reason: Broken
    message: "not assigned"
    requeue: 1m
  - finalizer: true
    requeue: 1s
steps:
""").swap('  size: "order.spec.size || `1`"\n', """  size: "order.spec.size || `1`"
  assignment: "first(where_eq(order.spec.assignments, 'namespace', 'ns'))"
""")


def where(rule: str, snippet: str) -> str:
    """``widget.yaml:line:col`` of the first occurrence of ``snippet`` in the rule text (1-based)."""
    for number, line in enumerate(rule.splitlines(), start=1):
        column = line.find(snippet)
        if column >= 0:
            return f"widget.yaml:{number}:{column + 1}"
    raise AssertionError(f"{snippet!r} is not in the rule")


@pytest.fixture
def world(rules_dir: Callable[..., Path]) -> Callable[..., World]:
    def make(rule: str, template: str | None = None) -> World:
        folder = rules_dir(rule) if template is None else rules_dir(rule, template)
        return World(next(iter(load_catalog(folder).values())))
    return make


def told(w: World, caplog: pytest.LogCaptureFixture) -> list[str]:
    """What a person reads of the last pass: its error, its Event note, the BuiltReady message, the error log."""
    with caplog.at_level("INFO", logger="engine"):
        result = w.run()
    assert result.error is not None and result.event is not None
    message = next((c["message"] for c in w.live().get("status", {}).get("conditions", [])
                    if c["type"] == "BuiltReady"), "(no BuiltReady condition)")
    logged = [str(r.__dict__.get("error")) for r in caplog.records if r.levelname == "ERROR"]
    assert logged, "no error log line"
    return [str(result.error), result.event.message, message, logged[0]]


def test_a_gate_reading_a_value_that_fails_names_the_value_its_cause_and_the_gate(
        world: Callable[..., World], caplog: pytest.LogCaptureFixture) -> None:
    """A value the gate reads fails on the order's data (a string where a list belongs): the condition, the
    Event and the log name the value's own expression with its file:line:col and the function's complaint,
    and the gate that read it; every sub-condition says so, and the pass fails (retried)."""
    w = world(ASSIGNED)
    w.order(assignments="a-string")
    texts = told(w, caplog)
    for text in texts:
        assert where(ASSIGNED, '"first(where_eq(') in text, text
        assert "where_eq() expected array|null, got string" in text, text
        assert where(ASSIGNED, '"assignment == `null`"') in text, text
        assert ": ExprError" not in text and "a-string" not in text
    assert w.conditions()["BuiltReady"] == ("False", "Error")
    assert w.conditions()["Ready"] == ("False", "NotAllReady")
    assert not w.live()["metadata"].get("finalizers")  # nothing past a gate that could not be decided


def test_a_value_failing_in_a_step_is_named_and_not_only_its_reader(
        world: Callable[..., World], caplog: pytest.LogCaptureFixture) -> None:
    """A rule set that lints clean fails at run time in a value (``b64dec('%%%')``) that a wait reads: the
    failing call's line and the base64 error are named, the wait as the reader."""
    rule = WIDGET.swap('  size: "order.spec.size || `1`"\n', """  size: "order.spec.size || `1`"
  decoded: "b64dec('%%%')"
""").swap('      - wait: "part.status.ready"\n', '      - wait: "decoded != \'\'"\n')
    w = world(rule)
    w.order(size=1)
    for text in told(w, caplog):
        assert where(rule, "\"b64dec('%%%')\"") in text, text
        assert "b64dec(): not valid base64" in text, text
        assert where(rule, "\"decoded != ''\"") in text, text
    assert w.conditions()["BuiltReady"] == ("False", "Error")


def test_a_chain_of_values_names_each_reader(world: Callable[..., World], caplog: pytest.LogCaptureFixture) -> None:
    """A value read by a value read by the gate: the failing one is named first, then who read it, in order."""
    rule = ASSIGNED.swap('    when: "assignment == `null`"\n', '    when: "!assigned"\n').swap(
        "  assignment: ", '  assigned: "assignment != `null`"\n  assignment: ')
    w = world(rule)
    w.order(assignments=5)
    for text in told(w, caplog):
        failing = text.index(where(rule, '"first(where_eq('))
        middle = text.index(where(rule, '"assignment != `null`"'))
        gate = text.index(where(rule, '"!assigned"'))
        assert failing < middle < gate, text
        assert "got number" in text, text


def test_a_value_failing_in_a_template_and_a_message_names_the_reader(
        world: Callable[..., World], caplog: pytest.LogCaptureFixture) -> None:
    """A value that fails where a child template or a message renders it: the value's place and cause, and the
    template or text that read it."""
    template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ (prefix ~ 'part') | tojson }}\n" \
               "  namespace: {{ childNamespace | tojson }}\n  labels: {{ childLabels | tojson }}\n" \
               "data:\n  size: {{ decoded | tojson }}\n"
    rule = WIDGET.swap('  size: "order.spec.size || `1`"\n', """  size: "order.spec.size || `1`"
  decoded: "b64dec(order.spec.text)"
""")
    w = world(rule, template)
    w.order(text="%%%")
    for text in told(w, caplog):
        assert where(rule, '"b64dec(order.spec.text)"') in text, text
        assert "b64dec(): not valid base64" in text and "part.yaml.j2" in text, text
    # The same value read by the step's done message instead: the message's place is named.
    rule = rule.swap('message: "built {{ size }} parts"', 'message: "built {{ decoded }} parts"')
    w = world(rule)
    w.order(text="%%%")
    w.run()  # the part
    part_is_ready(w)
    caplog.clear()
    for text in told(w, caplog):
        assert where(rule, '"b64dec(order.spec.text)"') in text, text
        assert where(rule, '"built {{ decoded }} parts"') in text, text
    assert w.conditions()["BuiltReady"] == ("False", "Error")


SECRET_RULE = RuleText(WIDGET.swap("values:\n", """inputs:
  creds:
    get: {apiVersion: v1, kind: Secret, namespace: "{{ order.metadata.namespace }}", name: creds}
values:
""").swap('  size: "order.spec.size || `1`"\n', """  size: "order.spec.size || `1`"
  userPassword: "b64dec(creds.data.password || '')"
""").swap('      - wait: "part.status.ready"\n', '      - wait: "userPassword != \'\'"\n'))


def test_a_secret_that_fails_to_decode_is_named_by_place_never_by_value(
        world: Callable[..., World], caplog: pytest.LogCaptureFixture) -> None:
    """A Secret whose password is not base64: the failure names the value and its cause, and neither the
    Secret's data text nor any part of it appears in what a person reads."""
    raw = "c3VwZXItc2VjcmV0LXBhc3N3b3Jk%%%"
    w = world(SECRET_RULE)
    w.cluster.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "ns"},
                      "data": {"password": raw}})
    w.order(size=1)
    with use_sink(SecretSink()):
        texts = told(w, caplog)
    for text in texts:
        assert "b64dec(): not valid base64" in text and where(SECRET_RULE, '"b64dec(creds') in text, text
        assert "c3VwZXItc2VjcmV0" not in text and "super-secret" not in text, text


def test_a_cause_holding_a_known_secret_is_blanked(world: Callable[..., World],
                                                    caplog: pytest.LogCaptureFixture) -> None:
    """Whatever a cause quotes, a value the process knows as secret (a Secret's decoded value, or its base64
    text as the Secret holds it) is blanked in the condition, the Event note and the pass error."""
    secret = "where_eq() expected array|null, got string"  # a cause this rule's failure is known to hold
    w = world(ASSIGNED)
    w.order(assignments="a-string")
    sink = SecretSink()
    sink.add(secret)
    with use_sink(sink):
        texts = told(w, caplog)
    for text in texts[:3]:
        assert secret not in text and "[redacted]" in text, text
    encoded = base64.b64encode(secret.encode()).decode()
    assert sink.redact(f"a {secret} b {encoded} c") == "a [redacted] b [redacted] c"
