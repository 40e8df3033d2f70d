"""Admission rules every order CRD shares (KeystoneUser and RabbitMQVhost): each test runs for both kinds.

The kind-specific rules stay in test_keystoneuser_crd.py and test_rabbitmqvhost_crd.py.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from tests.crds.conftest import condition, load_crd

if TYPE_CHECKING:
    from conftest import CrdClient

Obj = dict[str, Any]
Rejects = Callable[..., AbstractContextManager[None]]

NAME_TOO_LONG = "metadata.name must be at most 63 bytes; it is carried as a label value on the order's children"
ONLY_INCREASE = "passwordGeneration may only increase"
INTERVAL_TOO_LONG = "rotation.interval is at most 87600h"
INTERVAL_TOO_SHORT = "rotation.interval is 0s or at least 1m"


@dataclass(frozen=True)
class OrderKind:
    """One order kind: how to write an order of it, and the messages that name it."""

    kind: str
    crd_file: str

    def order(self, name: str = "workflow", **spec: Any) -> Obj:
        """An order in tenant-a against the ControlPlane openstack/cp, with spec fields added."""
        return {
            "apiVersion": "c5c3.io/v1alpha1",
            "kind": self.kind,
            "metadata": {"name": name, "namespace": "tenant-a"},
            "spec": {"controlPlaneRef": {"name": "cp", "namespace": "openstack"}, **spec},
        }

    @property
    def cp_name_immutable(self) -> str:
        return (f"controlPlaneRef.name is immutable; delete and re-create the {self.kind} "
                "to move it to another ControlPlane")

    @property
    def cp_namespace_immutable(self) -> str:
        return (f"controlPlaneRef.namespace is immutable; delete and re-create the {self.kind} "
                "to move it to another ControlPlane")


KINDS = [OrderKind("KeystoneUser", "c5c3.io_keystoneusers.yaml"),
         OrderKind("RabbitMQVhost", "c5c3.io_rabbitmqvhosts.yaml")]


@pytest.fixture(params=KINDS, ids=[k.kind for k in KINDS])
def kind(request: pytest.FixtureRequest) -> OrderKind:
    """Each order kind in turn."""
    result: OrderKind = request.param
    return result


@pytest.fixture
def orders(kind: OrderKind, backend: Callable[[Obj], CrdClient]) -> CrdClient:
    """Orders of that kind through its CRD, on each admission backend."""
    return backend(load_crd(kind.crd_file))




def test_controlplane_namespace_has_no_stored_default(kind: OrderKind, orders: CrdClient) -> None:
    """controlPlaneRef.namespace stays absent when omitted: the reconciler reads the order's namespace."""
    obj = kind.order()
    del obj["spec"]["controlPlaneRef"]["namespace"]
    assert orders.create(obj)["spec"]["controlPlaneRef"] == {"name": "cp"}


