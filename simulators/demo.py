"""``engine demo``: one KeystoneUser order from creation to teardown, told as a timeline.

The real rules run in the real runtime (the Manager, on a simulated clock) against an
in-memory management cluster. K-ORC and ESO are simulated (``simulators.korc``,
``simulators.eso``) and answer one simulated second after what they react to. Nothing
touches the network, the wall clock or a real cluster; no Secret value is ever printed.

The story: a ControlPlane that assigns ``tenant-a`` and has a ready secret store; the order
``tenant-a/workflow`` with ``rotation.interval: 1h``; provision, delivery, the clock moved past
the interval (generation 2, the old password Secret gone, the delivered Secret rewritten), and
the order deleted (its children swept, then the order gone). Exit status 0 when every step
reached the state the story expects, 1 when one did not (the reason is printed).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml
from prometheus_client import CollectorRegistry

from engine.cluster.api import MANAGEMENT_CLUSTER, NotFound, Obj
from engine.cluster.registry import ClusterSet
from engine.metrics import Metrics
from engine.rules.bundle import installed
from engine.rules.catalog import load_catalog
from engine.runtime.manager import Manager
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster
from simulators import eso, korc
from simulators.base import Simulator, find_condition, pending, react
from simulators.timeline import Stream, Timeline

ROOT = Path(__file__).resolve().parent.parent
"""The checkout: rules/, templates/ and deploy/crds/ are read from here when no install carries them."""

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
REACTION = dt.timedelta(seconds=1)
"""How long a simulated controller takes to answer."""
PATIENCE = dt.timedelta(minutes=5)
"""How long a step of the story may take before the demo calls it stuck."""

API = "c5c3.io/v1alpha1"
KIND = "KeystoneUser"
NAMESPACE, NAME = "tenant-a", "workflow"
CP_NAMESPACE, CP_NAME = "openstack", "cp"
INTERVAL = dt.timedelta(hours=1)
DELIVERED = f"{NAME}-credentials"

WORLD: list[Obj] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CP_NAMESPACE}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
    {
        "apiVersion": API, "kind": "ControlPlane",
        "metadata": {"name": CP_NAME, "namespace": CP_NAMESPACE},
        "spec": {"namespaceAssignments": [{"namespace": NAMESPACE}]},
        "status": {"conditions": [{
            "type": "AdminCredentialReady", "status": "True", "reason": "Ready",
            "message": "admin credential is ready", "lastTransitionTime": "2026-01-01T00:00:00Z",
        }]},
    },
    {
        "apiVersion": "external-secrets.io/v1", "kind": "SecretStore",
        "metadata": {"name": "openbao-tenant-store", "namespace": CP_NAMESPACE},
        "status": {"conditions": [{
            "type": "Ready", "status": "True", "reason": "Valid",
            "message": "store validated", "lastTransitionTime": "2026-01-01T00:00:00Z",
        }]},
    },
]

ORDER: Obj = {
    "apiVersion": API, "kind": KIND,
    "metadata": {"name": NAME, "namespace": NAMESPACE},
    "spec": {"controlPlaneRef": {"name": CP_NAME, "namespace": CP_NAMESPACE}, "rotation": {"interval": "1h"}},
}

CHILD_LABELS = {"c5c3.io/keystoneuser-name": NAME, "c5c3.io/keystoneuser-namespace": NAMESPACE}


class StoryFailed(Exception):
    """A step of the story did not reach the state it expects."""


class Demo:
    """The world of the story: cluster, clock, operator, simulated controllers and the timeline."""

    def __init__(self, out: TextIO) -> None:
        rules = installed("rules") or ROOT / "rules"
        crds = installed("crds") or ROOT / "deploy" / "crds"
        self.out = out
        self.clock = SimulatedClock(START)
        self.cluster = MemoryCluster(MANAGEMENT_CLUSTER, clock=self.clock, permissive=True)
        for path in sorted(crds.rglob("*.yaml")):  # with external/: the children are admitted as upstream would
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    self.cluster.create(doc)
        for obj in WORLD:
            self.cluster.seed(obj)
        self.manager: Manager[Any] = Manager(
            load_catalog(rules), ClusterSet(self.cluster), clock=self.clock,
            metrics=Metrics(CollectorRegistry()), log=logging.getLogger("engine.demo"),
        )
        self.korc = korc.KorcSimulator(self.cluster, self.clock)
        self.eso = eso.EsoSimulator(self.cluster, self.clock)
        self.simulators: Sequence[Simulator] = (self.korc, self.eso)
        self.timeline = Timeline(self.cluster, self.clock, [
            Stream(API, KIND, NAMESPACE, name=NAME, order=True),
            Stream("v1", "Secret", NAMESPACE, labels=CHILD_LABELS),
            Stream("openstack.k-orc.cloud/v1alpha1", "User", CP_NAMESPACE, labels=CHILD_LABELS),
            Stream("v1", "Secret", CP_NAMESPACE, labels=CHILD_LABELS),
            Stream("external-secrets.io/v1alpha1", "PushSecret", CP_NAMESPACE, labels=CHILD_LABELS),
        ], out)
        self._react_at: dt.datetime | None = None

    # -- running the world --------------------------------------------------------

    def run(self, within: dt.timedelta, until: Callable[[], bool] | None = None) -> None:
        """Let the world run for ``within`` of simulated time, or until ``until`` holds.

        The operator runs every pass that is due; a controller with something to do answers
        REACTION later. Time moves only to the next timer or answer, so every line is stamped
        with the instant it happened. Raises StoryFailed when ``until`` never holds.
        """
        end = self.clock.now() + within
        while True:
            self.manager.settle()
            self.timeline.drain()
            if until is not None and until():
                return
            now = self.clock.now()
            if self._react_at is None and pending(self.simulators):
                self._react_at = now + REACTION
            due = [t for t in (self._react_at, self.manager.queue.next_timer()) if t is not None and t <= end]
            target = max(min(due), now) if due else end
            self.manager.advance(target - now)
            self.timeline.drain()
            if self._react_at is not None and self._react_at <= target:
                self._react_at = None
                for note in react(self.simulators):
                    self.timeline.say(note)
            elif not due:
                break
        if until is not None and not until():
            raise StoryFailed(f"still waiting after {within}")

    # -- what the story reads -----------------------------------------------------

    def order(self) -> Obj | None:
        try:
            return self.cluster.get(API, KIND, NAMESPACE, NAME)
        except NotFound:
            return None

    def condition(self, type_: str) -> str:
        order = self.order()
        found = find_condition(order, type_) if order is not None else None
        return str(found.get("status")) if found is not None else "Unknown"

    def status(self, field: str) -> Any:
        order = self.order()
        return (order or {}).get("status", {}).get(field)

    def children(self) -> list[str]:
        """Every object still labelled as the order's child, as ``Kind namespace/name``."""
        found = []
        for api_version, kind, namespace in (
            ("openstack.k-orc.cloud/v1alpha1", "User", CP_NAMESPACE),
            ("v1", "Secret", CP_NAMESPACE),
            ("external-secrets.io/v1alpha1", "PushSecret", CP_NAMESPACE),
            ("v1", "Secret", NAMESPACE),
        ):
            for obj in self.cluster.list(api_version, kind, namespace, labels=CHILD_LABELS).items:
                found.append(f"{kind} {namespace}/{obj['metadata']['name']}")
        return found

    def password_fingerprint(self) -> str | None:
        """A digest of the delivered password, to tell that it changed without ever showing it."""
        try:
            secret = self.cluster.get("v1", "Secret", NAMESPACE, DELIVERED)
        except NotFound:
            return None
        return hashlib.sha256(str((secret.get("data") or {}).get("password", "")).encode()).hexdigest()

    def password_secrets(self) -> list[str]:
        return sorted(
            obj["metadata"]["name"]
            for obj in self.cluster.list("v1", "Secret", CP_NAMESPACE, labels=CHILD_LABELS).items
            if "-password-v" in obj["metadata"]["name"]
        )

    # -- the story ------------------------------------------------------------------

    def story(self) -> None:
        t = self.timeline
        self.out.write(
            "engine demo: a KeystoneUser order served by the rule engine (rules/keystoneuser.yaml)\n"
            "on an in-memory management cluster. K-ORC and ESO are simulated and answer 1s after\n"
            f"what they react to. Times are simulated, from {START:%Y-%m-%dT%H:%M:%SZ}.\n"
            "Secret values are never shown.\n"
            "\nThe world:\n"
            f"  ControlPlane {CP_NAMESPACE}/{CP_NAME}: assigns namespace {NAMESPACE}, AdminCredentialReady=True\n"
            f"  SecretStore {CP_NAMESPACE}/openbao-tenant-store: Ready=True (where ESO backs the password up)\n"
            f"  KeystoneUser {NAMESPACE}/{NAME}: controlPlaneRef {CP_NAMESPACE}/{CP_NAME}, rotation.interval 1h\n"
        )
        self.manager.start()

        t.section("Provision: the engine probes for a Keystone user of that name, then has K-ORC create it")
        self.cluster.create(ORDER)
        self.run(PATIENCE, until=lambda: self.condition("UserReady") == "True")
        self._expect(self.status("passwordGeneration") == 1, "the user is provisioned at password generation 1")

        t.section("Delivery: ESO backs the password up to OpenBao, then the Secret is delivered beside the order")
        self.run(PATIENCE, until=lambda: self.condition("Ready") == "True")
        self._expect(self.status("secretName") == DELIVERED, f"status.secretName reads {DELIVERED}")
        t.note(f"Secret {NAMESPACE}/{DELIVERED} holds keys {', '.join(self.status('secretKeys') or ())}"
               " (values not shown)")
        first = self.password_fingerprint()

        t.section(f"Rotation: the clock moves {_hms(INTERVAL + PATIENCE)}, past rotation.interval (1h)")
        self.run(INTERVAL + PATIENCE)
        self._expect(self.status("passwordGeneration") == 2, "the scheduled rotation reached password generation 2")
        self._expect(self.condition("Ready") == "True", "the order is Ready again after the rotation")
        self._expect(not any(n.endswith("-password-v1") for n in self.password_secrets()),
                     "the generation-1 password Secret is deleted")
        self._expect(self.password_fingerprint() not in (None, first), "the delivered Secret carries a new password")
        t.note(f"Secret {NAMESPACE}/{DELIVERED}: password changed (generation 2); "
               f"password Secrets now: {', '.join(self.password_secrets())}")

        t.section("Teardown: the order is deleted; the engine sweeps its children, then releases it")
        self.cluster.delete(API, KIND, NAMESPACE, NAME)
        self.run(PATIENCE, until=lambda: self.order() is None)
        left = self.children()
        self._expect(not left, f"no child is left (found {', '.join(left)})")
        self._expect(not self.eso.store, "ESO removed the backup from the store")
        self._expect(not self.korc.keystone, "K-ORC deleted the Keystone user")
        t.note(f"{KIND} {NAMESPACE}/{NAME} and all its children are gone; the backup and the Keystone user too")

    def _expect(self, holds: bool, what: str) -> None:
        if not holds:
            raise StoryFailed(what)


def _hms(delta: dt.timedelta) -> str:
    seconds = int(delta.total_seconds())
    hours, minutes = seconds // 3600, seconds % 3600 // 60
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m"


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Tell the story on ``out`` (stdout); 0 when it went as expected, 1 when a step did not."""
    stream = out if out is not None else sys.stdout
    demo = Demo(stream)
    try:
        demo.story()
    except BrokenPipeError:  # `engine demo | head`: the reader has gone, so stop quietly
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps the interpreter's final flush quiet
        return 0
    except StoryFailed as exc:
        stream.write(f"\ndemo FAILED at {demo.timeline.stamp()}: expected that {exc}\n")
        return 1
    stream.write("\ndemo finished: provisioned, delivered, rotated and torn down.\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
