"""Written cases: create, get, list, update, delete, selectors, watch, conflicts, on all three legs."""

from __future__ import annotations

import pytest

from tests.differential.harness import Case, Runner, call, report
from tests.differential.objects import CM, configmap

CASES = [
    Case("create, get, update, no-op update, delete", [
        call("POST", CM, configmap("a", {"x": "1"}, k="v"), name="a"),
        call("GET", CM + "/a"),
        call("POST", CM, configmap("a")),
        call("PUT", CM + "/a", {**configmap("a", k="w"), "metadata": {"name": "a", "resourceVersion": "$rv(a)"}},
             name="a2"),
        call("PUT", CM + "/a", {**configmap("a", k="x"), "metadata": {"name": "a", "resourceVersion": "$rv(a)"}}),
        call("PUT", CM + "/a", {**configmap("a", k="w"), "metadata": {"name": "a"}}),
        call("DELETE", CM + "/a"),
        call("GET", CM + "/a"),
        call("DELETE", CM + "/a"),
    ]),
    Case("list with label and field selectors", [
        call("POST", CM, configmap("a", {"tier": "db", "app": "x"})),
        call("POST", CM, configmap("b", {"tier": "web"})),
        call("POST", CM, configmap("c")),
        call("GET", CM, labelSelector="tier=db"),
        call("GET", CM, labelSelector="tier in (db,web),app"),
        call("GET", CM, labelSelector="!app"),
        call("GET", CM, labelSelector="tier notin (db)"),
        call("GET", CM, fieldSelector="metadata.name=b"),
        call("GET", CM, fieldSelector="metadata.name!=b,metadata.namespace={ns}"),
        call("GET", CM, fieldSelector="spec.x=b"),
        call("GET", CM, labelSelector="tier=="),
        call("GET", CM, labelSelector="a b"),
    ]),
    Case("watch from a resourceVersion, with a label selector", [
        call("POST", CM, configmap("a", {"w": "1"}), name="a"),
        call("POST", CM, configmap("b", {"w": "1"})),
        call("PUT", CM + "/b", configmap("b", {"w": "2"})),
        call("DELETE", CM + "/a"),
        call("GET", CM, watch=1, resourceVersion="$rv(a)", timeoutSeconds=5,
             sentinel=configmap("zz-sentinel", {"w": "1"})),
        call("GET", CM, watch=1, resourceVersion="$rv(a)", labelSelector="w=1", timeoutSeconds=5,
             sentinel=configmap("zz-sentinel-2", {"w": "1"})),
    ]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_legs_agree(runner: Runner, case: Case) -> None:
    found = runner.run(case)
    assert not found, report(found)