def test_controlplane_ref_is_required(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """An order without controlPlaneRef is rejected."""
    obj = kind.order()
    del obj["spec"]["controlPlaneRef"]
    with rejects("spec.controlPlaneRef", "Required value"):
        orders.create(obj)


def test_spec_is_required(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """An order without spec is rejected."""
    obj = kind.order()
    del obj["spec"]
    with rejects("spec", "Required value"):
        orders.create(obj)


def test_controlplane_name_is_required(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """controlPlaneRef without a name is rejected."""
    with rejects("spec.controlPlaneRef.name", "Required value"):
        orders.create(kind.order(controlPlaneRef={"namespace": "openstack"}))


def test_controlplane_name_may_be_one_character(kind: OrderKind, orders: CrdClient) -> None:
    """A one-character ControlPlane name is admitted."""
    assert orders.create(kind.order(controlPlaneRef={"name": "c"}))["spec"]["controlPlaneRef"] == {"name": "c"}


def test_controlplane_name_may_not_be_empty(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """An empty ControlPlane name is rejected."""
    with rejects("spec.controlPlaneRef.name", "should be at least 1 chars long"):
        orders.create(kind.order(controlPlaneRef={"name": ""}))


@pytest.mark.parametrize("namespace", ["o", "openstack", "cp-2", "0ns", "a" * 63])
def test_controlplane_namespace_admits_rfc1123_labels(kind: OrderKind, orders: CrdClient, namespace: str) -> None:
    """An RFC-1123 label of 1 to 63 characters is admitted as the ControlPlane namespace."""
    stored = orders.create(kind.order(controlPlaneRef={"name": "cp", "namespace": namespace}))
    assert stored["spec"]["controlPlaneRef"]["namespace"] == namespace


def test_controlplane_namespace_may_not_be_empty(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """An empty ControlPlane namespace is rejected."""
    with rejects("spec.controlPlaneRef.namespace", "should be at least 1 chars long"):
        orders.create(kind.order(controlPlaneRef={"name": "cp", "namespace": ""}))


def test_controlplane_namespace_at_most_63(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """A ControlPlane namespace of 64 characters is rejected."""
    with rejects("spec.controlPlaneRef.namespace", "Too long", "63"):
        orders.create(kind.order(controlPlaneRef={"name": "cp", "namespace": "a" * 64}))


@pytest.mark.parametrize("namespace", ["OpenStack", "open_stack", "-ns", "ns-", "open.stack"])
def test_controlplane_namespace_must_be_rfc1123_label(
    kind: OrderKind, orders: CrdClient, rejects: Rejects, namespace: str
) -> None:
    """A ControlPlane namespace that is no RFC-1123 label is rejected by the pattern."""
    with rejects("spec.controlPlaneRef.namespace", "should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"):
        orders.create(kind.order(controlPlaneRef={"name": "cp", "namespace": namespace}))


def test_controlplane_name_is_immutable(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """Re-pointing the order to another ControlPlane name is rejected."""
    stored = orders.create(kind.order())
    with rejects(kind.cp_name_immutable):
        orders.update(stored, {"spec": {"controlPlaneRef": {"name": "other"}}})


def test_controlplane_namespace_is_immutable(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """Changing the ControlPlane namespace is rejected."""
    stored = orders.create(kind.order())
    with rejects(kind.cp_namespace_immutable):
        orders.update(stored, {"spec": {"controlPlaneRef": {"namespace": "elsewhere"}}})


def test_controlplane_namespace_cannot_be_set_later(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """Setting a namespace on an order created without one is rejected."""
    obj = kind.order()
    del obj["spec"]["controlPlaneRef"]["namespace"]
    stored = orders.create(obj)
    with rejects(kind.cp_namespace_immutable):
        orders.update(stored, {"spec": {"controlPlaneRef": {"namespace": "tenant-a"}}})


def test_controlplane_namespace_cannot_be_removed(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """Removing the namespace from an order created with one is rejected."""
    stored = orders.create(kind.order())
    with rejects(kind.cp_namespace_immutable):
        orders.update(stored, {"spec": {"controlPlaneRef": {"namespace": None}}})


def test_password_generation_minimum_is_one(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """passwordGeneration 0 is rejected."""
    with rejects("spec.passwordGeneration", "should be greater than or equal to 1"):
        orders.create(kind.order(passwordGeneration=0))


def test_password_generation_one_is_admitted(kind: OrderKind, orders: CrdClient) -> None:
    """passwordGeneration 1 is admitted."""
    assert orders.create(kind.order(passwordGeneration=1))["spec"]["passwordGeneration"] == 1


def test_password_generation_must_be_an_integer(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """A passwordGeneration that is no integer is rejected."""
    with rejects("spec.passwordGeneration", "must be of type integer"):
        orders.create(kind.order(passwordGeneration="2"))


def test_password_generation_may_not_decrease(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """An order at generation 3 updated to 2 is rejected."""
    stored = orders.create(kind.order(passwordGeneration=3))
    with rejects(ONLY_INCREASE):
        orders.update(stored, {"spec": {"passwordGeneration": 2}})


@pytest.mark.parametrize("generation", [3, 4, 10])
def test_password_generation_may_stay_or_increase(kind: OrderKind, orders: CrdClient, generation: int) -> None:
    """An order at generation 3 may be updated to 3 or higher."""
    stored = orders.create(kind.order(passwordGeneration=3))
    assert orders.update(stored, {"spec": {"passwordGeneration": generation}})["spec"][
        "passwordGeneration"
    ] == generation


def test_dropping_a_raised_generation_is_rejected(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """Removing passwordGeneration from an order at 3 defaults it back to 1, a decrease, and is rejected."""
    stored = orders.create(kind.order(passwordGeneration=3))
    with rejects(ONLY_INCREASE):
        orders.update(stored, {"spec": {"passwordGeneration": None}})


@pytest.mark.parametrize("interval", ["87601h", "87600h1s", "100000h"])
def test_interval_above_ten_years_rejected(kind: OrderKind, orders: CrdClient, rejects: Rejects, interval: str) -> None:
    """An interval above 87600h is rejected."""
    with rejects("spec.rotation.interval", INTERVAL_TOO_LONG):
        orders.create(kind.order(rotation={"interval": interval}))


@pytest.mark.parametrize("interval", ["1ns", "999ns", "1us", "59.999999999s", "59999999999ns", "0.016666666h"])
def test_interval_nanoseconds_under_a_minute_rejected(
    kind: OrderKind, orders: CrdClient, rejects: Rejects, interval: str
) -> None:
    """CEL's duration() keeps Go's nanoseconds: 1ns is not 0s, and 59.999999999s is not 1m."""
    with rejects("spec.rotation.interval", INTERVAL_TOO_SHORT):
        orders.create(kind.order(rotation={"interval": interval}))


@pytest.mark.parametrize("interval", ["87600h0m0.000000001s", "87599h59m60.0000001s"])
def test_interval_nanoseconds_over_ten_years_rejected(
    kind: OrderKind, orders: CrdClient, rejects: Rejects, interval: str
) -> None:
    """One nanosecond over 87600h is over."""
    with rejects("spec.rotation.interval", INTERVAL_TOO_LONG):
        orders.create(kind.order(rotation={"interval": interval}))


def test_interval_that_is_no_duration_rejected(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """An interval that does not parse as a duration is rejected."""
    with rejects("spec.rotation.interval"):
        orders.create(kind.order(rotation={"interval": "monthly"}))


def test_name_of_63_bytes_admitted(kind: OrderKind, orders: CrdClient) -> None:
    """An order named with 63 characters is admitted."""
    name = "a" * 63
    assert orders.create(kind.order(name=name))["metadata"]["name"] == name


def test_name_over_63_bytes_rejected(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """An order named with 64 characters is rejected."""
    with rejects(NAME_TOO_LONG):
        orders.create(kind.order(name="a" * 64))


def test_conditions_keyed_by_type(kind: OrderKind, orders: CrdClient, rejects: Rejects) -> None:
    """Two conditions of the same type are rejected: the list is a map keyed by type."""
    stored = orders.create(kind.order())
    with rejects("status.conditions[1]", "Duplicate value"):
        orders.update_status(stored, {"conditions": [condition(), condition(status="False")]})
