"""Two ``engine run --leader-elect`` processes on one Lease: one leads, the other takes over when it is killed."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from integration_kit import API, TENANT, OperatorProcess, World, condition, get, order, secret_value, wait_for

from engine.cluster.api import Obj

FAST_LEASE = ("--leader-elect", "--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1500ms",
              "--leader-elect-retry-period", "250ms", "--clusters-namespace", "")
LEASE = ("coordination.k8s.io/v1", "Lease", "c5c3-system", "c5c3-operator")


@pytest.fixture
def replicas(world: World) -> Iterator[tuple[OperatorProcess, OperatorProcess]]:
    a = OperatorProcess(world, *FAST_LEASE, name="replica-a")
    b = OperatorProcess(world, *FAST_LEASE, name="replica-b")
    try:
        a.wait_ready()
        b.wait_ready()
        yield a, b
    finally:  # also when one failed to start: a replica left running would hold the Lease for the next test
        for replica in (a, b):
            if replica.process.poll() is None:
                replica.stop()


def lease(world: World) -> Obj:
    found = get(world.management, *LEASE)
    assert found is not None
    return found


def managed_users(world: World, name: str) -> list[str]:
    labels = {"c5c3.io/keystoneuser-name": name, "c5c3.io/keystoneuser-namespace": TENANT}
    users = world.management.list("openstack.k-orc.cloud/v1alpha1", "User", "openstack", labels=labels).items
    return [u["metadata"]["name"] for u in users if not u["metadata"]["name"].endswith("-probe")]


def password_secrets(world: World, name: str) -> list[str]:
    labels = {"c5c3.io/keystoneuser-name": name, "c5c3.io/keystoneuser-namespace": TENANT}
    secrets = world.management.list("v1", "Secret", "openstack", labels=labels).items
    return sorted(s["metadata"]["name"] for s in secrets if "-password-v" in s["metadata"]["name"])


def ready(world: World, name: str) -> bool:
    return condition(get(world.management, API, "KeystoneUser", TENANT, name), "Ready") == "True"


def test_the_follower_takes_over_a_killed_leader_and_nothing_is_provisioned_twice(
    world: World, replicas: tuple[OperatorProcess, OperatorProcess]
) -> None:
    """Exactly one replica reconciles; after SIGKILL the other acquires the expired Lease and carries on."""
    a, b = replicas
    wait_for(lambda: a.leads() or b.leads(), message="a leader")
    time.sleep(1.0)
    assert a.leads() != b.leads()
    leader, follower = (a, b) if a.leads() else (b, a)
    holder = lease(world)["spec"]["holderIdentity"]

    world.management.create(order("KeystoneUser", "first"))
    wait_for(lambda: ready(world, "first"), message="first Ready under the first leader")
    assert "became the leader" in leader.logs()
    assert '"logger": "engine.reconcile"' not in follower.logs()  # the follower ran no pass

    leader.kill()
    world.management.create(order("KeystoneUser", "second"))
    wait_for(follower.leads, timeout=15, message="the follower to lead")
    wait_for(lambda: ready(world, "second"), message="second Ready under the new leader")

    spec = lease(world)["spec"]
    assert spec["holderIdentity"] != holder
    assert spec["leaseTransitions"] == 1
    for name in ("first", "second"):
        stored = get(world.management, API, "KeystoneUser", TENANT, name) or {}
        assert stored["status"]["passwordGeneration"] == 1
        assert len(managed_users(world, name)) == 1
        assert [s.rsplit("-", 1)[1] for s in password_secrets(world, name)] == ["v1"]
        delivered = get(world.management, "v1", "Secret", TENANT, f"{name}-credentials")
        [password_secret] = password_secrets(world, name)
        assert secret_value(delivered, "password") == secret_value(
            get(world.management, "v1", "Secret", "openstack", password_secret), "password")


def test_a_graceful_stop_releases_the_lease(world: World, replicas: tuple[OperatorProcess, OperatorProcess]) -> None:
    """SIGTERM on the leader: exit 0, the Lease released, and the follower leads without waiting for expiry."""
    a, b = replicas
    wait_for(lambda: a.leads() or b.leads(), message="a leader")
    leader, follower = (a, b) if a.leads() else (b, a)
    holder = lease(world)["spec"]["holderIdentity"]
    assert leader.stop() == 0
    assert "of the leader" in leader.logs() and "released the Lease" in leader.logs()
    assert lease(world)["spec"]["holderIdentity"] != holder  # released (or already taken), not left to expire
    wait_for(follower.leads, timeout=10, message="the follower to lead")
