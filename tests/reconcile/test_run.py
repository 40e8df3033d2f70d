"""run_pass on a neutral Widget kind: what a user would see on the order and its children."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cluster.registry import ClusterSet
from engine.outcome import EventNote, Request
from engine.reconcile.run import run_pass
from engine.rules.catalog import load_catalog
from engine.rules.model import CompiledKind
from offline.clock import SimulatedClock
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster
from tests.conftest import PART, WIDGET

GATED = WIDGET.swap("steps:\n", """gates:
  - name: size-limit
    when: "size > `3`"
    reason: Broken
    message: "size {{ size }} is more than 3"
    requeue: 1m
  - finalizer: true
    requeue: 1s
steps:
""")


def part_is_ready(w: World) -> None:
    """The part reports ``status.ready``. A ConfigMap has no status on an API server (a write drops it), so the
    part is seeded with one, as given."""
    part = w.cluster.get("v1", "ConfigMap", "ns", "w-part")
    w.cluster.seed({**part, "status": {"ready": True}})


class World:
    def __init__(self, kind: CompiledKind) -> None:
        self.clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
        self.cluster = MemoryCluster("", clock=self.clock, permissive=True)
        self.faulty = FaultyCluster(self.cluster, cluster_name="")
        self.kind = kind
        self.request = Request(kind.key, "", "ns", "w")

    def order(self, **spec: object) -> None:
        self.cluster.create({"apiVersion": "example.io/v1", "kind": "Widget",
                             "metadata": {"name": "w", "namespace": "ns"}, "spec": dict(spec)})

    def run(self):  # type: ignore[no-untyped-def]
        self.faulty.calls.clear()
        return run_pass(self.kind, self.request, clusters=ClusterSet(self.faulty), clock=self.clock)

    def live(self) -> dict:  # type: ignore[type-arg]
        return self.cluster.get("example.io/v1", "Widget", "ns", "w")

    def conditions(self) -> dict[str, tuple[str, str]]:
        return {c["type"]: (c["status"], c["reason"]) for c in self.live().get("status", {}).get("conditions", [])}

    def writes(self) -> list[str]:
        return [c.verb for c in self.faulty.calls if c.verb not in ("get", "list", "watch")]


@pytest.fixture
def world(rules_dir: Callable[..., Path]) -> Callable[[str], World]:
    def make(rule: str = GATED) -> World:
        catalog = load_catalog(rules_dir(rule))
        return World(next(iter(catalog.values())))
    return make


def test_gate_refusal_writes_every_condition_and_no_finalizer(world: Callable[[str], World]) -> None:
    """A gate that holds writes its reason on the sub-conditions, Ready False, and installs nothing."""
    w = world(GATED)
    w.order(size=5)
    result = w.run()
    assert w.conditions() == {"BuiltReady": ("False", "Broken"), "Ready": ("False", "NotAllReady")}
    assert result.requeue_after == dt.timedelta(minutes=1)
    assert "finalizers" not in w.live()["metadata"]
    assert w.cluster.list("v1", "ConfigMap", "ns").items == []


def test_finalizer_then_steps_then_converged_pass_writes_nothing(world: Callable[[str], World]) -> None:
    """The finalizer comes first; the step waits on its child; once ready, a pass writes nothing."""
    w = world(GATED)
    w.order(size=2)
    assert w.run().requeue_after == dt.timedelta(seconds=1)
    assert w.live()["metadata"]["finalizers"] == ["example.io/teardown"]
    result = w.run()
    assert w.conditions()["BuiltReady"] == ("False", "Waiting")
    assert result.requeue_after == dt.timedelta(seconds=10)
    part = w.cluster.get("v1", "ConfigMap", "ns", "w-part")
    labels = {"example.io/name": "w", "example.io/namespace": "ns", "example.io/cluster": ""}
    assert part["metadata"]["labels"] == labels
    part_is_ready(w)
    result = w.run()
    assert w.conditions() == {"BuiltReady": ("True", "Built"), "Ready": ("True", "AllReady")}
    assert result.requeue_after is None
    w.run()
    assert w.writes() == []


def test_an_api_error_reports_on_the_step_condition_and_fails_the_pass(world: Callable[[str], World]) -> None:
    """A failed apply writes the step's error reason with the API message and returns the error."""
    apply = "      - apply: part.yaml.j2\n"
    rule = GATED.add_after(apply, "        error: {reason: Broken}\n")
    w = world(rule)
    w.order(size=1)
    w.run()
    w.faulty.inject(verb="apply", kind="ConfigMap", error="ServerError")
    result = w.run()
    assert result.error is not None
    assert w.conditions()["BuiltReady"][1] == "Broken"
    assert [o.error for o in result.outcomes] == [True]


