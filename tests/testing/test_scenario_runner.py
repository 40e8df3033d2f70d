"""Scenarios run end to end against the Gadget rules: every step and assertion, as a user sees them."""

from __future__ import annotations

import base64
import re
import textwrap

from engine.cluster.registry import ClusterSet
from engine.outcome import Request, Result
from offline.scenario import Outcome
from tests.conftest import RuleText
from tests.testing.conftest import Workspace, report

GADGET = "{apiVersion: example.io/v1, kind: Gadget, metadata: {name: g, namespace: shop}, spec: {}}"
REF = "{kind: Gadget, namespace: shop, name: g}"
PART = "{apiVersion: example.io/v1, kind: Part, metadata: {name: g-part, namespace: shop}, status: {ready: true}}"

READY = f"""\
scenario: a gadget becomes ready once its part reports ready
steps:
  - create: {GADGET}
  - settle: {{}}
  - patchStatus: {PART}
  - settle: {{}}
"""


def after_ready(steps: str, head: str = "") -> str:
    """READY (with extra top-level keys ``head``) followed by more steps."""
    return head + READY + textwrap.indent(textwrap.dedent(steps), "  ")


class TestHappyPath:
    def test_a_gadget_goes_from_created_to_ready(self, gadget: Workspace) -> None:
        """Create, settle, patchStatus, settle: the conditions, children and status read as written."""
        outcome = gadget.run(f"""\
            scenario: a gadget goes from created to ready
            objects:
              - object: {{apiVersion: v1, kind: Namespace, metadata: {{name: shop}}}}
            steps:
              - create: {GADGET}
              - settle: {{}}
              - expect:
                  - present:
                      apiVersion: example.io/v1
                      kind: Gadget
                      metadata: {{name: g, namespace: shop, finalizers: [example.io/teardown]}}
                      spec: {{size: 1}}
                  - conditions: {{ref: {REF}, PartReady: False/WaitingForPart, Ready: "False"}}
                  - message: {{ref: {REF}, type: PartReady, contains: "waiting for part g-part", excludes: error}}
                  - present: {{kind: Secret, metadata: {{name: g-secret, namespace: shop}},
                              "(length(data.password))": 60}}
                  - count: {{apiVersion: example.io/v1, kind: Part, namespace: shop, labels: {{example.io/name: g}},
                            equals: 1}}
                  - count: {{apiVersion: example.io/v1, kind: Part, equals: 1}}
              - patchStatus: {PART}
              - settle: {{}}
              - expect:
                  - conditions: {{ref: {REF}, PartReady: True/Built, Ready: True/AllReady}}
                  - conditions: {{ref: {REF}, Ready: true, Missing: Absent}}
                  - present: {{apiVersion: example.io/v1, kind: Gadget, metadata: {{name: g, namespace: shop}},
                              status: {{partName: g-part, nothere: null}}}}
              - reconcile: {REF}
              - expect:
                  - calls: {{verbs: [create, update, patch, apply, delete], equals: 0}}
                  - calls: {{verb: get, kind: Part, equals: 1}}
                  - requeueAfter: 60m
                  - noSecretLeak: {{}}
                  - metric: {{name: c5c3_operator_reconcile_duration_seconds_count,
                              labels: {{sub_reconciler: GadgetBuild}}, atLeast: 3}}
                  - metric: {{name: c5c3_operator_reconcile_errors_total,
                              labels: {{sub_reconciler: GadgetBuild, condition_type: PartReady}}, equals: 0}}
            """)
        assert outcome.status == "PASS", report(outcome)

    def test_delete_waits_for_the_finalizer_then_children_go(self, gadget: Workspace) -> None:
        """A delete leaves the object with a deletionTimestamp until the operator's teardown lets go."""
        outcome = gadget.run(after_ready(f"""\
              - delete: {REF}
              - expect:
                  - present: {{apiVersion: example.io/v1, kind: Gadget, metadata: {{name: g, namespace: shop}},
                              "(metadata.deletionTimestamp != null)": true}}
              - settle: {{}}
              - expect:
                  - absent: {{apiVersion: example.io/v1, kind: Gadget, namespace: shop, name: g}}
                  - absent: {{kind: Secret, namespace: shop, name: g-secret}}
                  - count: {{apiVersion: example.io/v1, kind: Part, namespace: shop, equals: 0}}
            """))
        assert outcome.status == "PASS", report(outcome)

    def test_remove_finalizers_lets_a_held_object_go(self, gadget: Workspace) -> None:
        """removeFinalizers clears what holds an object the scenario deleted."""
        outcome = gadget.run("""\
            scenario: an external controller lets go of its object
            objects:
              - object: {apiVersion: example.io/v1, kind: Widget,
                         metadata: {name: w, namespace: shop, finalizers: [x.io/f]}}
            steps:
              - delete: {apiVersion: example.io/v1, kind: Widget, namespace: shop, name: w}
              - expect:
                  - present: {kind: Widget, metadata: {name: w, namespace: shop, finalizers: [x.io/f]}}
              - removeFinalizers: {kind: Widget, namespace: shop, name: w}
              - expect:
                  - absent: {kind: Widget, namespace: shop, name: w}
            """)
        assert outcome.status == "PASS", report(outcome)

    def test_update_merges_everything_but_status(self, gadget: Workspace) -> None:
        """update is a merge patch: null removes a field, and a status in it is ignored."""
        outcome = gadget.run("""\
            scenario: update merges spec and metadata, not status
            objects:
              - object: {apiVersion: example.io/v1, kind: Widget,
                         metadata: {name: w, namespace: shop, labels: {a: "1"}},
                         spec: {x: 1, y: 2}, status: {phase: Old}}
            steps:
              - update: {kind: Widget, metadata: {name: w, namespace: shop, labels: {a: null, b: "2"}},
                         spec: {y: null, z: [1]}, status: {phase: New}}
              - expect:
                  - present: {apiVersion: example.io/v1, kind: Widget,
                              metadata: {name: w, namespace: shop, labels: {b: "2"}, generation: 2},
                              spec: {x: 1, y: null, z: [1]}, status: {phase: Old}, "(metadata.labels.a)": null}
            """)
        assert outcome.status == "PASS", report(outcome)

    def test_objects_from_a_fixture_file_land_on_the_named_cluster(self, gadget: Workspace) -> None:
        """`file:` loads every document; `cluster:` places them; missing metadata is filled in."""
        gadget.write("scenarios/fixtures/world.yml", """\
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: one, namespace: shop}
            ---
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: two, namespace: shop, uid: fixed-uid}
            """)
        outcome = gadget.run("""\
            scenario: fixtures land where they are told
            clusters: [edge-1]
            now: "2030-05-01T10:00:00Z"
            objects:
              - file: fixtures/world.yml
                cluster: edge-1
            steps:
              - expect:
                  - count: {kind: ConfigMap, namespace: shop, equals: 2}
                    cluster: edge-1
                  - count: {kind: ConfigMap, namespace: shop, equals: 0}
                  - present: {kind: ConfigMap, metadata: {name: two, namespace: shop, uid: fixed-uid,
                              creationTimestamp: "2030-05-01T10:00:00Z"}}
                    cluster: edge-1
            """)
        assert outcome.status == "PASS", report(outcome)


