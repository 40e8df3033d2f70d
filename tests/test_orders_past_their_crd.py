"""Orders whose CRD does not check their spec (an older CRD, a hand-edited one, one without a schema) are checked by
the rules as the CRD would have checked them: a field holding what the CRD refuses is ``InvalidSpec`` naming the
field and what it holds (never the value), before the order gets a finalizer; an order whose name no label value
holds is refused too, and one that had a finalizer already is still torn down and released.

The project's own CRDs refuse these orders on every write once stored (their CEL rules cannot evaluate a value of
the wrong type, and ``metadata.name`` has a rule of its own): the scenarios in tests/scenarios cover what those
still admit (a negative generation or interval, a deletionPolicy outside its enum)."""

from __future__ import annotations

import copy
import functools
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.scenario import Runner, Setup, load_setup

ROOT = Path(__file__).resolve().parent.parent
ORDER_CRDS = ("c5c3.io_keystoneusers.yaml", "c5c3.io_rabbitmqvhosts.yaml")
KEYSTONE_WORLD = ROOT / "tests" / "scenarios" / "keystoneuser" / "fixtures" / "world.yml"
RABBIT_WORLD = ROOT / "tests" / "scenarios" / "rabbitmqvhost" / "fixtures" / "world.yml"
PROBE_ANSWER = ROOT / "tests" / "scenarios" / "keystoneuser" / "fixtures" / "korc-probe-finds-no-user.yml"
LONG = "billing-service-account-for-the-nightly-reconciliation-jobs-of-x"


