"""Scenario files are read into the model, and every mistake is named with file, line and column."""

from __future__ import annotations

import datetime as dt
import textwrap
from pathlib import Path

import pytest

from offline.scenario import model as m
from offline.scenario.loader import load_scenario
from offline.scenario.model import ScenarioErrors


def load(tmp_path: Path, text: str, name: str = "s.yaml") -> m.Scenario:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    scenario = load_scenario(path, name)
    assert scenario is not None
    return scenario


def errors(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "bad.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(ScenarioErrors) as caught:
        load_scenario(path, "bad.yaml")
    return [str(e) for e in caught.value.errors]


class TestFixtures:
    def test_a_file_without_a_scenario_key_is_a_fixture(self, tmp_path: Path) -> None:
        """YAML without a top-level `scenario:` (even several documents) is skipped, not an error."""
        path = tmp_path / "world.yaml"
        path.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nkind: X\n")
        assert load_scenario(path) is None

    def test_a_second_document_in_a_scenario_file_is_an_error(self, tmp_path: Path) -> None:
        """A scenario holds one document; objects go under `objects:`."""
        assert errors(tmp_path, "scenario: x\nsteps: []\n---\nkind: X\n") == [
            "bad.yaml:4:1: a scenario file holds one YAML document; put objects under `objects:`"]


class TestForms:
    def test_every_step_form_is_read(self, tmp_path: Path) -> None:
        """Each step key becomes its step, with cluster and expectError beside it."""
        scenario = load(tmp_path, """\
            scenario: all forms
            clusters: [edge-1]
            steps:
              - create: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: n}}
                cluster: edge-1
                expectError: [a, b]
              - update: {kind: ConfigMap, metadata: {name: c, namespace: n}, data: {x: "1"}}
                expectError: one
              - patchStatus: {apiVersion: x.io/v1, kind: Thing, metadata: {name: t}, status: {ready: true}}
              - delete: {kind: ConfigMap, namespace: n, name: c}
              - removeFinalizers: {apiVersion: x.io/v1, kind: Thing, metadata: {name: t, namespace: n}}
              - settle: {}
              - advance: 1h30m
              - reconcile: {apiVersion: x.io/v1, kind: Thing, namespace: n, name: t}
              - fail: {verb: apply, kind: Thing, error: Conflict, times: 2}
              - serve: {apiVersion: x.io/v1, kind: Thing}
                cluster: edge-1
              - deregister: {cluster: edge-1}
              - register: {cluster: edge-1}
              - expect:
                  - noSecretLeak: {}
            """)
        kinds = [type(s).__name__ for s in scenario.steps]
        assert kinds == ["Create", "Update", "PatchStatus", "Delete", "RemoveFinalizers", "Settle", "Advance",
                         "Reconcile", "Fail", "Serve", "Deregister", "Register", "Expect"]
        create, update, patch = scenario.steps[0], scenario.steps[1], scenario.steps[2]
        assert create.cluster == "edge-1" and create.expect_error == ("a", "b") and create.index == 1
        assert create.pos == m.Pos("s.yaml", 4, 5)
        assert update.expect_error == ("one",)
        assert isinstance(patch, m.PatchStatus) and patch.status == {"ready": True}
        advance = scenario.steps[6]
        assert isinstance(advance, m.Advance) and advance.delta == dt.timedelta(minutes=90)
        fail = scenario.steps[8]
        assert isinstance(fail, m.Fail)
        assert (fail.call_verb, fail.kind, fail.error, fail.times, fail.name) == ("apply", "Thing", "Conflict", 2, None)
        assert scenario.steps[10].cluster == "edge-1" and scenario.steps[11].verb == "register"

    def test_every_assertion_form_is_read(self, tmp_path: Path) -> None:
        """Each assertion key becomes its assertion, conditions parsed into status and reason."""
        scenario = load(tmp_path, """\
            scenario: all assertions
            steps:
              - expect:
                  - present: {kind: Secret, metadata: {name: s, namespace: n}, "(length(data))": 2}
                  - absent: {kind: Secret, namespace: n, name: s}
                  - conditions: {ref: {kind: W, namespace: n, name: w}, Ready: "False/NotAllReady", A: True, B: Absent}
                  - message: {ref: {kind: W, namespace: n, name: w}, type: A, contains: x, excludes: y}
                  - count: {kind: Secret, namespace: n, labels: {a: b}, equals: 3}
                  - requeueAfter: 1m
                  - requeueAfter: null
                  - secretData: {ref: {kind: Secret, namespace: n, name: s}, key: k,
                                 sameAs: {ref: {kind: Secret, namespace: m, name: t}}}
                  - calls: {verbs: [get, apply], equals: 0}
                  - metric: {name: m_total, labels: {a: b}, atLeast: 1.5}
                  - noSecretLeak: {}
            """)
        step = scenario.steps[0]
        assert isinstance(step, m.Expect)
        a = step.assertions
        assert [x.verb for x in a] == ["present", "absent", "conditions", "message", "count", "requeueAfter",
                                       "requeueAfter", "secretData", "calls", "metric", "noSecretLeak"]
        assert isinstance(a[2], m.Conditions)
        assert dict(a[2].expected) == {"Ready": ("False", "NotAllReady"), "A": ("True", None), "B": "Absent"}
        assert isinstance(a[4], m.Count) and a[4].labels == (("a", "b"),) and a[4].equals == 3
        assert isinstance(a[5], m.RequeueAfter) and a[5].delta == dt.timedelta(seconds=60)
        assert isinstance(a[6], m.RequeueAfter) and a[6].delta is None
        assert isinstance(a[7], m.SecretData) and a[7].same_as is not None
        assert a[7].same_as.key == "k" and a[7].same_as.cluster == ""
        assert isinstance(a[8], m.Calls) and a[8].verbs == ("get", "apply")
        assert isinstance(a[9], m.Metric) and a[9].at_least == 1.5 and a[9].equals is None
        assert a[1].pos == m.Pos("s.yaml", 5, 9)

    def test_now_and_objects(self, tmp_path: Path) -> None:
        """`now` sets the clock's start; objects keep what they carry; unquoted timestamps stay text."""
        scenario = load(tmp_path, """\
            scenario: world
            now: 2027-02-03T04:05:06Z
            objects:
              - object: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, creationTimestamp: 2020-01-01T00:00:00Z}}
            steps: []
            """)
        assert scenario.now == dt.datetime(2027, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
        assert scenario.objects[0].obj["metadata"]["creationTimestamp"] == "2020-01-01T00:00:00Z"
        assert scenario.objects[0].cluster == ""

    def test_the_default_start_is_the_contract_s(self, tmp_path: Path) -> None:
        """Without `now`, the clock starts at 2026-01-01T00:00:00Z."""
        assert load(tmp_path, "scenario: x\nsteps: []\n").now == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class TestErrors:
    @pytest.mark.parametrize(("text", "expected"), [
        ("scenario: x\nstep: []\n", ["bad.yaml:2:1: unknown key 'step' in a scenario; expected one of: scenario, "
                                     "rules, clusters, unserved, now, objects, steps",
                                     "bad.yaml:1:1: a scenario needs `steps:`"]),
        ("scenario: ''\nsteps: []\n", ["bad.yaml:1:11: `scenario` must not be empty"]),
        ("scenario: x\nsteps:\n  - settle: {}\n    advance: 1m\n",
         ["bad.yaml:3:5: a step needs exactly one of: create, update, patchStatus, delete, removeFinalizers, settle, "
          "advance, reconcile, fail, serve, deregister, register, unreachable, reachable, expect "
          "(found settle, advance)"]),
        ("scenario: x\nsteps:\n  - wait: 1m\n",
         ["bad.yaml:3:5: unknown key 'wait' in a step; expected one of: create, update, patchStatus, delete, "
          "removeFinalizers, settle, advance, reconcile, fail, serve, deregister, register, unreachable, reachable, "
          "expect (with cluster, expectError, statusFrom beside it)"]),
        ("scenario: x\nsteps:\n  - settle: {}\n    expectError: x\n",
         ["bad.yaml:4:5: `expectError` goes with create, update, patchStatus, delete, removeFinalizers, reconcile, "
          "not with `settle`"]),
        ("scenario: x\nsteps:\n  - advance: 90\n", ["bad.yaml:3:14: a duration needs a unit: write 90s, 90m or 90h"]),
        ("scenario: x\nsteps:\n  - advance: 1y\n",
         ["bad.yaml:3:14: invalid duration: unknown unit (use h, m, s, ms, us or ns) ('1y'); write a "
          "Go duration such as 90s, 10m or 1h30m"]),
        ("scenario: x\nsteps:\n  - advance: -1s\n", ["bad.yaml:3:14: a duration cannot be negative (-1s)"]),
        ("scenario: x\nsteps:\n  - settle: {}\n    cluster: edge-9\n",
         ["bad.yaml:4:14: cluster 'edge-9' is not declared under `clusters:` (declared: none; \"\" is the "
          "management cluster)"]),
        ("scenario: x\nsteps:\n  - fail: {verb: poke, error: Conflict}\n",
         ["bad.yaml:3:18: unknown verb 'poke'; expected one of: get, list, create, update, patch, apply, delete, "
          "watch"]),
        ("scenario: x\nsteps:\n  - fail: {error: Boom}\n",
         ["bad.yaml:3:19: unknown error 'Boom'; expected one of: Conflict, NotFound, AlreadyExists, Invalid, "
          "ServerError, Timeout, BadRequest, Forbidden, Gone"]),
        ("scenario: x\nsteps:\n  - fail: {verb: get}\n", ["bad.yaml:3:11: `fail` needs `error`"]),
        ("scenario: x\nsteps:\n  - expect:\n      - conditions: {ref: {kind: W, name: w}, Ready: Yes/Fine}\n",
         ["bad.yaml:4:54: condition status must be one of True, False, Unknown (or \"Absent\"), got 'Yes'"]),
        ("scenario: x\nsteps:\n  - expect: []\n", ["bad.yaml:3:13: `expect` needs at least one assertion"]),
        ("scenario: x\nsteps:\n  - expect:\n      - present: {kind: W}\n",
         ["bad.yaml:4:18: the expected object needs `metadata` with a `name`"]),
        ("scenario: x\nsteps:\n  - delete: {kind: W, name: w, uid: x}\n",
         ["bad.yaml:3:32: unknown key 'uid' in an object reference; expected one of: apiVersion, kind, namespace, "
          "name"]),
        ("scenario: x\nsteps:\n  - create: {kind: W, metadata: {name: w}}\n",
         ["bad.yaml:3:13: the object to create needs `apiVersion`"]),
        ("scenario: x\nsteps:\n  - expect:\n      - metric: {name: m, equals: 1, atLeast: 1}\n",
         ["bad.yaml:4:17: `metric` needs exactly one of `equals` or `atLeast`"]),
        ("scenario: x\nsteps:\n  - expect:\n      - secretData: {ref: {kind: Secret, name: s}, key: k}\n",
         ["bad.yaml:4:21: `secretData` needs exactly one of `equals`, `sameAs` or `differsFrom`"]),
        ("scenario: x\nsteps:\n  - register: {cluster: \"\"}\n",
         ["bad.yaml:3:25: the management cluster cannot register; name a target cluster"]),
        ("scenario: x\nclusters: [a, a]\nsteps: []\n", ["bad.yaml:2:15: cluster 'a' is declared twice"]),
        ("scenario: x\nnow: yesterday\nsteps: []\n",
         ["bad.yaml:2:6: `now` must be an RFC 3339 time such as \"2026-01-01T00:00:00Z\", got 'yesterday'"]),
        ("scenario: x\nobjects:\n  - file: nowhere.yml\nsteps: []\n",
         ["bad.yaml:3:11: fixture file 'nowhere.yml' not found (looked for nowhere.yml)"]),
        ("scenario: x\nsteps: [\n",
         ["bad.yaml:3:1: invalid YAML: expected the node content, but found '<stream end>'"]),
    ])
    def test_a_mistake_is_named_at_its_position(self, tmp_path: Path, text: str, expected: list[str]) -> None:
        """Each error reads file:line:col: what is wrong."""
        assert errors(tmp_path, text) == expected

    def test_errors_of_several_steps_are_reported_together(self, tmp_path: Path) -> None:
        """A bad step does not hide the next one's mistake."""
        found = errors(tmp_path, """\
            scenario: x
            steps:
              - advance: 5
              - settle: {}
              - expect:
                  - count: {kind: Secret}
                  - requeueAfter: soon
            """)
        assert [e.split(":")[1] for e in found] == ["3", "6", "7"]

    def test_a_fixture_error_points_into_the_fixture(self, tmp_path: Path) -> None:
        """An object in a fixture file without a kind is reported at the fixture's own line."""
        (tmp_path / "fx").mkdir()
        (tmp_path / "fx" / "w.yml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n"
                                               "apiVersion: v1\nmetadata: {name: b}\n")
        assert errors(tmp_path, "scenario: x\nobjects:\n  - file: fx/w.yml\nsteps: []\n") == [
            "fx/w.yml:5:1: a fixture object needs `kind`"]


class TestStatusFrom:
    """`statusFrom:` beside `patchStatus` takes the status to merge from a fixture file (an extension)."""

    STATUS = "# what the controller reports\nstatus:\n  conditions:\n    - {type: Ready, status: 'True'}\n"

    def test_the_fixture_status_is_the_patch(self, tmp_path: Path) -> None:
        """The step patches exactly the fixture's `status`, as if it were written inline."""
        (tmp_path / "fx").mkdir()
        (tmp_path / "fx" / "ready.yml").write_text(self.STATUS)
        scenario = load(tmp_path, """\
            scenario: x
            steps:
              - patchStatus: {apiVersion: example.io/v1, kind: Part, metadata: {name: p, namespace: ns}}
                statusFrom: fx/ready.yml
              - patchStatus:
                  apiVersion: example.io/v1
                  kind: Part
                  metadata: {name: p, namespace: ns}
                  status: {conditions: [{type: Ready, status: 'True'}]}
            """)
        first, second = scenario.steps
        assert isinstance(first, m.PatchStatus) and isinstance(second, m.PatchStatus)
        assert first.status == second.status == {"conditions": [{"type": "Ready", "status": "True"}]}
        assert (first.ref.kind, first.ref.name) == (second.ref.kind, second.ref.name) == ("Part", "p")

    @pytest.mark.parametrize(
        ("step", "expected"),
        [
            ("  - patchStatus: {kind: Part, metadata: {name: p}, status: {a: 1}}\n    statusFrom: fx/ready.yml\n",
             "bad.yaml:3:18: `patchStatus` takes its status from `status` or from `statusFrom`, not both"),
            ("  - patchStatus: {kind: Part, metadata: {name: p}}\n    statusFrom: fx/gone.yml\n",
             "bad.yaml:4:17: fixture file 'fx/gone.yml' not found (looked for fx/gone.yml)"),
            ("  - patchStatus: {kind: Part, metadata: {name: p}}\n    statusFrom: fx/bare.yml\n",
             "bad.yaml:4:17: fx/bare.yml must hold one document with a `status` mapping to merge"),
            ("  - delete: {kind: Part, name: p}\n    statusFrom: fx/ready.yml\n",
             "bad.yaml:4:5: `statusFrom` goes with `patchStatus`, not with `delete`"),
        ],
    )
    def test_a_mistake_is_named_at_its_position(self, tmp_path: Path, step: str, expected: str) -> None:
        """Both forms at once, a missing or shapeless fixture, and a stray `statusFrom` are invalid."""
        (tmp_path / "fx").mkdir()
        (tmp_path / "fx" / "ready.yml").write_text(self.STATUS)
        (tmp_path / "fx" / "bare.yml").write_text("conditions: []\n")
        assert errors(tmp_path, "scenario: x\nsteps:\n" + step) == [expected]