class TestFailures:
    def test_a_failing_present_names_the_step_the_assertion_and_the_difference(self, gadget: Workspace) -> None:
        """The report gives step index and kind, the assertion's position, the field and a diff."""
        outcome = gadget.run(after_ready("""\
              - expect:
                  - absent: {kind: Secret, namespace: shop, name: nothing}
                  - present: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: g, namespace: shop},
                              spec: {size: 3}}
            """))
        assert outcome.status == "FAIL"
        text = report(outcome)
        assert re.match(r"FAIL \S+/scenarios/s\.yaml \(\d+\.\d\ds\)$", outcome.report()[0])
        assert "step 5 (expect) at " in text and "s.yaml:7:5:" in text
        assert "assertion 2 (present example.io/v1/Gadget shop/g) at " in text and "s.yaml:9:9:" in text
        assert "spec.size: expected 3, live 1" in text
        assert "-  size: 3" in text and "+  size: 1" in text

    def test_secret_data_is_never_printed(self, gadget: Workspace) -> None:
        """A mismatching Secret shows which key differs, never the stored or decoded value."""
        stored = base64.b64encode(b"hunter2-but-longer").decode()
        outcome = gadget.run(f"""\
            scenario: secrets stay hidden in failure reports
            objects:
              - object: {{apiVersion: v1, kind: Secret, metadata: {{name: s, namespace: shop}},
                         data: {{password: {stored}}}}}
            steps:
              - expect:
                  - present: {{kind: Secret, metadata: {{name: s, namespace: shop}}, data: {{password: bm9wZQ==}},
                              "(data.password)": nope}}
                  - secretData: {{ref: {{kind: Secret, namespace: shop, name: s}}, key: password, equals: nope}}
            """)
        assert outcome.status == "FAIL"
        text = report(outcome)
        assert "data.password: values differ (hidden: Secret data)" in text
        assert f"<hidden: differs, {len(stored)} chars>" in text
        assert "key 'password' differs from the expected value (live value hidden, 18 chars)" in text
        assert stored not in text and "hunter2" not in text

    def test_step_failure_stops_the_scenario(self, gadget: Workspace) -> None:
        """Steps after a failed one do not run: only the first failure is reported."""
        outcome = gadget.run("""\
            scenario: stops at the first failure
            steps:
              - expect:
                  - count: {kind: Secret, equals: 1}
              - expect:
                  - count: {kind: ConfigMap, equals: 1}
            """)
        assert outcome.status == "FAIL"
        assert "step 1 (expect)" in report(outcome) and "step 2" not in report(outcome)
        assert "expected 1, live 0" in report(outcome)

    def test_the_conditions_failure_shows_the_live_condition(self, gadget: Workspace) -> None:
        """A condition mismatch shows status, reason and message as they are."""
        outcome = gadget.run(after_ready(f"""\
              - expect:
                  - conditions: {{ref: {REF}, PartReady: False/WaitingForPart, Other: "True"}}
            """))
        assert "PartReady: expected False/WaitingForPart, live True/Built (\"built\")" in report(outcome)
        assert "Other: expected True, live Absent" in report(outcome)