def test_teardown_deletes_children_and_releases_the_finalizer(world: Callable[[str], World]) -> None:
    """Deleting the order deletes its children, then the order is gone; a foreign object stays."""
    w = world(GATED)
    w.order(size=1)
    w.run()
    w.run()
    w.cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "w-foreign", "namespace": "ns", "labels": {"example.io/name": "other"}}})
    w.cluster.delete("example.io/v1", "Widget", "ns", "w")
    assert w.run().requeue_after == dt.timedelta(seconds=10)  # patient: deletes issued, so come back ...
    assert [c.verb for c in w.faulty.calls if c.verb == "delete"] == ["delete"]
    w.run()  # ... the next pass lists nothing and releases the finalizer
    with pytest.raises(Exception, match="not found"):
        w.live()
    assert [o["metadata"]["name"] for o in w.cluster.list("v1", "ConfigMap", "ns").items] == ["w-foreign"]


TWO_KINDS = GATED.swap("""teardown:
  patientWhile: "`true`"
  do:
    - delete: {apiVersion: v1, kind: ConfigMap}
""", """teardown:
  patientWhile: "order.spec.patient"
  do:
    - delete: {apiVersion: v1, kind: ConfigMap}
      error: "deleting part {{ go_quote(item.metadata.name) }}: {{ error }}"
    - delete: {apiVersion: v1, kind: Secret}
      error: "deleting secret {{ go_quote(item.metadata.name) }}: {{ error }}"
""")


def _two_children(w: World) -> None:
    w.run()
    w.run()
    w.cluster.create({"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "w-key", "namespace": "ns",
        "labels": {"example.io/name": "w", "example.io/namespace": "ns", "example.io/cluster": ""}}})
    w.cluster.delete("example.io/v1", "Widget", "ns", "w")


@pytest.mark.parametrize("patient", [True, False])
def test_teardown_error_patient_stops_fail_open_runs_every_action(
        world: Callable[[str], World], patient: bool) -> None:
    """Patient: the first failed delete ends the pass with its error and keeps the finalizer. Fail-open: every
    action runs, the errors are joined and logged, and the finalizer is released; no status is written."""
    w = world(TWO_KINDS)
    w.order(size=1, patient=patient)
    _two_children(w)
    w.faulty.inject(verb="delete", kind="ConfigMap", error="ServerError")
    result = w.run()
    secrets = [o["metadata"]["name"] for o in w.cluster.list("v1", "Secret", "ns").items]
    if patient:
        assert result.error is not None and str(result.error).startswith('deleting part "w-part": ')
        assert secrets == ["w-key"] and w.live()["metadata"]["finalizers"] == ["example.io/teardown"]
    else:
        assert result.error is None and secrets == []
        with pytest.raises(Exception, match="not found"):
            w.live()
    assert "update" not in w.writes()


SERVED = GATED.swap("values:\n", """inputs:
  gadgetsServed:
    served: {apiVersion: example.io/v1, kind: Gadget}
values:
""").swap("      - apply: part.yaml.j2\n", """      - refuse: "!gadgetsServed"
        reason: Broken
        message: the cluster serves no Gadget kind
        requeue: 10m
      - apply: part.yaml.j2
        foreign: {reason: Broken, message: "{{ prefix }}part belongs to someone else"}
""")


