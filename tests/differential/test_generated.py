"""Generated cases: hypothesis draws request sequences (``generate``) and every leg must answer each step alike.
The draws are derandomized (the same cases every run) and their number is bounded by
``C5C3_DIFFERENTIAL_EXAMPLES`` (per test; default below), so the tier's time is known: 2000 cases in about
2 minutes on a loaded 2-core machine (about 55 ms a case: three legs, a namespace each, a watch at the end)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings

from tests.differential.generate import cases, deployment_steps
from tests.differential.harness import Case, Runner, report

EXAMPLES = int(os.environ.get("C5C3_DIFFERENTIAL_EXAMPLES", "1500"))
"""Generated ConfigMap cases per run; the Deployment test runs a third as many."""

SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(case=cases())
def test_generated_configmap_sequences(runner: Runner, case: Case) -> None:
    found = runner.run(case)
    assert not found, report(found)


@settings(SETTINGS, max_examples=max(1, EXAMPLES // 3))
@given(case=cases(steps=deployment_steps, max_steps=5))
def test_generated_deployment_sequences(runner: Runner, case: Case) -> None:
    found = runner.run(case)
    assert not found, report(found)