class TestErrors:
    def test_admission_rejects_and_expect_error_accepts(self, gadget: Workspace) -> None:
        """create runs the CRD's CEL rules; expectError takes a substring or a list of them."""
        outcome = gadget.run("""\
            scenario: admission
            steps:
              - create: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: g, namespace: shop},
                         spec: {size: 11}}
                expectError: size is at most 10
              - create: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: g, namespace: shop},
                         spec: {size: 12}}
                expectError: [Invalid, size is at most 10]
              - create: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: g, namespace: shop},
                         spec: {size: 2}}
              - update: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: g, namespace: shop},
                         spec: {size: 20}}
                expectError: size is at most 10
              - expect:
                  - present: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: g, namespace: shop},
                              spec: {size: 2}}
            """)
        assert outcome.status == "PASS", report(outcome)

    def test_an_unexpected_rejection_fails(self, gadget: Workspace) -> None:
        """A rejected create without expectError fails with the API's message."""
        outcome = gadget.run("""\
            scenario: rejected
            steps:
              - create: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: g, namespace: shop},
                         spec: {size: 11}}
            """)
        assert outcome.status == "FAIL"
        assert "the create failed: Invalid:" in report(outcome) and "size is at most 10" in report(outcome)

    def test_an_expected_error_that_does_not_come_fails(self, gadget: Workspace) -> None:
        """expectError on a write that succeeds fails the scenario."""
        outcome = gadget.run(f"""\
            scenario: no error
            steps:
              - create: {GADGET}
                expectError: nope
            """)
        assert outcome.status == "FAIL"
        assert "expected the create to fail with an error containing 'nope', but it succeeded" in report(outcome)

    def test_an_error_without_the_expected_text_fails(self, gadget: Workspace) -> None:
        """Every expected substring must appear in the error."""
        outcome = gadget.run("""\
            scenario: wrong error
            steps:
              - delete: {kind: Secret, namespace: shop, name: nothing}
                expectError: [NotFound, something else]
            """)
        assert outcome.status == "FAIL"
        assert "the error lacks 'something else'" in report(outcome)

    def test_injected_faults_hit_the_operator_and_backoff_retries_on_advance(self, gadget: Workspace) -> None:
        """fail makes the operator's calls fail (counted in calls); the pass is retried after its backoff."""
        outcome = gadget.run("""\
            scenario: faults
            objects:
              - object: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: g, namespace: shop,
                         finalizers: [example.io/teardown]}, spec: {size: 2}}
            steps:
              - fail: {verb: apply, kind: Part, error: ServerError, times: 3}
              - settle: {}
              - expect:
                  - conditions: {ref: {kind: Gadget, namespace: shop, name: g}, PartReady: False/PartError}
                  - absent: {apiVersion: example.io/v1, kind: Part, namespace: shop, name: g-part}
                  - metric: {name: c5c3_operator_reconcile_errors_total,
                             labels: {sub_reconciler: GadgetBuild, condition_type: PartReady}, atLeast: 1}
              - advance: 1s
              - expect:
                  - present: {apiVersion: example.io/v1, kind: Part, metadata: {name: g-part, namespace: shop},
                              spec: {size: 2}}
              - fail: {verb: get, apiVersion: example.io/v1, kind: Part, namespace: shop, name: g-part, error: Timeout}
              - reconcile: {kind: Gadget, namespace: shop, name: g}
                expectError: Timeout
              - expect:
                  - calls: {verbs: [get], kind: Part, equals: 1}
                  - requeueAfter: null
            """)
        assert outcome.status == "PASS", report(outcome)

    def test_a_fault_on_the_scenario_s_own_steps_does_not_fire(self, gadget: Workspace) -> None:
        """fail affects only the operator: the scenario's own create still works."""
        outcome = gadget.run(f"""\
            scenario: faults are the operator's
            steps:
              - fail: {{verb: create, error: Conflict, times: 5}}
              - create: {GADGET}
              - expect:
                  - present: {{apiVersion: example.io/v1, kind: Gadget, metadata: {{name: g, namespace: shop}}}}
            """)
        assert outcome.status == "PASS", report(outcome)

    def test_a_reconcile_error_without_expect_error_fails(self, gadget: Workspace) -> None:
        """A pass that ends in an error fails the scenario unless expectError is given."""
        outcome = gadget.run(after_ready(f"""\
              - fail: {{verb: get, kind: Part, error: ServerError}}
              - reconcile: {REF}
            """))
        assert outcome.status == "FAIL"
        assert "the pass of Gadget shop/g failed: " in report(outcome)
        assert "injected ServerError on get" in report(outcome)

    def test_expect_error_on_a_reconcile_without_error_fails(self, gadget: Workspace) -> None:
        """expectError with no error fails too."""
        outcome = gadget.run(after_ready(f"""\
              - reconcile: {REF}
                expectError: boom
            """))
        assert outcome.status == "FAIL"
        assert "but it succeeded" in report(outcome)

    def test_requeue_and_calls_need_a_reconcile_first(self, gadget: Workspace) -> None:
        """requeueAfter and calls read the last reconcile step; without one they fail and say so."""
        outcome = gadget.run("""\
            scenario: no reconcile yet
            steps:
              - expect:
                  - requeueAfter: 1m
                  - calls: {equals: 0}
            """)
        assert report(outcome).count("no `reconcile` step ran before this assertion") == 2

    def test_a_settle_that_never_ends_names_the_order(self, gadget: Workspace) -> None:
        """More than 1000 passes at one instant fail the step, naming the looping order."""

        def run_pass(kind: object, request: Request, *, clusters: ClusterSet, clock: object, log: object) -> Result:
            cluster = clusters.resolve(request.cluster)
            live = cluster.get("example.io/v1", "Gadget", request.namespace, request.name)
            size = int(live["spec"].get("size") or 0) % 9 + 1
            cluster.patch("example.io/v1", "Gadget", request.namespace, request.name, {"spec": {"size": size}})
            return Result()

        outcome = gadget.run(f"""\
            scenario: a pass that wakes itself forever
            steps:
              - create: {GADGET}
              - settle: {{}}
            """, run_pass=run_pass)
        assert outcome.status == "FAIL"
        assert "step 2 (settle)" in report(outcome)
        assert "more than 1000 passes" in report(outcome) and "Gadget shop/g ran" in report(outcome)

    def test_a_pass_that_raises_fails_with_the_exception(self, gadget: Workspace) -> None:
        """An engine bug during settle is a failure with its exception, not a crash of the runner."""

        def run_pass(kind: object, request: Request, **_: object) -> Result:
            raise ZeroDivisionError("the bug")

        outcome = gadget.run(f"""\
            scenario: a buggy pass
            steps:
              - create: {GADGET}
              - settle: {{}}
            """, run_pass=run_pass)
        assert outcome.status == "FAIL"
        assert "raised ZeroDivisionError: the bug" in report(outcome)