def loosened(crd: dict[str, Any]) -> dict[str, Any]:
    """The order CRD with no check of its spec and no rule on the object: any spec is stored as given."""
    crd = copy.deepcopy(crd)
    for version in crd["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        schema["properties"]["spec"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        schema.pop("x-kubernetes-validations", None)
    return crd


@functools.cache
def setup(folder: Path) -> Setup:
    """The project's rules and CRDs, the order CRDs loosened."""
    crds = folder / "crds"
    for source in (ROOT / "deploy" / "crds").rglob("*.yaml"):
        target = crds / source.relative_to(ROOT / "deploy" / "crds")
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.name in ORDER_CRDS:
            documents = [loosened(d) if d else d for d in yaml.safe_load_all(source.read_text())]
            target.write_text(yaml.safe_dump_all(documents))
        else:
            target.write_text(source.read_text())
    return load_setup(ROOT / "rules", crds)


@pytest.fixture(scope="module")
def loose(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    return setup(tmp_path_factory.mktemp("loose"))


def run(loose: Setup, folder: Path, text: str) -> None:
    path = folder / "scenario.yaml"
    path.write_text(textwrap.dedent(text))
    outcome = Runner(loose).run_file(path)
    assert outcome is not None
    assert outcome.status == "PASS", "\n".join(outcome.report())


KEYSTONE_CASES = [
    ("passwordGeneration: abc", "spec.passwordGeneration must be an integer of at least 1 (it is a string)"),
    ("passwordGeneration: 2.5", "spec.passwordGeneration must be an integer of at least 1 (it is a number with a "
                                "fractional part)"),
    ("passwordGeneration: 1.0e+30", "spec.passwordGeneration must be an integer of at least 1 (it is a number beyond "
                                    "the int64 range)"),
    (f"passwordGeneration: {10 ** 30}", "spec.passwordGeneration must be an integer of at least 1 (it is a number "
                                        "beyond the int64 range)"),
    ("passwordGeneration: true", "spec.passwordGeneration must be an integer of at least 1 (it is a boolean)"),
    ("passwordGeneration: -5", "spec.passwordGeneration must be an integer of at least 1 (it is negative)"),
    ("rotation: weekly", "spec.rotation must be an object (it is a string)"),
    ("rotation: {interval: 3600}", "spec.rotation.interval must be a duration of 0s (off) or at least 1m, such as "
                                   "720h (it is a number)"),
    ("rotation: {interval: 1 hour}", "spec.rotation.interval must be a duration of 0s (off) or at least 1m, such as "
                                     "720h (it is a string that is not a duration)"),
    ("rotation: {interval: '-1h'}", "spec.rotation.interval must be a duration of 0s (off) or at least 1m, such as "
                                    "720h (it is negative)"),
    ("userName: 5", "spec.userName must be a string of 1 to 255 characters without a comma (it is a number)"),
    ("userName: ''", "spec.userName must be a string of 1 to 255 characters without a comma (it is empty)"),
    ("userName: 'a,b'", "spec.userName must be a string of 1 to 255 characters without a comma (it is a string "
                        "with a comma)"),
    (f"userName: {'u' * 256}", "spec.userName must be a string of 1 to 255 characters without a comma (it is longer "
                               "than 255 characters)"),
]

RABBIT_CASES = [
    ("passwordGeneration: abc", "spec.passwordGeneration must be an integer of at least 1 (it is a string)"),
    ("passwordGeneration: 2.5", "spec.passwordGeneration must be an integer of at least 1 (it is a number with a "
                                "fractional part)"),
    ("rotation: {interval: '-1h'}", "spec.rotation.interval must be a duration of 0s (off) or at least 1m, such as "
                                    "720h (it is negative)"),
    ("rotation: {gracePeriod: 3}", "spec.rotation.gracePeriod must be a duration of at least 0s, such as 24h (it is "
                                   "a number)"),
    ("rotation: {gracePeriod: soon}", "spec.rotation.gracePeriod must be a duration of at least 0s, such as 24h (it "
                                      "is a string that is not a duration)"),
    ("deletionPolicy: [Delete]", "spec.deletionPolicy must be Retain or Delete (it is an array)"),
    ("deletionPolicy: delete", "spec.deletionPolicy must be Retain or Delete (it is another string)"),
]


@pytest.mark.parametrize(("field", "message"), KEYSTONE_CASES, ids=[c[0][:40] for c in KEYSTONE_CASES])
def test_a_keystoneuser_field_the_crd_would_refuse_is_invalid_spec(loose: Setup, tmp_path: Path, field: str,
                                                                   message: str) -> None:
    """The field and what it holds, on both conditions; no finalizer, nothing created, no requeue; corrected, the
    order proceeds."""
    run(loose, tmp_path, f"""\
        scenario: a KeystoneUser field the CRD would refuse
        rules: [keystoneuser]
        objects:
          - file: {KEYSTONE_WORLD}
          - object:
              apiVersion: c5c3.io/v1alpha1
              kind: KeystoneUser
              metadata: {{name: billing, namespace: tenant-b}}
              spec: {{controlPlaneRef: {{name: cp, namespace: openstack}}, {field}}}
        steps:
          - settle: {{}}
          - expect:
              - conditions: {{ref: {{kind: KeystoneUser, namespace: tenant-b, name: billing}},
                             UserReady: False/InvalidSpec, DeliveryReady: False/InvalidSpec}}
              - message: {{ref: {{kind: KeystoneUser, namespace: tenant-b, name: billing}}, type: UserReady,
                          contains: "{message}; the order is refused and nothing is provisioned until it is corrected"}}
              - present: {{apiVersion: c5c3.io/v1alpha1, kind: KeystoneUser,
                          metadata: {{name: billing, namespace: tenant-b, finalizers: null}}}}
              - count: {{apiVersion: openstack.k-orc.cloud/v1alpha1, kind: User, namespace: openstack, equals: 0}}
          - reconcile: {{kind: KeystoneUser, namespace: tenant-b, name: billing}}
          - expect:
              - requeueAfter: null
              - calls: {{verbs: [create, update, patch, apply, delete], equals: 0}}
          - update:
              apiVersion: c5c3.io/v1alpha1
              kind: KeystoneUser
              metadata: {{name: billing, namespace: tenant-b}}
              spec: {{passwordGeneration: 1, rotation: {{interval: 720h, gracePeriod: null}}, userName: null}}
          - settle: {{}}
          - expect:
              - conditions: {{ref: {{kind: KeystoneUser, namespace: tenant-b, name: billing}},
                             UserReady: False/ProbingForCollision}}
        """)


@pytest.mark.parametrize(("field", "message"), RABBIT_CASES, ids=[c[0][:40] for c in RABBIT_CASES])
def test_a_rabbitmqvhost_field_the_crd_would_refuse_is_invalid_spec(loose: Setup, tmp_path: Path, field: str,
                                                                    message: str) -> None:
    """The field and what it holds; no finalizer and no Vhost."""
    run(loose, tmp_path, f"""\
        scenario: a RabbitMQVhost field the CRD would refuse
        rules: [rabbitmqvhost]
        objects:
          - file: {RABBIT_WORLD}
          - object:
              apiVersion: c5c3.io/v1alpha1
              kind: RabbitMQVhost
              metadata: {{name: workflow, namespace: tenant-b}}
              spec: {{controlPlaneRef: {{name: cp, namespace: openstack}}, {field}}}
        steps:
          - settle: {{}}
          - expect:
              - conditions: {{ref: {{kind: RabbitMQVhost, namespace: tenant-b, name: workflow}},
                             VhostReady: False/InvalidSpec, DeliveryReady: False/InvalidSpec}}
              - message: {{ref: {{kind: RabbitMQVhost, namespace: tenant-b, name: workflow}}, type: VhostReady,
                          contains: "{message}; the order is refused and nothing is provisioned until it is corrected"}}
              - present: {{apiVersion: c5c3.io/v1alpha1, kind: RabbitMQVhost,
                          metadata: {{name: workflow, namespace: tenant-b, finalizers: null}}}}
              - count: {{apiVersion: rabbitmq.com/v1beta1, kind: Vhost, namespace: openstack, equals: 0}}
        """)


def test_a_provisioned_order_whose_spec_turns_invalid_is_frozen_then_torn_down(loose: Setup, tmp_path: Path) -> None:
    """Its spec edited past the CRD after its User was made: InvalidSpec, nothing more is written for it; deleted,
    its children go and its finalizer is released."""
    run(loose, tmp_path, f"""\
        scenario: a provisioned KeystoneUser whose passwordGeneration turns into a string
        rules: [keystoneuser]
        objects:
          - file: {KEYSTONE_WORLD}
          - object:
              apiVersion: c5c3.io/v1alpha1
              kind: KeystoneUser
              metadata: {{name: billing, namespace: tenant-b}}
              spec: {{controlPlaneRef: {{name: cp, namespace: openstack}}, passwordGeneration: 1}}
        steps:
          - settle: {{}}
          - patchStatus:
              apiVersion: openstack.k-orc.cloud/v1alpha1
              kind: User
              metadata: {{name: billing-19a340bf-user-user-probe, namespace: openstack}}
            statusFrom: {PROBE_ANSWER}
          - settle: {{}}
          - expect:
              - present: {{apiVersion: openstack.k-orc.cloud/v1alpha1, kind: User,
                          metadata: {{name: billing-19a340bf-user-user, namespace: openstack}}}}
          - update:
              apiVersion: c5c3.io/v1alpha1
              kind: KeystoneUser
              metadata: {{name: billing, namespace: tenant-b}}
              spec: {{passwordGeneration: abc}}
          - settle: {{}}
          - expect:
              - conditions: {{ref: {{kind: KeystoneUser, namespace: tenant-b, name: billing}},
                             UserReady: False/InvalidSpec}}
              - absent: {{apiVersion: v1, kind: Secret, namespace: openstack, name: billing-19a340bf-user-password-v2}}
          - delete: {{apiVersion: c5c3.io/v1alpha1, kind: KeystoneUser, namespace: tenant-b, name: billing}}
          - settle: {{}}
          - advance: 1m
          - expect:
              - absent: {{apiVersion: c5c3.io/v1alpha1, kind: KeystoneUser, namespace: tenant-b, name: billing}}
              - count: {{apiVersion: openstack.k-orc.cloud/v1alpha1, kind: User, namespace: openstack, equals: 0}}
              - count: {{apiVersion: v1, kind: Secret, namespace: openstack, equals: 0}}
        """)


@pytest.mark.parametrize("kind", ["KeystoneUser", "RabbitMQVhost"])
def test_a_long_named_order_is_refused_and_one_with_a_finalizer_is_released(loose: Setup, tmp_path: Path,
                                                                            kind: str) -> None:
    """A 64-character name: refused before the finalizer (nothing can carry it as a label); one that got the
    finalizer from an earlier version is refused too, and its delete tears down (nothing of it is found) and lets
    it go while the ControlPlane stands (the patient teardown)."""
    world = KEYSTONE_WORLD if kind == "KeystoneUser" else RABBIT_WORLD
    finalizer = f"c5c3.io/{kind.lower()}-teardown"
    condition = "UserReady" if kind == "KeystoneUser" else "VhostReady"
    assert len(LONG) == 64
    run(loose, tmp_path, f"""\
        scenario: a long-named {kind}
        rules: [{kind.lower()}]
        objects:
          - file: {world}
          - object:
              apiVersion: c5c3.io/v1alpha1
              kind: {kind}
              metadata: {{name: {LONG}, namespace: tenant-b}}
              spec: {{controlPlaneRef: {{name: cp, namespace: openstack}}}}
          - object:
              apiVersion: c5c3.io/v1alpha1
              kind: {kind}
              metadata: {{name: {LONG}x, namespace: tenant-b, finalizers: [{finalizer}]}}
              spec: {{controlPlaneRef: {{name: cp, namespace: openstack}}}}
        steps:
          - settle: {{}}
          - expect:
              - conditions: {{ref: {{kind: {kind}, namespace: tenant-b, name: {LONG}}},
                             {condition}: False/InvalidSpec, DeliveryReady: False/InvalidSpec}}
              - message: {{ref: {{kind: {kind}, namespace: tenant-b, name: {LONG}}}, type: {condition},
                          contains: "metadata.name must be at most 63 bytes (it has 64); it is carried as a label value
                                     on the order's children, so nothing is provisioned for this order"}}
              - present: {{apiVersion: c5c3.io/v1alpha1, kind: {kind},
                          metadata: {{name: {LONG}, namespace: tenant-b, finalizers: null}}}}
              - conditions: {{ref: {{kind: {kind}, namespace: tenant-b, name: {LONG}x}},
                             {condition}: False/InvalidSpec}}
              - message: {{ref: {{kind: {kind}, namespace: tenant-b, name: {LONG}x}}, type: {condition},
                          contains: "(it has 65)"}}
          - delete: {{apiVersion: c5c3.io/v1alpha1, kind: {kind}, namespace: tenant-b, name: {LONG}}}
          - delete: {{apiVersion: c5c3.io/v1alpha1, kind: {kind}, namespace: tenant-b, name: {LONG}x}}
          - settle: {{}}
          - expect:
              - absent: {{apiVersion: c5c3.io/v1alpha1, kind: {kind}, namespace: tenant-b, name: {LONG}}}
              - absent: {{apiVersion: c5c3.io/v1alpha1, kind: {kind}, namespace: tenant-b, name: {LONG}x}}
        """)
