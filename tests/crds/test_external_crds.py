"""The stand-in CRDs of the kinds other controllers serve (deploy/crds/external/) default what the reference does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cluster.api import Invalid
from offline.cluster.admission import admissions_for

EXTERNAL = Path(__file__).resolve().parents[2] / "deploy" / "crds" / "external"
Obj = dict[str, Any]


def admission(name: str) -> Any:
    """The CrdAdmission of one external CRD, by its metadata.name."""
    for path in sorted(EXTERNAL.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and doc["metadata"]["name"] == name:
                return next(iter(admissions_for(doc).values()))
    raise AssertionError(f"no CRD {name} in {EXTERNAL}")


def control_plane(spec: Obj) -> Obj:
    return {"apiVersion": "c5c3.io/v1alpha1", "kind": "ControlPlane", "metadata": {"name": "cp", "namespace": "os"},
            "spec": spec}


@pytest.mark.parametrize("credential", [{}, {"userName": "admin", "cloudCredentialsRef": {}}])
def test_controlplane_defaults_the_k_orc_cloud_credentials_as_the_reference(credential: Obj) -> None:
    """An admin credential without a cloud name or Secret gets `admin` and `k-orc-clouds-yaml`, the reference's."""
    stored = admission("controlplanes.c5c3.io").admit(control_plane({"korc": {"adminCredential": credential}}))
    assert stored["spec"]["korc"]["adminCredential"]["cloudCredentialsRef"] == {
        "cloudName": "admin", "secretName": "k-orc-clouds-yaml"}


def test_controlplane_keeps_what_it_is_given_and_everything_else() -> None:
    """Given values stay; fields the stand-in does not describe are kept, not pruned."""
    spec = {"region": "RegionTwo", "korc": {"adminCredential": {"cloudCredentialsRef": {"cloudName": "ops"}}},
            "services": {"keystone": {"mode": "External"}}}
    stored = admission("controlplanes.c5c3.io").admit(control_plane(spec))
    assert stored["spec"]["korc"]["adminCredential"]["cloudCredentialsRef"] == {
        "cloudName": "ops", "secretName": "k-orc-clouds-yaml"}
    assert stored["spec"]["region"] == "RegionTwo"
    assert stored["spec"]["services"] == {"keystone": {"mode": "External"}}


# ---------------------------------------------------------------------------
# The stand-ins refuse what the upstream CRDs (and the topology operator's webhooks) refuse.

def refusal(name: str, obj: Obj, old: Obj | None = None) -> str:
    """The text of the Invalid the stand-in answers `obj` with (the test fails if it is admitted)."""
    with pytest.raises(Invalid) as caught:
        admission(name).admit(obj, old)
    return str(caught.value)


def korc_user(spec: Obj) -> Obj:
    return {"apiVersion": "openstack.k-orc.cloud/v1alpha1", "kind": "User",
            "metadata": {"name": "billing-user", "namespace": "openstack"}, "spec": spec}


MANAGED: Obj = {
    "managementPolicy": "managed",
    "cloudCredentialsRef": {"secretName": "cp-admin-password-cloud", "cloudName": "admin"},
    "resource": {"name": "billing", "domainRef": "cp-domain-default", "passwordRef": "billing-password-v1"},
}


def test_korc_user_as_the_rules_render_it_is_admitted_and_defaulted() -> None:
    """The managed User as user.yaml.j2 renders it is admitted; an omitted policy defaults to managed."""
    stored = admission("users.openstack.k-orc.cloud").admit(korc_user(MANAGED))
    assert stored["spec"]["resource"]["passwordRef"] == "billing-password-v1"
    implicit = {k: v for k, v in MANAGED.items() if k != "managementPolicy"}
    assert admission("users.openstack.k-orc.cloud").admit(korc_user(implicit))["spec"]["managementPolicy"] == "managed"


def test_korc_user_with_an_empty_cloud_name_is_refused() -> None:
    """The stall the issue found: a ControlPlane without a cloud name rendered `cloudName: ""`."""
    spec = {**MANAGED, "cloudCredentialsRef": {"secretName": "cp-admin-password-cloud", "cloudName": ""}}
    assert "spec.cloudCredentialsRef.cloudName" in refusal("users.openstack.k-orc.cloud", korc_user(spec))