class TestSecrets:
    def test_secret_data_compares_decoded_values(self, gadget: Workspace) -> None:
        """equals, sameAs and differsFrom compare decoded values across Secrets and clusters."""
        copy = base64.b64encode(b"a-plain-value").decode()
        outcome = gadget.run(after_ready(f"""\
              - create: {{apiVersion: v1, kind: Secret, metadata: {{name: plain, namespace: shop}},
                         data: {{v: {copy}}}}}
                cluster: edge-1
              - expect:
                  - secretData: {{ref: {{kind: Secret, namespace: shop, name: plain}}, key: v, equals: a-plain-value}}
                    cluster: edge-1
                  - secretData:
                      ref: {{kind: Secret, namespace: shop, name: g-secret}}
                      key: password
                      sameAs: {{ref: {{kind: Secret, namespace: shop, name: g-secret}}}}
                  - secretData:
                      ref: {{kind: Secret, namespace: shop, name: g-secret}}
                      key: password
                      differsFrom: {{ref: {{kind: Secret, namespace: shop, name: plain}}, key: v, cluster: edge-1}}
            """, head="clusters: [edge-1]\n"))
        assert outcome.status == "PASS", report(outcome)

    def test_no_secret_leak_finds_a_password_in_a_status_field(self, gadget: Workspace) -> None:
        """A rule that writes the generated password into status is caught, and the report hides it."""
        leaky = RuleText((gadget.rules / "gadget.yaml").read_text()).swap(
            'status: {partName: "part.metadata.name"}',
            'status: {partName: "part.metadata.name", leak: "b64dec(secret.data.password)"}')
        (gadget.rules / "gadget.yaml").write_text(leaky)
        outcome = gadget.run(after_ready("""\
              - expect:
                  - noSecretLeak: {}
            """))
        assert outcome.status == "FAIL"
        assert "a secret value (43 chars) appears in status.leak of Gadget shop/g" in report(outcome)

    def test_no_secret_leak_reads_secret_data_keys_and_log_records(self, gadget: Workspace) -> None:
        """A Secret's token value that turns up in an operator log record is a leak."""
        token = base64.b64encode(b"tok-0123456789").decode()

        def run_pass(kind: object, request: Request, *, log: object, **_: object) -> Result:
            log.info("read tok-0123456789 from the store")  # type: ignore[attr-defined]
            return Result()

        outcome = gadget.run(f"""\
            scenario: a log line with a token in it
            objects:
              - object: {{apiVersion: v1, kind: Secret, metadata: {{name: s, namespace: shop}},
                         data: {{api-token: {token}}}}}
            steps:
              - create: {GADGET}
              - settle: {{}}
              - expect:
                  - noSecretLeak: {{}}
            """, run_pass=run_pass)
        assert outcome.status == "FAIL"
        assert "a secret value (14 chars) appears in a log record" in report(outcome)

    def test_no_secret_leak_takes_only_the_password_of_a_url_key(self, gadget: Workspace) -> None:
        """A `url` key counts only for the password it carries: the address may be logged, the password not."""
        data = {"endpoint_url": "https://keystone.example:5000/v3",
                "transport_url": "rabbit://app:Sup3rS3cretPass@rabbit-0:5672/vhost"}
        encoded = ", ".join(f"{k}: {base64.b64encode(v.encode()).decode()}" for k, v in data.items())

        def scenario(line: str) -> Outcome:
            def run_pass(kind: object, request: Request, *, log: object, **_: object) -> Result:
                log.info(line)  # type: ignore[attr-defined]
                return Result()

            return gadget.run(f"""\
                scenario: a log line about a Secret with URLs
                objects:
                  - object: {{apiVersion: v1, kind: Secret, metadata: {{name: s, namespace: shop}},
                             data: {{{encoded}}}}}
                steps:
                  - create: {GADGET}
                  - settle: {{}}
                  - expect:
                      - noSecretLeak: {{}}
                """, run_pass=run_pass)

        address = scenario("Keystone at https://keystone.example:5000/v3, RabbitMQ at rabbit://app:[redacted]@rabbit-0")
        assert address.status == "PASS", report(address)
        leaked = scenario("connecting with Sup3rS3cretPass")
        assert leaked.status == "FAIL"
        assert "a secret value (15 chars) appears in a log record" in report(leaked)


