"""The API request observer: every request counted and timed, its label children looked up once."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from engine.metrics import Metrics


def test_each_request_is_counted_and_a_label_set_is_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """100 requests of two verbs: both series count them all, and labels() ran once per verb and metric
    (it takes a lock and builds a key: once per request was a hot spot of a pass, issue 11)."""
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    lookups: list[dict[str, Any]] = []
    for metric in (metrics.api_requests, metrics.api_request_duration):
        real = metric.labels

        def counting(*args: Any, _real: Any = real, **labels: Any) -> Any:
            lookups.append(labels)
            return _real(*args, **labels)

        monkeypatch.setattr(metric, "labels", counting)
    observe = metrics.api_request_observer("edge-1")
    for i in range(100):
        observe("GET" if i % 2 else "LIST", "200", 0.01)
    for verb in ("GET", "LIST"):
        labels = {"cluster": "edge-1", "verb": verb, "code": "200"}
        assert registry.get_sample_value("c5c3_operator_api_requests_total", labels) == 50
        assert registry.get_sample_value("c5c3_operator_api_request_duration_seconds_count", labels) == 50
    assert len(lookups) == 4