def test_served_input_reads_discovery(world: Callable[[str], World]) -> None:
    """A `served` input is false until the cluster serves the kind, and true after."""
    w = world(SERVED)
    w.order(size=1)
    w.run()
    w.cluster.unserve("example.io/v1", "Gadget")
    result = w.run()
    assert w.conditions()["BuiltReady"] == ("False", "Broken")
    assert result.requeue_after == dt.timedelta(minutes=10)
    w.cluster.serve("example.io/v1", "Gadget")
    w.run()
    assert w.conditions()["BuiltReady"] == ("False", "Waiting")


def test_foreign_child_stops_the_step_without_touching_it(world: Callable[[str], World]) -> None:
    """A live object of the child's name without the ownership labels is refused, not overwritten."""
    w = world(SERVED)
    w.order(size=1)
    w.run()
    w.cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w-part", "namespace": "ns"},
                      "data": {"mine": "yes"}})
    result = w.run()
    assert result.error is None
    assert w.conditions()["BuiltReady"] == ("False", "Broken")
    assert w.cluster.get("v1", "ConfigMap", "ns", "w-part")["data"] == {"mine": "yes"}
    assert w.writes() == ["update"]


def test_prefix_may_name_a_value_nothing_else_reads(world: Callable[[str], World]) -> None:
    """children.prefix resolves the lazy values it names even when no earlier expression read them."""
    rule = GATED.swap('prefix: "{{ order.metadata.name }}-"', 'prefix: "{{ stem }}-"').swap(
        "values:\n", 'values:\n  stem: "join(\'\', [order.metadata.name, \'x\'])"\n')
    w = world(rule)
    w.order(size=1)
    w.run()
    w.run()
    assert w.cluster.get("v1", "ConfigMap", "ns", "wx-part")["metadata"]["name"] == "wx-part"


def test_failing_gate_writes_its_conditions_and_fails_the_pass(world: Callable[[str], World]) -> None:
    """A gate with `fail: true` writes its verdict and ends the pass with its message as the error."""
    w = world(GATED.swap("    requeue: 1m\n  - finalizer", "    fail: true\n  - finalizer"))
    w.order(size=5)
    result = w.run()
    assert str(result.error) == "size 5 is more than 3"
    assert w.conditions()["BuiltReady"] == ("False", "Broken")


def test_gate_error_reports_a_failed_read_on_the_conditions(world: Callable[[str], World]) -> None:
    """A read that fails while a gate is checked writes the gate's error reason and fails the pass."""
    rule = GATED.swap("values:\n", """inputs:
  config:
    get: {apiVersion: v1, kind: ConfigMap, namespace: "{{ order.metadata.namespace }}", name: settings}
    error: "reading settings: {{ error }}"
values:
""").swap('    when: "size > `3`"\n', '    when: "size > `3` || config.data.block == \'yes\'"\n'
             ).swap("    requeue: 1m\n  - finalizer", "    requeue: 1m\n    error: {reason: Waiting}\n  - finalizer")
    w = world(rule)
    w.order(size=1)
    w.faulty.inject(verb="get", kind="ConfigMap", name="settings", error="ServerError")
    result = w.run()
    assert result.error is not None and str(result.error).startswith("reading settings: ")
    assert w.conditions()["BuiltReady"][1] == "Waiting"


def test_continue_records_the_verdict_and_runs_the_rest_of_the_step(world: Callable[[str], World]) -> None:
    """A `continue: true` refusal keeps its verdict on the condition while later actions still run."""
    rule = GATED.swap("      - apply: part.yaml.j2\n", """      - refuse: "size == `2`"
        reason: Broken
        message: two is an odd size
        requeue: 30s
        continue: true
      - log: "building {{ size }} parts"
      - apply: part.yaml.j2
""")
    w = world(rule)
    w.order(size=2)
    w.run()
    result = w.run()
    assert w.cluster.get("v1", "ConfigMap", "ns", "w-part")["data"] == {"size": "2"}
    assert w.conditions()["BuiltReady"] == ("False", "Broken")
    assert result.requeue_after == dt.timedelta(seconds=10)  # the later wait still ran: the shorter requeue wins


