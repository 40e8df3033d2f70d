"""A simulated External Secrets Operator for PushSecrets, with a stand-in for the secret store.

It answers as ESO does on the fields the rules read:

- a PushSecret is pushed when it is new or its spec, labels or annotations changed since the
  last push: ``status.syncedResourceVersion`` becomes ``<generation>-<hash of labels and
  annotations>`` (ESO's own formula, so a status write never counts as a change) and Ready True;
- a PushSecret whose source Secret is missing reports Ready False and pushes nothing;
- with ``deletionPolicy: Delete`` it holds a finalizer, and deleting the PushSecret removes the
  pushed keys from the store before the finalizer goes.

The store keeps only which remote keys exist and how often each was pushed, never the data.
"""

from __future__ import annotations

import hashlib
import json

from engine.clock import Clock
from engine.cluster.api import Cluster, NotFound, Obj
from simulators.base import Reaction, condition_is, deleting, finalizers, key, secret_exists, with_condition

API_VERSION = "external-secrets.io/v1alpha1"
KIND = "PushSecret"
FINALIZER = "pushsecret.externalsecrets.io/finalizer"
FIELD_MANAGER = "external-secrets"


class EsoSimulator:
    """ESO's PushSecret controller over every namespace of one cluster."""

    name = "ESO"

    def __init__(self, cluster: Cluster, clock: Clock) -> None:
        self.cluster = cluster
        self.clock = clock
        self.store: dict[str, int] = {}
        """The simulated secret store: remote key to the number of pushes it received."""

    def reactions(self) -> list[Reaction]:
        try:
            pushes = self.cluster.list(API_VERSION, KIND).items
        except NotFound:  # the kind is not served: nothing to do
            return []
        found = (self._react(push) for push in pushes)
        return [reaction for reaction in found if reaction is not None]

    def _react(self, push: Obj) -> Reaction | None:
        if deleting(push):
            return self._delete(push) if FINALIZER in finalizers(push) else None
        source = ((push.get("spec") or {}).get("selector") or {}).get("secret", {}).get("name", "")
        if not secret_exists(self.cluster, push["metadata"]["namespace"], source):
            message = f"could not get source secret {source!r}"
            if condition_is(push, "Ready", "False", "Errored"):
                return None
            note = f"PushSecret {key(push)}: source Secret {source} not found; nothing pushed"
            return Reaction(note, lambda: self._write_status(push, None, "False", "Errored", message))
        version = synced_version(push)
        if condition_is(push, "Ready", "True") and (push.get("status") or {}).get("syncedResourceVersion") == version:
            return None
        keys = remote_keys(push)
        stores = ", ".join(ref.get("name", "") for ref in (push.get("spec") or {}).get("secretStoreRefs") or ())

        def apply() -> None:
            if push["spec"].get("deletionPolicy") == "Delete" and FINALIZER not in finalizers(push):
                self._set_finalizers(push, [*finalizers(push), FINALIZER])
            for remote in keys:
                self.store[remote] = self.store.get(remote, 0) + 1
            self._write_status(push, version, "True", "Synced", "PushSecret synced successfully")

        return Reaction(f"PushSecret {key(push)}: pushed Secret {source} to {stores} at {', '.join(keys)}", apply)

    def _delete(self, push: Obj) -> Reaction:
        keys = remote_keys(push) if push["spec"].get("deletionPolicy") == "Delete" else []

        def apply() -> None:
            for remote in keys:
                self.store.pop(remote, None)
            self._set_finalizers(push, [f for f in finalizers(push) if f != FINALIZER])

        removed = f"removed {', '.join(keys)} from the store; " if keys else ""
        return Reaction(f"PushSecret {key(push)}: {removed}finalizer removed", apply)

    def _write_status(self, push: Obj, version: str | None, ready: str, reason: str, message: str) -> None:
        status: Obj = {"conditions": with_condition(push, self.clock, "Ready", ready, reason, message)}
        if version is not None:
            status["syncedResourceVersion"] = version
        self.cluster.patch(
            API_VERSION, KIND, push["metadata"]["namespace"], push["metadata"]["name"],
            {"status": status}, status=True, field_manager=FIELD_MANAGER,
        )

    def _set_finalizers(self, push: Obj, names: list[str]) -> None:
        self.cluster.patch(
            API_VERSION, KIND, push["metadata"]["namespace"], push["metadata"]["name"],
            {"metadata": {"finalizers": names or None}}, field_manager=FIELD_MANAGER,
        )


def synced_version(push: Obj) -> str:
    """What ESO records after a push: the generation and a hash of the labels and annotations."""
    meta = push.get("metadata") or {}
    digest = hashlib.sha256(
        json.dumps([meta.get("labels") or {}, meta.get("annotations") or {}], sort_keys=True).encode()
    ).hexdigest()
    return f"{meta.get('generation', 1)}-{digest[:16]}"


def remote_keys(push: Obj) -> list[str]:
    """The remote keys a PushSecret writes."""
    data = (push.get("spec") or {}).get("data") or ()
    return [
        str(((item.get("match") or {}).get("remoteRef") or {}).get("remoteKey", ""))
        for item in data
        if isinstance(item, dict)
    ]