@pytest.mark.parametrize(("spec", "words"), [
    ({**MANAGED, "import": {"filter": {"name": "billing"}}}, "import may not be specified when policy is managed"),
    ({"managementPolicy": "unmanaged", "cloudCredentialsRef": MANAGED["cloudCredentialsRef"]},
     "import must be specified when policy is unmanaged"),
    ({**MANAGED, "resource": {**MANAGED["resource"], "name": "a,b"}}, "spec.resource.name"),
    ({**MANAGED, "managementPolicy": "Managed"}, "spec.managementPolicy"),
    ({k: v for k, v in MANAGED.items() if k != "cloudCredentialsRef"}, "spec.cloudCredentialsRef"),
])
def test_korc_user_refusals(spec: Obj, words: str) -> None:
    assert words in refusal("users.openstack.k-orc.cloud", korc_user(spec))


def test_korc_user_keeps_its_password_ref_and_domain() -> None:
    """Transition rules: passwordRef may not be removed, domainRef not changed."""
    old = admission("users.openstack.k-orc.cloud").admit(korc_user(MANAGED))
    no_password = {**MANAGED, "resource": {k: v for k, v in MANAGED["resource"].items() if k != "passwordRef"}}
    refused = refusal("users.openstack.k-orc.cloud", korc_user(no_password), old)
    assert "passwordRef may not be removed once set" in refused
    moved = {**MANAGED, "resource": {**MANAGED["resource"], "domainRef": "other"}}
    assert "domainRef is immutable" in refusal("users.openstack.k-orc.cloud", korc_user(moved), old)