def test_log_action_writes_a_line_with_the_order(
        world: Callable[[str], World], caplog: pytest.LogCaptureFixture) -> None:
    """A `log` action writes its text with the order and cluster as fields."""
    log = '      - log: "building {{ size }} parts"\n        level: warning\n'
    rule = GATED.add_before("      - apply: part.yaml.j2\n", log)
    w = world(rule)
    w.order(size=2)
    w.run()
    with caplog.at_level("INFO", logger="engine"):
        w.run()
    record = next(r for r in caplog.records if r.getMessage() == "building 2 parts")
    assert record.levelname == "WARNING"
    assert record.__dict__["order"] == "ns/w"


def test_live_input_bypasses_caches(world: Callable[[str], World]) -> None:
    """An input marked `live: true` is read with live=True; others may come from a cache."""
    rule = GATED.swap("values:\n", """inputs:
  fresh:
    get: {apiVersion: v1, kind: ConfigMap, namespace: "{{ order.metadata.namespace }}", name: fresh}
    live: true
  cached:
    get: {apiVersion: v1, kind: ConfigMap, namespace: "{{ order.metadata.namespace }}", name: cached}
values:
""").swap('    when: "size > `3`"\n', '    when: "size > `3` || fresh != `null` || cached != `null`"\n')
    w = world(rule)
    w.order(size=1)
    w.run()
    reads = {c.name: c.extra.get("live") for c in w.faulty.calls if c.kind == "ConfigMap" and c.verb == "get"}
    assert reads["fresh"] is True
    assert not reads["cached"]


def test_input_error_text_may_name_other_values(world: Callable[[str], World]) -> None:
    """An input's error text renders with the pass's values, not only `{{ error }}`."""
    rule = GATED.swap("values:\n", """inputs:
  config:
    get: {apiVersion: v1, kind: ConfigMap, namespace: "{{ order.metadata.namespace }}", name: settings}
    error: "reading settings for {{ size }} parts: {{ error }}"
values:
""").swap('    when: "size > `3`"\n', '    when: "size > `3` || config != `null`"\n')
    w = world(rule)
    w.order(size=1)
    w.faulty.inject(verb="get", kind="ConfigMap", name="settings", error="ServerError")
    result = w.run()
    assert str(result.error).startswith("reading settings for 1 parts: ")


def test_a_rule_failing_at_run_time_names_its_place_expression_and_types(
        world: Callable[[str], World], caplog: pytest.LogCaptureFixture) -> None:
    """An expression that fails on the data it met: one error line with the rule file, line, the
    expression and the types; the step's condition says the same; the pass fails (retried)."""
    w = world(GATED.swap('size: "order.spec.size || `1`"', 'size: "add(order.spec.size, `1`)"')
              .swap('when: "size > `3`"', 'when: "`false`"'))
    w.order(size="big")
    w.run()  # the finalizer
    with caplog.at_level("INFO", logger="engine"):
        result = w.run()
    assert result.error is not None
    assert "widget.yaml:17:9: cannot evaluate 'add(order.spec.size, `1`)': add() expected number, got string" \
        in str(result.error)
    record = next(r for r in caplog.records if r.levelname == "ERROR")
    assert record.__dict__["rule"].endswith("widget.yaml:17:9")
    assert record.__dict__["expression"] == "add(order.spec.size, `1`)"
    assert "got string" in record.__dict__["reason"]
    assert record.__dict__["order"] == "ns/w"
    assert w.conditions()["BuiltReady"] == ("False", "Error")
    message = next(c["message"] for c in w.live()["status"]["conditions"] if c["type"] == "BuiltReady")
    assert "widget.yaml:17:9" in message and "got string" in message


