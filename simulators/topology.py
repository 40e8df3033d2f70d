"""A simulated RabbitMQ messaging topology operator for Vhosts, Users and Permissions.

It answers as the real operator does on the fields the rules read: an object it has not yet
reconciled at its current generation gets ``status.observedGeneration`` and a Ready True
condition (``SuccessfulCreateOrUpdate``); a User also gets ``status.username`` (read from its
credentials Secret) and ``status.credentials``; the operator's User status requires ``username``. A User
whose ``spec.importCredentialsSecret`` is missing reports Ready False instead (its ``username`` empty
until known), as the operator cannot create it. It keeps no broker and
holds no finalizers: a deleted object goes at once.
"""

from __future__ import annotations

import base64

from engine.clock import Clock
from engine.cluster.api import Cluster, NotFound, Obj
from simulators.base import Reaction, condition_is, deleting, key, secret_exists, with_condition

API_VERSION = "rabbitmq.com/v1beta1"
KINDS = ("Vhost", "User", "Permission")
FIELD_MANAGER = "messaging-topology-operator"


class TopologySimulator:
    """The topology operator's Vhost, User and Permission controllers over every namespace of one cluster."""

    name = "topology"

    def __init__(self, cluster: Cluster, clock: Clock) -> None:
        self.cluster = cluster
        self.clock = clock

    def reactions(self) -> list[Reaction]:
        found: list[Reaction] = []
        for kind in KINDS:
            try:
                items = self.cluster.list(API_VERSION, kind).items
            except NotFound:  # the kind is not served: nothing to do
                continue
            for obj in items:
                reaction = None if deleting(obj) else self._react(kind, obj)
                if reaction is not None:
                    found.append(reaction)
        return found

    def _react(self, kind: str, obj: Obj) -> Reaction | None:
        generation = (obj.get("metadata") or {}).get("generation", 1)
        observed = (obj.get("status") or {}).get("observedGeneration")
        if kind == "User":
            secret = ((obj.get("spec") or {}).get("importCredentialsSecret") or {}).get("name", "")
            if not secret_exists(self.cluster, obj["metadata"]["namespace"], secret):
                if condition_is(obj, "Ready", "False", "FailedCreateOrUpdate") and observed == generation:
                    return None
                note = f"User {key(obj)}: credentials Secret {secret!r} not found (Ready=False)"
                # The operator's User status always carries username (required; empty until it is known).
                known = {"username": str((obj.get("status") or {}).get("username") or "")}
                return self._status(kind, obj, note, "False", "FailedCreateOrUpdate",
                                    f"failed to get credentials Secret {secret!r}", known)
        if condition_is(obj, "Ready", "True") and observed == generation:
            return None
        extra = self._user_status(obj) if kind == "User" else {}
        return self._status(kind, obj, f"{kind} {key(obj)}: created or updated on the broker (Ready=True)",
                            "True", "SuccessfulCreateOrUpdate", "", extra)

    def _user_status(self, user: Obj) -> Obj:
        """What the operator reports on a created User: its broker username and its credentials Secret."""
        secret_name = ((user.get("spec") or {}).get("importCredentialsSecret") or {}).get("name", "")
        try:
            data = self.cluster.get("v1", "Secret", user["metadata"]["namespace"], secret_name).get("data") or {}
        except NotFound:
            data = {}
        try:
            username = base64.b64decode(str(data.get("username", ""))).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            username = ""
        return {"username": username or user["metadata"]["name"], "credentials": {"name": secret_name}}

    def _status(self, kind: str, obj: Obj, note: str, status: str, reason: str, message: str,
                extra: Obj | None = None) -> Reaction:
        def apply() -> None:
            self.cluster.patch(
                API_VERSION, kind, obj["metadata"]["namespace"], obj["metadata"]["name"],
                {"status": {
                    "observedGeneration": (obj.get("metadata") or {}).get("generation", 1),
                    "conditions": with_condition(obj, self.clock, "Ready", status, reason, message),
                    **(extra or {}),
                }},
                status=True, field_manager=FIELD_MANAGER,
            )

        return Reaction(note, apply)