def test_korc_user_status_conditions_are_metav1_conditions() -> None:
    """K-ORC's conditions carry a reason and a message: a status write without them is refused."""
    old = admission("users.openstack.k-orc.cloud").admit(korc_user(MANAGED))
    bare = {**old, "status": {"conditions": [{"type": "Available", "status": "True",
                                              "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    text = refusal("users.openstack.k-orc.cloud", bare, old)
    assert "status.conditions[0].reason" in text and "status.conditions[0].message" in text


def push_secret(spec: Obj) -> Obj:
    return {"apiVersion": "external-secrets.io/v1alpha1", "kind": "PushSecret",
            "metadata": {"name": "billing-backup", "namespace": "openstack"}, "spec": spec}


PUSH: Obj = {
    "deletionPolicy": "Delete",
    "secretStoreRefs": [{"kind": "SecretStore", "name": "openbao-tenant-store"}],
    "selector": {"secret": {"name": "billing-source"}},
    "data": [{"match": {"remoteRef": {"remoteKey": "openstack/keystone/openstack/billing/credentials"}}}],
}


def test_push_secret_as_the_rules_render_it_is_admitted_with_eso_defaults() -> None:
    stored = admission("pushsecrets.external-secrets.io").admit(push_secret(PUSH))
    assert stored["spec"]["deletionPolicy"] == "Delete"
    assert (stored["spec"]["refreshInterval"], stored["spec"]["updatePolicy"]) == ("1h0m0s", "Replace")
    assert stored["spec"]["data"][0]["conversionStrategy"] == "None"


@pytest.mark.parametrize(("spec", "field"), [
    ({k: v for k, v in PUSH.items() if k != "selector"}, "spec.selector"),
    ({k: v for k, v in PUSH.items() if k != "secretStoreRefs"}, "spec.secretStoreRefs"),
    ({**PUSH, "data": [{"match": {"remoteRef": {}}}]}, "spec.data[0].match.remoteRef.remoteKey"),
    ({**PUSH, "secretStoreRefs": [{"kind": "Secretstore", "name": "openbao-tenant-store"}]},
     "spec.secretStoreRefs[0].kind"),
    ({**PUSH, "deletionPolicy": "delete"}, "spec.deletionPolicy"),
    ({**PUSH, "selector": {"secret": {"name": "Billing_Source"}}}, "spec.selector.secret.name"),
])
def test_push_secret_missing_or_misspelt_fields_are_refused(spec: Obj, field: str) -> None:
    assert field in refusal("pushsecrets.external-secrets.io", push_secret(spec))


def topology(kind: str, spec: Obj, status: Obj | None = None) -> Obj:
    obj: Obj = {"apiVersion": "rabbitmq.com/v1beta1", "kind": kind,
                "metadata": {"name": "workflow-x", "namespace": "openstack"}, "spec": spec}
    return obj if status is None else {**obj, "status": status}


USER: Obj = {"importCredentialsSecret": {"name": "workflow-password-v1"},
             "rabbitmqClusterReference": {"name": "cp-rabbitmq"}}
READY: Obj = {"type": "Ready", "status": "True", "reason": "SuccessfulCreateOrUpdate",
              "lastTransitionTime": "2026-01-01T00:00:00Z"}


def test_topology_user_status_requires_the_username() -> None:
    """The operator's User status always carries username: a status without it is refused."""
    old = admission("users.rabbitmq.com").admit(topology("User", USER))
    without = topology("User", USER, {"observedGeneration": 1, "conditions": [READY]})
    assert "status.username: Required value" in refusal("users.rabbitmq.com", without, old)
    admission("users.rabbitmq.com").admit(topology("User", USER, {**without["status"], "username": "workflow-v1"}), old)


@pytest.mark.parametrize(("name", "kind", "spec", "words"), [
    ("vhosts.rabbitmq.com", "Vhost",
     {"name": "workflow", "deletionPolicy": "Delete", "rabbitmqClusterReference": {"name": "cp-rabbitmq"}},
     "spec.deletionPolicy"),
    ("vhosts.rabbitmq.com", "Vhost", {"rabbitmqClusterReference": {"name": "cp-rabbitmq"}}, "spec.name"),
    ("users.rabbitmq.com", "User", {**USER, "rabbitmqClusterReference": {}},
     "must provide either spec.rabbitmqClusterReference.name or spec.rabbitmqClusterReference.connectionSecret"),
    ("users.rabbitmq.com", "User", {**USER, "tags": ["admin"]}, "spec.tags[0]"),
    ("permissions.rabbitmq.com", "Permission",
     {"vhost": "workflow", "user": "workflow-v1", "userReference": {"name": "workflow-user-v1"},
      "permissions": {"read": ".*"}, "rabbitmqClusterReference": {"name": "cp-rabbitmq"}},
     "cannot specify spec.user and spec.userReference at the same time"),
    ("permissions.rabbitmq.com", "Permission",
     {"user": "workflow-v1", "permissions": {"read": ".*"}, "rabbitmqClusterReference": {"name": "cp-rabbitmq"}},
     "spec.vhost"),
])
def test_topology_refusals(name: str, kind: str, spec: Obj, words: str) -> None:
    assert words in refusal(name, topology(kind, spec))


def test_vhost_defaults_its_deletion_policy_and_keeps_its_name() -> None:
    """The broker vhost a Vhost names never changes (the operator's webhook); the policy defaults to delete."""
    spec: Obj = {"name": "workflow", "rabbitmqClusterReference": {"name": "cp-rabbitmq"}}
    old = admission("vhosts.rabbitmq.com").admit(topology("Vhost", spec))
    assert old["spec"]["deletionPolicy"] == "delete"
    renamed = topology("Vhost", {**spec, "name": "other"})
    refused = refusal("vhosts.rabbitmq.com", renamed, old)
    assert "updates on name and rabbitmqClusterReference are all forbidden" in refused


def test_rabbitmq_cluster_default_user_reference_is_complete() -> None:
    """The cluster operator writes the default-user Secret's name, namespace and keys, and always conditions."""
    ref = {"name": "cp-rabbitmq-default-user", "namespace": "openstack"}
    bus = {"apiVersion": "rabbitmq.com/v1beta1", "kind": "RabbitmqCluster",
           "metadata": {"name": "cp-rabbitmq", "namespace": "openstack"}, "spec": {"replicas": 3},
           "status": {"conditions": [], "defaultUser": {"secretReference": ref}}}
    assert "status.defaultUser.secretReference.keys" in refusal("rabbitmqclusters.rabbitmq.com", bus)
    no_conditions = {**bus, "status": {"defaultUser": {"secretReference": {**ref, "keys": {"host": "host"}}}}}
    assert "status.conditions: Required value" in refusal("rabbitmqclusters.rabbitmq.com", no_conditions)