def test_refusals_and_failures_are_noted_for_an_event_and_converging_is_not(world: Callable[[str], World]) -> None:
    """A gate refusal, a refuse action and a failed step hand the runtime an Event note (reason, message,
    the order's uid); the converge path, waits included, hands none (recording costs requests)."""
    refuse = "      - apply: part.yaml.j2\n"
    refusal = '      - refuse: "size == `3`"\n        reason: Broken\n        message: three is refused\n'
    rule = GATED.swap(refuse, refusal + refuse + "        error: {reason: Broken}\n")
    w = world(rule)
    w.order(size=5)
    uid = w.live()["metadata"]["uid"]
    assert w.run().event == EventNote("Broken", "size 5 is more than 3", uid)
    w.cluster.patch("example.io/v1", "Widget", "ns", "w", {"spec": {"size": 3}})
    w.run()  # the finalizer
    assert w.run().event == EventNote("Broken", "three is refused", uid)
    w.cluster.patch("example.io/v1", "Widget", "ns", "w", {"spec": {"size": 2}})
    w.faulty.inject(verb="apply", kind="ConfigMap", error="ServerError")
    failed = w.run().event
    assert failed is not None and failed.reason == "Broken" and failed.uid == uid
    assert w.run().event is None  # waiting for the part
    part_is_ready(w)
    assert [w.run().event, w.run().event] == [None, None]  # ready, then converged


def test_a_text_value_renders_as_the_document_it_is(rules_dir: Callable[..., Path]) -> None:
    """A `text:` value (and a `set:` text) is Jinja over the pass's values, rendered as written, final newline kept."""
    doc = "  doc:\n    text: |\n      size: {{ size }}\n      parts:\n        - a\n"
    rule = GATED.add_after("values:\n", doc).swap(
        "      - apply: part.yaml.j2\n",
        "      - set:\n          url: {text: \"part://{{ order.metadata.name }}:{{ size }}/x\"}\n"
        "      - apply: part.yaml.j2\n")
    template = PART.add_after("  size: {{ size | string | tojson }}\n",
                              "  doc: {{ doc | tojson }}\n  url: {{ url | tojson }}\n")
    w = World(next(iter(load_catalog(rules_dir(rule, template=template)).values())))
    w.order(size=2)
    w.run()
    w.run()
    data = w.cluster.get("v1", "ConfigMap", "ns", "w-part")["data"]
    assert data["doc"] == "size: 2\nparts:\n  - a\n"
    assert data["url"] == "part://w:2/x"


def test_one_verdict_row_takes_its_reason_from_a_table(world: Callable[[str], World]) -> None:
    """A verdict whose `reason` is rendered (`{{ cause }}`) writes that reason when it is declared."""
    rule = GATED.add_after("values:\n", "  cause: \"if_else(size == `2`, 'Waiting', 'Unknown')\"\n").swap(
        "      - apply: part.yaml.j2\n",
        "      - refuse: \"size < `3`\"\n        reason: \"{{ cause }}\"\n        message: \"because {{ cause }}\"\n"
        "        requeue: 30s\n      - apply: part.yaml.j2\n")
    w = world(rule)
    w.order(size=2)
    w.run()
    w.run()
    assert w.conditions()["BuiltReady"] == ("False", "Waiting")


def test_a_rendered_reason_that_is_not_declared_fails_the_step(world: Callable[[str], World]) -> None:
    """A rendered reason outside conditions.reasons is a rule error naming where it was written, never written."""
    rule = GATED.swap(
        "      - apply: part.yaml.j2\n",
        "      - refuse: \"size < `3`\"\n        reason: \"{{ 'Nope' }}\"\n        message: no\n"
        "      - apply: part.yaml.j2\n")
    w = world(rule)
    w.order(size=2)
    w.run()
    result = w.run()
    assert result.error is not None
    assert "widget.yaml:" in str(result.error) and "'Nope', which is not declared in conditions.reasons" in str(
        result.error)
    assert w.conditions()["BuiltReady"][1] != "Nope"


