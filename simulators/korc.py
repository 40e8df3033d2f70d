"""A simulated K-ORC for Users: imports, managed users with their password, and their finalizer.

It keeps a tiny Keystone of its own (user names and ids, never passwords) and answers as the
real controller does on the fields the rules read:

- an unmanaged import (``spec.managementPolicy: unmanaged``) whose user does not exist reports
  Available False "Waiting for OpenStack resource to be created externally"; one whose user
  exists reports Available True with its id;
- a managed User gets the K-ORC finalizer, creates its user once its password Secret exists, and
  reports Available True, ``status.id`` and ``status.resource.appliedPasswordRef`` (the Secret it
  applied, which a changed ``spec.resource.passwordRef`` moves);
- a managed User being deleted deletes its user and drops the finalizer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from engine.clock import Clock
from engine.cluster.api import Cluster, NotFound, Obj
from simulators.base import Reaction, condition_is, deleting, finalizers, key, secret_exists, with_condition

API_VERSION = "openstack.k-orc.cloud/v1alpha1"
KIND = "User"
FINALIZER = "openstack.k-orc.cloud/user"
FIELD_MANAGER = "k-orc"
WAITING_FOR_IMPORT = "Waiting for OpenStack resource to be created externally"
_IDS = uuid.UUID("5b1f3c7e-9a0d-4c1e-8f2a-6d7e0b9c4a11")


class KorcSimulator:
    """K-ORC's User controller over every namespace of one cluster."""

    name = "K-ORC"

    def __init__(self, cluster: Cluster, clock: Clock, *, existing_users: Iterable[str] = ()) -> None:
        """existing_users: Keystone user names that exist before anything is created (a collision)."""
        self.cluster = cluster
        self.clock = clock
        self.keystone: dict[str, str] = {name: user_id(name) for name in existing_users}
        """The simulated Keystone: user name to id."""

    def reactions(self) -> list[Reaction]:
        try:
            users = self.cluster.list(API_VERSION, KIND).items
        except NotFound:  # the kind is not served: nothing to do
            return []
        found = (self._react(user) for user in users)
        return [reaction for reaction in found if reaction is not None]

    def _react(self, user: Obj) -> Reaction | None:
        spec = user.get("spec") or {}
        if spec.get("managementPolicy") == "unmanaged":
            return None if deleting(user) else self._import(user)
        if deleting(user):
            return self._delete(user) if FINALIZER in finalizers(user) else None
        return self._manage(user)

    def _import(self, user: Obj) -> Reaction | None:
        wanted = ((user["spec"].get("import") or {}).get("filter") or {}).get("name", "")
        if wanted in self.keystone:
            if condition_is(user, "Available", "True") and (user.get("status") or {}).get("id"):
                return None
            note = f"User {key(user)}: Keystone user {wanted!r} exists; imported (Available=True)"
            status = {"id": self.keystone[wanted], "resource": {"name": wanted}}
            return self._status(user, note, status, "True", "Success", "OpenStack resource is available")
        if condition_is(user, "Available", "False", "Progressing"):
            return None
        note = f"User {key(user)}: no Keystone user {wanted!r}; waiting for it (Available=False)"
        return self._status(user, note, {}, "False", "Progressing", WAITING_FOR_IMPORT)

    def _manage(self, user: Obj) -> Reaction | None:
        resource = user["spec"].get("resource") or {}
        name = resource.get("name") or user["metadata"]["name"]
        password_ref = resource.get("passwordRef") or ""
        status = user.get("status") or {}
        applied = (status.get("resource") or {}).get("appliedPasswordRef")
        if not secret_exists(self.cluster, user["metadata"]["namespace"], password_ref):
            message = f"Waiting for Secret/{password_ref} to be created"
            if condition_is(user, "Available", "False", "Progressing") and _message(user) == message:
                return None
            note = f"User {key(user)}: waiting for its password Secret {password_ref}"
            return self._status(user, note, {}, "False", "Progressing", message)
        if (
            FINALIZER in finalizers(user)
            and condition_is(user, "Available", "True")
            and status.get("id")
            and applied == password_ref
        ):
            return None
        if name not in self.keystone:
            note = f"User {key(user)}: created Keystone user {name!r} with the password of Secret {password_ref}"
        elif applied != password_ref:
            note = f"User {key(user)}: applied the password of Secret {password_ref} to Keystone user {name!r}"
        else:
            note = f"User {key(user)}: Keystone user {name!r} is available"
        new_status = {"id": user_id(name), "resource": {"name": name, "appliedPasswordRef": password_ref}}

        def apply() -> None:
            self._add_finalizer(user)
            self.keystone[name] = user_id(name)
            self._write_status(user, new_status, "True", "Success", "OpenStack resource is available")

        return Reaction(note, apply)

    def _delete(self, user: Obj) -> Reaction:
        name = (user["spec"].get("resource") or {}).get("name") or user["metadata"]["name"]

        def apply() -> None:
            self.keystone.pop(name, None)
            rest = [f for f in finalizers(user) if f != FINALIZER]
            self.cluster.patch(
                API_VERSION, KIND, user["metadata"]["namespace"], user["metadata"]["name"],
                {"metadata": {"finalizers": rest or None}}, field_manager=FIELD_MANAGER,
            )

        return Reaction(f"User {key(user)}: deleted Keystone user {name!r}; finalizer removed", apply)

    def _status(
        self, user: Obj, note: str, status: dict[str, Any], available: str, reason: str, message: str
    ) -> Reaction:
        return Reaction(note, lambda: self._write_status(user, status, available, reason, message))

    def _write_status(self, user: Obj, status: dict[str, Any], available: str, reason: str, message: str) -> None:
        progressing = "False" if available == "True" else "True"
        progress_message = "OpenStack resource is up to date" if available == "True" else message
        conditions = with_condition(user, self.clock, "Available", available, reason, message)
        conditions = with_condition(
            {**user, "status": {"conditions": conditions}}, self.clock,
            "Progressing", progressing, reason, progress_message,
        )
        self.cluster.patch(
            API_VERSION, KIND, user["metadata"]["namespace"], user["metadata"]["name"],
            {"status": {**status, "conditions": conditions}}, status=True, field_manager=FIELD_MANAGER,
        )

    def _add_finalizer(self, user: Obj) -> None:
        if FINALIZER in finalizers(user):
            return
        self.cluster.patch(
            API_VERSION, KIND, user["metadata"]["namespace"], user["metadata"]["name"],
            {"metadata": {"finalizers": [*finalizers(user), FINALIZER]}}, field_manager=FIELD_MANAGER,
        )


def user_id(name: str) -> str:
    """The Keystone id the simulated Keystone gives a user name (stable, so runs repeat)."""
    return uuid.uuid5(_IDS, name).hex


def _message(obj: Obj) -> str:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Available":
            return str(cond.get("message", ""))
    return ""
