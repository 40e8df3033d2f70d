"""What the chaos and fault tests share (imported as ``fault_kit``): the operator's kubeconfig through the fault
proxy, and the invariants every order keeps whatever the API does or the operator suffers.

The invariants, for KeystoneUser orders on the management cluster:

- one external user per order: exactly one managed K-ORC User carries the order's labels, and the simulated
  Keystone holds its user under the id the User reports;
- the delivered password is the current one: the order's ``<name>-credentials`` Secret holds the password of the
  Secret the User last applied to Keystone;
- nothing re-created: the order's User, its password Secret and its delivered Secret keep their uid from the first
  check on, and the order stays at password generation 1;
- nothing left after teardown: no child carries a deleted order's labels, no delivered Secret is left, and Keystone
  holds none of their users.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path

import yaml
from integration_kit import API, TENANT, OperatorProcess, World, condition, get, secret_value

from engine.cluster.api import Obj
from offline.faults import FaultProxy, proxied
from simulators.korc import KorcSimulator

NAME_LABEL = "c5c3.io/keystoneuser-name"
NAMESPACE_LABEL = "c5c3.io/keystoneuser-namespace"
CP_NAMESPACE = "openstack"
USERS = ("openstack.k-orc.cloud/v1alpha1", "User")
CHILD_KINDS = (("v1", "Secret"), ("external-secrets.io/v1alpha1", "PushSecret"), USERS)
"""The kinds of a KeystoneUser's children in the ControlPlane's namespace (rules/keystoneuser.yaml)."""


def proxied_kubeconfig(world: World, proxy: FaultProxy, name: str) -> Path:
    """The world's kubeconfig with the management cluster reached through the proxy (written beside it)."""
    path = world.tmp / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump(proxied(yaml.safe_load(world.kubeconfig.read_text()), proxy)))
    return path


def metric_sum(process: OperatorProcess, name: str, **labels: str) -> float:
    """The sum of a metric's samples carrying those labels (every sample: no labels given)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{process.metrics_port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    wanted = [f'{key}="{value}"' for key, value in labels.items()]
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if (line.startswith(name + "{") or line.startswith(name + " "))
               and all(label in line.partition("}")[0] for label in wanted))


def ready(world: World, name: str) -> bool:
    return condition(get(world.management, API, "KeystoneUser", TENANT, name), "Ready") == "True"


def all_ready(world: World, names: Iterable[str]) -> bool:
    return all(ready(world, name) for name in names)


def keystone(world: World) -> KorcSimulator:
    """The world's simulated K-ORC (and its Keystone)."""
    return next(sim for sim in world.simulators if isinstance(sim, KorcSimulator))


def children(world: World, name: str) -> list[Obj]:
    """Every child of an order in the ControlPlane's namespace (by its name labels), probes included."""
    labels = {NAME_LABEL: name, NAMESPACE_LABEL: TENANT}
    return [item for api_version, kind in CHILD_KINDS
            for item in world.management.list(api_version, kind, CP_NAMESPACE, labels=labels).items]


def managed_users(world: World, name: str) -> list[Obj]:
    return [child for child in children(world, name)
            if child["kind"] == "User" and not child["metadata"]["name"].endswith("-probe")]


class Invariants:
    """Checks the invariants of the module docstring; remembers each order's uids from its first check."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.uids: dict[str, tuple[str, str, str]] = {}

    def check(self, names: Iterable[str]) -> None:
        """Every invariant of live orders (each Ready already)."""
        world = self.world
        for name in names:
            stored = get(world.management, API, "KeystoneUser", TENANT, name) or {}
            assert (stored.get("status") or {}).get("passwordGeneration") == 1, (name, stored.get("status"))
            users = managed_users(world, name)
            assert len(users) == 1, f"{name}: {len(users)} managed K-ORC Users"
            [user] = users
            resource = user["spec"]["resource"]
            status = user.get("status") or {}
            held = keystone(world).user(resource.get("domainRef") or "", resource.get("name") or "")
            assert held is not None and held == status.get("id"), f"{name}: Keystone holds {held}, the User {status}"
            applied = (status.get("resource") or {}).get("appliedPasswordRef")
            password = get(world.management, "v1", "Secret", CP_NAMESPACE, str(applied))
            delivered = get(world.management, "v1", "Secret", TENANT, f"{name}-credentials")
            assert password is not None and delivered is not None, f"{name}: applied {applied}, delivered {delivered}"
            assert secret_value(delivered, "password") == secret_value(password, "password"), (
                f"{name}: the delivered password is not the one Keystone holds (Secret {applied})")
            uids = (user["metadata"]["uid"], password["metadata"]["uid"], delivered["metadata"]["uid"])
            assert self.uids.setdefault(name, uids) == uids, f"{name}: re-created (User, password, delivered uids)"

    def nothing_left(self, names: Iterable[str]) -> list[str]:
        """What deleted orders left behind (empty when nothing): orders, children, delivered Secrets, users."""
        world = self.world
        left: list[str] = []
        folded = keystone(world).names()
        for name in names:
            if get(world.management, API, "KeystoneUser", TENANT, name) is not None:
                left.append(f"order {name}")
            left.extend(f"{child['kind']} {child['metadata']['name']}" for child in children(world, name))
            if get(world.management, "v1", "Secret", TENANT, f"{name}-credentials") is not None:
                left.append(f"Secret {TENANT}/{name}-credentials")
            if name in folded:
                left.append(f"Keystone user {name}")
        return left


def wait_gone(invariants: Invariants, names: Iterable[str], timeout: float) -> None:
    """Wait until the deleted orders left nothing; fail naming what is left."""
    deadline = time.monotonic() + timeout
    while (left := invariants.nothing_left(names)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"left after teardown: {left}"