def test_a_decision_row_may_give_a_text(rules_dir: Callable[..., Path]) -> None:
    """A row's `text:` renders like a text value when its `when` holds; a `value:` row still reads a query."""
    table = ("  address:\n    - when: \"size == `2`\"\n"
             "      text: \"http://{{ order.metadata.name }}-{{ size }}.svc/v3\"\n"
             "    - value: \"'none'\"\n")
    rule = GATED.add_after("values:\n", table)
    template = PART.add_after("  size: {{ size | string | tojson }}\n", "  address: {{ address | tojson }}\n")
    w = World(next(iter(load_catalog(rules_dir(rule, template=template)).values())))
    w.order(size=2)
    w.run()
    w.run()
    assert w.cluster.get("v1", "ConfigMap", "ns", "w-part")["data"]["address"] == "http://w-2.svc/v3"


DELIVERED = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ (order.metadata.name ~ '-delivered') | tojson }}
  namespace: {{ order.metadata.namespace | tojson }}
  labels: {"example.io/name": {{ order.metadata.name | tojson }}}
  ownerReferences:
    - {apiVersion: {{ order.apiVersion | tojson }}, kind: {{ order.kind | tojson }},
       name: {{ order.metadata.name | tojson }}, uid: {{ order.metadata.uid | tojson }}, controller: true}
data:
  size: {{ size | string | tojson }}
"""
OWNED = GATED.swap("      - apply: part.yaml.j2\n        as: part\n", """      - apply: delivered.yaml.j2
        adopt: owned
        foreign: {reason: Broken, message: "{{ order.metadata.name }}-delivered is not this order's"}
        as: part
""")


def test_adopt_owned_refuses_an_object_the_order_does_not_control_untouched(
        world: Callable[[str], World], rules_dir: Callable[..., Path]) -> None:
    """`adopt: owned`: a live object of that name without the order's controller reference is refused
    (a refusal, noted for an Event), untouched; once it is gone the object is written and bound."""
    catalog = load_catalog(rules_dir(OWNED, extra={"templates/widget/delivered.yaml.j2": DELIVERED}))
    w = World(next(iter(catalog.values())))
    w.order(size=2)
    w.run()  # the finalizer
    w.cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w-delivered", "namespace": "ns"},
                      "data": {"mine": "yes"}})
    result = w.run()
    assert w.conditions()["BuiltReady"] == ("False", "Broken")
    assert result.event is not None and result.event.message == "w-delivered is not this order's"
    assert w.cluster.get("v1", "ConfigMap", "ns", "w-delivered")["data"] == {"mine": "yes"}
    w.cluster.delete("v1", "ConfigMap", "ns", "w-delivered")
    w.run()
    delivered = w.cluster.get("v1", "ConfigMap", "ns", "w-delivered")
    assert delivered["data"] == {"size": "2"} and delivered["metadata"]["ownerReferences"][0]["controller"] is True
    assert w.conditions()["BuiltReady"] == ("False", "Waiting")  # the bound object is the written one


DELETES_EXTRA = GATED.swap("values:\n", """inputs:
  extra:
    get: {apiVersion: v1, kind: ConfigMap, namespace: ns, name: w-extra}
values:
""").swap("      - apply: part.yaml.j2\n", """      - delete: "extra"
        when: "extra != `null`"
      - apply: part.yaml.j2
""")


def test_a_delete_skips_an_object_already_being_deleted(world: Callable[[str], World]) -> None:
    """An object a finalizer holds after its delete is not deleted again on the next pass."""
    w = world(DELETES_EXTRA)
    w.order(size=1)
    w.run()  # the finalizer
    w.cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "w-extra", "namespace": "ns", "finalizers": ["example.io/hold"]}})
    w.run()
    assert "delete" in w.writes()
    assert w.cluster.get("v1", "ConfigMap", "ns", "w-extra")["metadata"].get("deletionTimestamp")
    w.run()
    assert "delete" not in w.writes()