class TestClusters:
    def test_deregister_register_serve_and_unserved(self, gadget: Workspace) -> None:
        """Orders on a deregistered cluster wait; register queues them again; serve makes a kind usable."""
        outcome = gadget.run("""\
            scenario: target clusters come and go
            clusters: [edge-1]
            unserved:
              - {cluster: "", apiVersion: example.io/v1, kind: Part}
            steps:
              - create: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: a, namespace: shop}, spec: {}}
                cluster: edge-1
              - settle: {}
              - expect:
                  - conditions: {ref: {kind: Gadget, namespace: shop, name: a}, PartReady: False/PartError}
                    cluster: edge-1
              - deregister: {cluster: edge-1}
              - serve: {apiVersion: example.io/v1, kind: Part}
              - create: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: b, namespace: shop}, spec: {}}
                cluster: edge-1
              - advance: 1m
              - expect:
                  - present: {apiVersion: example.io/v1, kind: Gadget,
                              metadata: {name: b, namespace: shop, finalizers: null}}
                    cluster: edge-1
                  - count: {apiVersion: example.io/v1, kind: Part, namespace: shop, equals: 0}
              - register: {cluster: edge-1}
              - settle: {}
              - expect:
                  - count: {apiVersion: example.io/v1, kind: Part, namespace: shop, equals: 2}
                  - conditions: {ref: {kind: Gadget, namespace: shop, name: b}, PartReady: False/WaitingForPart}
                    cluster: edge-1
              - reconcile: {kind: Gadget, namespace: shop, name: b}
                cluster: edge-1
              - expect:
                  - calls: {verb: get, kind: Part, equals: 1}
                  - calls: {verb: get, kind: Part, equals: 1}
                    cluster: ""
                  - calls: {verb: get, kind: Part, equals: 0}
                    cluster: edge-1
                  - calls: {verb: get, kind: Gadget, equals: 0}
                    cluster: ""
            """)
        assert outcome.status == "PASS", report(outcome)

    def test_advance_moves_the_clock_through_timers(self, gadget: Workspace) -> None:
        """advance fires the waiting pass's 10s requeue; timestamps follow the simulated clock."""
        outcome = gadget.run(f"""\
            scenario: time moves only on advance
            now: "2026-03-01T12:00:00Z"
            steps:
              - create: {GADGET}
              - settle: {{}}
              - advance: 1h30m
              - create: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: later, namespace: shop}}}}
              - expect:
                  - present: {{kind: ConfigMap, metadata: {{name: later, namespace: shop,
                              creationTimestamp: "2026-03-01T13:30:00Z"}}}}
                  - metric: {{name: c5c3_operator_reconcile_total, labels: {{result: requeue_after}}, atLeast: 500}}
            """)
        assert outcome.status == "PASS", report(outcome)



class TestDeterminism:
    def test_seeded_objects_get_the_same_uid_every_run(self, gadget: Workspace) -> None:
        """A seed without uid gets one derived from its place, so hashes of uids repeat run to run."""
        from offline.scenario.loader import load_scenario
        from offline.scenario.resolve import resolve
        from offline.scenario.world import open_world

        path = gadget.write("s.yaml", """\
            scenario: uids
            objects:
              - object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: shop}}
              - object: {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: shop, uid: given}}
            steps: []
            """)
        scenario = load_scenario(path)
        assert scenario is not None
        setup = gadget.setup()
        uids = []
        for _ in range(2):
            with open_world(scenario, resolve(scenario, setup.catalog), setup) as world:
                items = world.cluster("").list("v1", "ConfigMap", "shop").items
                uids.append([o["metadata"]["uid"] for o in items])
        assert uids[0] == uids[1]
        assert uids[0][1] == "given" and len(uids[0][0]) == 36
