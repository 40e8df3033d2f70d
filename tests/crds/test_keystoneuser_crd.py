"""Admission of KeystoneUser orders: the rules only this CRD has (shared ones: test_order_crd_rules.py)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import pytest

from tests.crds.conftest import condition

if TYPE_CHECKING:
    from conftest import CrdClient

Obj = dict[str, Any]
Rejects = Callable[..., AbstractContextManager[None]]

USERNAME_IMMUTABLE = "userName is immutable; delete and re-create the KeystoneUser to rename its user"
NAME_TOO_LONG = "metadata.name must be at most 63 bytes; it is carried as a label value on the order's children"
INTERVAL_TOO_SHORT = "rotation.interval is 0s or at least 1m"


def order(name: str = "workflow", **spec: Any) -> Obj:
    """A KeystoneUser in tenant-a against the ControlPlane openstack/cp, with spec fields added."""
    return {
        "apiVersion": "c5c3.io/v1alpha1",
        "kind": "KeystoneUser",
        "metadata": {"name": name, "namespace": "tenant-a"},
        "spec": {"controlPlaneRef": {"name": "cp", "namespace": "openstack"}, **spec},
    }




# ---------------------------------------------------------------------------
# The definition itself.


def test_printer_columns_in_documented_order(keystoneuser_crd: Obj) -> None:
    """kubectl get keystoneuser prints Ready, ControlPlane, Generation, NextRotation and Age
    (as the reference documents them), then Shard: the member an ``engine run --sharded`` leader placed the
    order on (its label; decision 50), at priority 1 so only ``-o wide`` prints it and the documented five stay
    what plain ``kubectl get`` prints."""
    (version,) = keystoneuser_crd["spec"]["versions"]
    columns = [(c["name"], c["type"], c["jsonPath"]) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("Ready", "string", ".status.conditions[?(@.type=='Ready')].status"),
        ("ControlPlane", "string", ".spec.controlPlaneRef.name"),
        ("Generation", "integer", ".status.passwordGeneration"),
        ("NextRotation", "string", ".status.nextPasswordRotation"),
        ("Age", "date", ".metadata.creationTimestamp"),
        ("Shard", "string", r".metadata.labels.sharding\.c5c3\.io/shard"),
    ]
    priorities = {c["name"]: c.get("priority", 0) for c in version["additionalPrinterColumns"]}
    assert priorities.pop("Shard") == 1 and set(priorities.values()) == {0}


def test_names_scope_and_subresource(keystoneuser_crd: Obj) -> None:
    """The kind is served as namespaced keystoneusers.c5c3.io/v1alpha1 with a status subresource."""
    crd = keystoneuser_crd
    assert crd["metadata"]["name"] == "keystoneusers.c5c3.io"
    assert crd["spec"]["group"] == "c5c3.io"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"] == {
        "kind": "KeystoneUser",
        "listKind": "KeystoneUserList",
        "plural": "keystoneusers",
        "singular": "keystoneuser",
        "shortNames": ["ksuser", "ksu"],
        "categories": ["c5c3"],  # kubectl get c5c3
    }
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


# ---------------------------------------------------------------------------
# Defaults.


def test_omitted_generation_and_rotation_read_back_defaulted(keystoneusers: CrdClient) -> None:
    """An order that gives neither reads back passwordGeneration 1 and rotation.interval 720h."""
    stored = keystoneusers.create(order())
    assert stored["spec"] == {
        "controlPlaneRef": {"name": "cp", "namespace": "openstack"},
        "passwordGeneration": 1,
        "rotation": {"interval": "720h"},
    }


def test_given_generation_kept_and_interval_defaulted(keystoneusers: CrdClient) -> None:
    """An order created at generation 3 keeps it and still gets the 720h interval."""
    stored = keystoneusers.create(order(passwordGeneration=3))
    assert stored["spec"]["passwordGeneration"] == 3
    assert stored["spec"]["rotation"] == {"interval": "720h"}


def test_empty_rotation_block_gets_default_interval(keystoneusers: CrdClient) -> None:
    """rotation: {} reads back with interval 720h."""
    assert keystoneusers.create(order(rotation={}))["spec"]["rotation"] == {"interval": "720h"}


def test_given_interval_is_kept(keystoneusers: CrdClient) -> None:
    """A given interval is stored as written, not replaced by the default."""
    assert keystoneusers.create(order(rotation={"interval": "1h30m"}))["spec"]["rotation"] == {"interval": "1h30m"}


def test_user_name_has_no_stored_default(keystoneusers: CrdClient) -> None:
    """userName stays absent: the reconciler resolves metadata.name itself."""
    assert "userName" not in keystoneusers.create(order())["spec"]


def test_removing_rotation_restores_default(keystoneusers: CrdClient) -> None:
    """A merge patch that removes rotation leaves the order at the 720h default."""
    stored = keystoneusers.create(order(rotation={"interval": "1h"}))
    assert keystoneusers.update(stored, {"spec": {"rotation": None}})["spec"]["rotation"] == {"interval": "720h"}


def test_unknown_spec_field_is_pruned(keystoneusers: CrdClient) -> None:
    """A field the schema does not know is dropped, not stored."""
    stored = keystoneusers.create(order(gracePeriod="1h", rotation={"interval": "1h", "gracePeriod": "1m"}))
    assert "gracePeriod" not in stored["spec"]
    assert stored["spec"]["rotation"] == {"interval": "1h"}


# ---------------------------------------------------------------------------
# spec.controlPlaneRef


def test_controlplane_ref_restated_is_admitted(keystoneusers: CrdClient) -> None:
    """An update that restates the same reference and changes something else is admitted."""
    stored = keystoneusers.create(order())
    updated = keystoneusers.update(
        stored, {"spec": {"controlPlaneRef": {"name": "cp", "namespace": "openstack"}, "passwordGeneration": 2}}
    )
    assert updated["spec"]["controlPlaneRef"] == {"name": "cp", "namespace": "openstack"}
    assert updated["spec"]["passwordGeneration"] == 2


def test_controlplane_namespace_absent_stays_admitted(keystoneusers: CrdClient) -> None:
    """An order created without a namespace may be updated while the namespace stays absent."""
    obj = order()
    del obj["spec"]["controlPlaneRef"]["namespace"]
    stored = keystoneusers.create(obj)
    updated = keystoneusers.update(stored, {"spec": {"passwordGeneration": 2}})
    assert updated["spec"]["controlPlaneRef"] == {"name": "cp"}


# ---------------------------------------------------------------------------
# spec.userName


@pytest.mark.parametrize("user_name", ["u", "svc user", "billing@example", "a" * 255])
def test_user_name_admitted(keystoneusers: CrdClient, user_name: str) -> None:
    """A user name of 1 to 255 characters without a comma is admitted."""
    assert keystoneusers.create(order(userName=user_name))["spec"]["userName"] == user_name


def test_user_name_may_not_be_empty(keystoneusers: CrdClient, rejects: Rejects) -> None:
    """An empty user name is rejected."""
    with rejects("spec.userName", "should be at least 1 chars long"):
        keystoneusers.create(order(userName=""))


def test_user_name_at_most_255(keystoneusers: CrdClient, rejects: Rejects) -> None:
    """A user name of 256 characters is rejected."""
    with rejects("spec.userName", "Too long", "255"):
        keystoneusers.create(order(userName="a" * 256))


@pytest.mark.parametrize("user_name", ["a,b", ",", "billing,"])
def test_user_name_without_comma(keystoneusers: CrdClient, rejects: Rejects, user_name: str) -> None:
    """A user name with a comma is rejected by the pattern ^[^,]+$."""
    with rejects("spec.userName", "should match '^[^,]+$'"):
        keystoneusers.create(order(userName=user_name))


def test_user_name_is_immutable(keystoneusers: CrdClient, rejects: Rejects) -> None:
    """Changing a given user name is rejected."""
    stored = keystoneusers.create(order(userName="billing"))
    with rejects(USERNAME_IMMUTABLE):
        keystoneusers.update(stored, {"spec": {"userName": "accounting"}})


def test_user_name_cannot_diverge_from_default(keystoneusers: CrdClient, rejects: Rejects) -> None:
    """Setting a user name other than metadata.name on an order created without one is rejected."""
    stored = keystoneusers.create(order())
    with rejects(USERNAME_IMMUTABLE):
        keystoneusers.update(stored, {"spec": {"userName": "accounting"}})


def test_spelling_out_the_default_user_name_is_admitted(keystoneusers: CrdClient) -> None:
    """Setting userName to metadata.name on an order created without one is admitted."""
    stored = keystoneusers.create(order())
    assert keystoneusers.update(stored, {"spec": {"userName": "workflow"}})["spec"]["userName"] == "workflow"


def test_dropping_a_spelled_out_default_is_admitted(keystoneusers: CrdClient) -> None:
    """Removing a userName equal to metadata.name leaves the effective name unchanged and is admitted."""
    stored = keystoneusers.create(order(userName="workflow"))
    assert "userName" not in keystoneusers.update(stored, {"spec": {"userName": None}})["spec"]


def test_dropping_a_different_user_name_is_rejected(keystoneusers: CrdClient, rejects: Rejects) -> None:
    """Removing a userName that differs from metadata.name changes the effective name and is rejected."""
    stored = keystoneusers.create(order(userName="billing"))
    with rejects(USERNAME_IMMUTABLE):
        keystoneusers.update(stored, {"spec": {"userName": None}})


def test_restating_the_user_name_is_admitted(keystoneusers: CrdClient) -> None:
    """An update that keeps the given user name is admitted."""
    stored = keystoneusers.create(order(userName="billing"))
    updated = keystoneusers.update(stored, {"spec": {"userName": "billing", "passwordGeneration": 2}})
    assert (updated["spec"]["userName"], updated["spec"]["passwordGeneration"]) == ("billing", 2)


# ---------------------------------------------------------------------------
# spec.passwordGeneration


# ---------------------------------------------------------------------------
# spec.rotation.interval


@pytest.mark.parametrize("interval", ["0s", "0", "1m", "60s", "1h30m", "720h", "87600h"])
def test_interval_admitted(keystoneusers: CrdClient, interval: str) -> None:
    """An interval of 0s, or between 1m and 87600h, is admitted."""
    assert keystoneusers.create(order(rotation={"interval": interval}))["spec"]["rotation"] == {"interval": interval}


@pytest.mark.parametrize("interval", ["30s", "59s", "1s", "59.9s", "-1m", "-1h"])
def test_interval_below_one_minute_rejected(keystoneusers: CrdClient, rejects: Rejects, interval: str) -> None:
    """A non-zero interval under one minute is rejected."""
    with rejects("spec.rotation.interval", INTERVAL_TOO_SHORT):
        keystoneusers.create(order(rotation={"interval": interval}))


def test_interval_rules_apply_on_update(keystoneusers: CrdClient, rejects: Rejects) -> None:
    """Updating a valid interval to 30s is rejected like a create."""
    stored = keystoneusers.create(order())
    with rejects(INTERVAL_TOO_SHORT):
        keystoneusers.update(stored, {"spec": {"rotation": {"interval": "30s"}}})


def test_interval_may_change(keystoneusers: CrdClient) -> None:
    """The interval is not frozen: turning the schedule off later is admitted."""
    stored = keystoneusers.create(order())
    assert keystoneusers.update(stored, {"spec": {"rotation": {"interval": "0s"}}})["spec"]["rotation"] == {
        "interval": "0s"
    }


# ---------------------------------------------------------------------------
# metadata.name


def test_long_name_with_matching_user_name_still_rejected(keystoneusers: CrdClient, rejects: Rejects) -> None:
    """The name cap holds whatever the user name: a 64-character order is rejected even with a short userName."""
    with rejects(NAME_TOO_LONG):
        keystoneusers.create(order(name="b" * 64, userName="billing"))


# ---------------------------------------------------------------------------
# status (written by the operator through the status subresource)


def test_full_status_admitted(keystoneusers: CrdClient) -> None:
    """A status with every field the operator writes is admitted and kept."""
    stored = keystoneusers.create(order())
    status = {
        "conditions": [
            condition(type="UserReady", reason="UserProvisioned"),
            condition(type="DeliveryReady", reason="Delivered"),
            condition(),
        ],
        "observedGeneration": 1,
        "userID": "a" * 1024,
        "passwordGeneration": 1,
        "lastPasswordRotation": "2026-01-01T00:00:00Z",
        "nextPasswordRotation": "2026-01-31T00:00:00Z",
        "secretName": "workflow-credentials",
        "secretKeys": ["clouds.yaml", "password"],
    }
    assert keystoneusers.update_status(stored, status)["status"] == status


@pytest.mark.parametrize(
    ("field", "value", "texts"),
    [
        ("userID", "a" * 1025, ("status.userID", "Too long", "1024")),
        ("lastPasswordRotation", "yesterday", ("status.lastPasswordRotation", "date-time")),
        ("nextPasswordRotation", "2026-13-01", ("status.nextPasswordRotation", "date-time")),
        ("passwordGeneration", "one", ("status.passwordGeneration", "must be of type integer")),
        ("observedGeneration", 1.5, ("status.observedGeneration", "must be of type integer")),
        ("secretName", 7, ("status.secretName", "must be of type string")),
        ("secretKeys", ["password", 7], ("status.secretKeys[1]", "must be of type string")),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else None,
)
def test_status_field_rejected(
    keystoneusers: CrdClient, rejects: Rejects, field: str, value: Any, texts: tuple[str, ...]
) -> None:
    """A status field outside its schema is rejected at that field."""
    stored = keystoneusers.create(order())
    with rejects(*texts):
        keystoneusers.update_status(stored, {field: value})


@pytest.mark.parametrize(
    ("fields", "texts"),
    [
        ({"status": "Maybe"}, ("status.conditions[0].status", "Unsupported value", '"Maybe"')),
        ({"reason": ""}, ("status.conditions[0].reason", "should be at least 1 chars long")),
        ({"reason": "r" * 1025}, ("status.conditions[0].reason", "Too long", "1024")),
        ({"reason": "Not Ready"}, ("status.conditions[0].reason", "should match")),
        ({"reason": "1Ready"}, ("status.conditions[0].reason", "should match")),
        ({"type": "Ready!"}, ("status.conditions[0].type", "should match")),
        ({"type": "R" * 317}, ("status.conditions[0].type", "Too long", "316")),
        ({"message": "m" * 32769}, ("status.conditions[0].message", "Too long", "32768")),
        ({"observedGeneration": -1}, ("status.conditions[0].observedGeneration", "greater than or equal to 0")),
        ({"lastTransitionTime": "now"}, ("status.conditions[0].lastTransitionTime", "date-time")),
        ({"lastTransitionTime": None}, ("status.conditions[0].lastTransitionTime", "Required value")),
        ({"message": None}, ("status.conditions[0].message", "Required value")),
        ({"reason": None}, ("status.conditions[0].reason", "Required value")),
        ({"status": None}, ("status.conditions[0].status", "Required value")),
        ({"type": None}, ("status.conditions[0].type", "Required value")),
    ],
    ids=lambda v: ",".join(f"{k}={str(x)[:12]}" for k, x in v.items()) if isinstance(v, dict) else None,
)
def test_condition_outside_metav1_schema_rejected(
    keystoneusers: CrdClient, rejects: Rejects, fields: Obj, texts: tuple[str, ...]
) -> None:
    """A condition that breaks the metav1.Condition schema is rejected."""
    stored = keystoneusers.create(order())
    with rejects(*texts):
        keystoneusers.update_status(stored, {"conditions": [condition(**fields)]})


@pytest.mark.parametrize(
    "fields",
    [
        {"status": "Unknown", "reason": "Probing_for:collision,1", "type": "c5c3.io/User-Ready.v1"},
        {"observedGeneration": 0, "message": "", "reason": "R"},
        {"observedGeneration": None, "message": "m" * 32768, "type": "T" * 316},
    ],
)
def test_condition_within_metav1_schema_admitted(keystoneusers: CrdClient, fields: Obj) -> None:
    """A condition at the edges of the metav1.Condition schema is admitted."""
    stored = keystoneusers.create(order())
    cond = condition(**fields)
    assert keystoneusers.update_status(stored, {"conditions": [cond]})["status"]["conditions"] == [cond]

