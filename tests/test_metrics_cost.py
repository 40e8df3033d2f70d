"""What a pass's metrics cost the worker that records them, counted in Python calls (load-independent, not timed):
a labelled child is found once, not built again from keyword arguments under the family's lock each pass."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from engine.metrics import Metrics, PassResult
from engine.outcome import StepOutcome
from tests.call_count import calls

CALLS_PER_PASS = 58
"""A pass's metrics (three steps' durations, one errored, its result and what woke it): 56 calls; 82 while every
record called the family's ``labels()``."""


def _record(metrics: Metrics) -> None:
    for _ in range(20):
        metrics.record_outcomes([StepOutcome("user", "UserReady", 0.01, False),
                                 StepOutcome("delivery", "DeliveryReady", 0.02, True),
                                 StepOutcome("ready", "Ready", 0.0, False)])
        metrics.record_pass(PassResult.REQUEUE_AFTER)
        metrics.record_wake("event", "Secret")


def test_a_pass_records_its_metrics_in_a_bounded_number_of_calls() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    _record(metrics)  # the children exist, as after an operator's first passes
    assert calls(lambda: _record(metrics)) / 20 <= CALLS_PER_PASS
    value = registry.get_sample_value
    assert value("c5c3_operator_reconcile_duration_seconds_count", {"sub_reconciler": "delivery"}) == 40
    errors = "c5c3_operator_reconcile_errors_total"
    assert value(errors, {"sub_reconciler": "delivery", "condition_type": "DeliveryReady"}) == 40
    assert value(errors, {"sub_reconciler": "user", "condition_type": "UserReady"}) is None
    assert value("c5c3_operator_reconcile_total", {"result": PassResult.REQUEUE_AFTER.value}) == 40
    assert value("c5c3_operator_pass_wakes_total", {"cause": "event", "kind": "Secret"}) == 40
