"""`engine test` admits the children a rule writes against the external kinds' stand-in schemas
(deploy/crds/external/): a template that a real cluster would refuse fails its scenario."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine.rules.bundle import installed
from offline.scenario.runner import Outcome, Runner, load_setup

ROOT = Path(__file__).resolve().parents[1]
DEFAULTED = "cloudName: \"cp.spec.korc.adminCredential.cloudCredentialsRef.cloudName || 'admin'\""
UNDEFAULTED = "cloudName: \"cp.spec.korc.adminCredential.cloudCredentialsRef.cloudName || ''\""

# A ControlPlane that names no cloud for K-ORC: the probe User must still carry a cloud name.
SCENARIO = """\
scenario: an order whose ControlPlane names no K-ORC cloud probes for its user
rules: [keystoneuser]
objects:
  - object: {apiVersion: v1, kind: Namespace, metadata: {name: openstack}}
  - object: {apiVersion: v1, kind: Namespace, metadata: {name: tenant-b}}
  - object:
      apiVersion: c5c3.io/v1alpha1
      kind: ControlPlane
      metadata: {name: cp, namespace: openstack}
      spec: {namespaceAssignments: [{namespace: tenant-b}]}
      status:
        conditions:
          - {type: AdminCredentialReady, status: "True", reason: Ready, message: ready,
             lastTransitionTime: "2026-01-01T00:00:00Z"}
  - object:
      apiVersion: external-secrets.io/v1
      kind: SecretStore
      metadata: {name: openbao-tenant-store, namespace: openstack}
      status:
        conditions:
          - {type: Ready, status: "True", reason: Valid, message: ok, lastTransitionTime: "2026-01-01T00:00:00Z"}
steps:
  - create:
      apiVersion: c5c3.io/v1alpha1
      kind: KeystoneUser
      metadata: {name: billing, namespace: tenant-b}
      spec: {controlPlaneRef: {name: cp, namespace: openstack}}
  - settle: {}
  - expect:
      - conditions:
          ref: {kind: KeystoneUser, namespace: tenant-b, name: billing}
          UserReady: False/ProbingForCollision
      - count: {apiVersion: openstack.k-orc.cloud/v1alpha1, kind: User, namespace: openstack, equals: 1}
"""


def run(tmp_path: Path, rule_text: str, crds: Path) -> Outcome:
    """The scenario above against a copy of the rules whose cloudName value is ``rule_text``."""
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    shutil.copytree(ROOT / "templates", tmp_path / "templates")
    rule_file = rules / "keystoneuser.yaml"
    text = rule_file.read_text(encoding="utf-8")
    assert DEFAULTED in text, "rules/keystoneuser.yaml no longer defaults cloudName as this test expects"
    rule_file.write_text(text.replace(DEFAULTED, rule_text), encoding="utf-8")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    outcome = Runner(load_setup(rules, crds)).run_file(scenario)
    assert outcome is not None
    return outcome


def test_the_rules_render_a_probe_the_k_orc_schema_admits(tmp_path: Path) -> None:
    outcome = run(tmp_path, DEFAULTED, ROOT / "deploy" / "crds")
    assert outcome.status == "PASS", "\n".join(outcome.report())


def test_a_probe_with_an_empty_cloud_name_fails_the_scenario(tmp_path: Path) -> None:
    """Without the rule's default the probe says `cloudName: ""`: the K-ORC stand-in refuses it (minLength 1)."""
    outcome = run(tmp_path, UNDEFAULTED, ROOT / "deploy" / "crds")
    report = "\n".join(outcome.report())
    assert outcome.status == "FAIL", report
    assert "spec.cloudCredentialsRef.cloudName" in report


def test_the_installed_crds_carry_the_stand_ins() -> None:
    """From any directory `engine test` takes the installed CRDs (c5c3_rules/crds): external/ is among them."""
    crds = installed("crds")
    assert crds is not None
    names = {crd["metadata"]["name"] for crd in load_setup(ROOT / "rules", crds).crds}
    assert {"users.openstack.k-orc.cloud", "pushsecrets.external-secrets.io", "users.rabbitmq.com"} <= names
