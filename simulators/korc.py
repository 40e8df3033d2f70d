"""A simulated K-ORC for Users: imports, managed users with their password, and their finalizer.

It keeps a tiny Keystone of its own (user names and ids, never passwords) and answers as the real controller does
on the fields the rules read: an unmanaged import reports Available True with its id once its user exists, False
"Waiting for OpenStack resource to be created externally" until then; a managed User gets the K-ORC finalizer,
creates its user once its password Secret exists and reports ``status.id`` and
``status.resource.appliedPasswordRef``; names are unique per domain, compared as Keystone compares them, and a
duplicate is refused as Keystone refuses it (409, a terminal error K-ORC does not retry until its Progressing
condition is cleared or its generation moves); a managed User being deleted deletes the user it created (by its
``status.id``) and drops the finalizer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from engine.clock import Clock
from engine.cluster.api import Cluster, Conflict, NotFound, Obj
from engine.expr.functions import fold
from simulators.base import Reaction, condition_is, deleting, finalizers, key, secret_exists, with_condition

API_VERSION = "openstack.k-orc.cloud/v1alpha1"
KIND = "User"
FINALIZER = "openstack.k-orc.cloud/user"
FIELD_MANAGER = "k-orc"
WAITING_FOR_IMPORT = "Waiting for OpenStack resource to be created externally"
TERMINAL = "InvalidConfiguration"
ANY_DOMAIN = "*"
"""The domain of users given as existing: they collide in every domain."""
_IDS = uuid.UUID("5b1f3c7e-9a0d-4c1e-8f2a-6d7e0b9c4a11")


class KorcSimulator:
    """K-ORC's User controller over every namespace of one cluster.

    It keeps a tiny Keystone of its own (user names and ids, never passwords) and answers as the real controller does
    on the fields the rules read:

    - an unmanaged import (``spec.managementPolicy: unmanaged``) whose user does not exist reports Available False
      "Waiting for OpenStack resource to be created externally"; one whose user exists reports Available True with its
      id;
    - a managed User gets the K-ORC finalizer, creates its user once its password Secret exists, and reports Available
      True, ``status.id`` and ``status.resource.appliedPasswordRef`` (the Secret it applied, which a changed
      ``spec.resource.passwordRef`` moves);
    - names are unique per domain, compared as Keystone compares them (case- and accent-insensitive): a managed User
      whose name another User already holds is refused as Keystone refuses it (409 "Duplicate entry"), a terminal
      error K-ORC does not retry until its Progressing condition is cleared or its generation moves; the name is
      checked when the user is created, so of two Users of one name seen in one round only the first gets a user (the
      other is refused the next round);
    - a managed User being deleted deletes the user it created (by its ``status.id``, never another User's) and drops
      the finalizer.
    """

    name = "K-ORC"

    def __init__(self, cluster: Cluster, clock: Clock, *, existing_users: Iterable[str] = ()) -> None:
        """existing_users: Keystone user names that exist before anything is created (a collision)."""
        self.cluster = cluster
        self.clock = clock
        self.keystone: dict[tuple[str, str], str] = {(ANY_DOMAIN, fold(name)): user_id(name) for name in existing_users}
        """The simulated Keystone: (domain, folded user name) to the user's id."""

    def user(self, domain: str, name: str) -> str | None:
        """The id of the user of that name in that domain (as Keystone compares names), or None."""
        return self.keystone.get((domain, fold(name))) or self.keystone.get((ANY_DOMAIN, fold(name)))

    def names(self) -> dict[str, str]:
        """Every user as folded name to id (for tests and timelines)."""
        return {name: user_id for (_, name), user_id in self.keystone.items()}

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
        wanted_filter = (user["spec"].get("import") or {}).get("filter") or {}
        wanted = wanted_filter.get("name", "")
        found = self.user(wanted_filter.get("domainRef", ""), wanted)
        if found is not None:
            if condition_is(user, "Available", "True") and (user.get("status") or {}).get("id"):
                return None
            note = f"User {key(user)}: Keystone user {wanted!r} exists; imported (Available=True)"
            status = {"id": found, "resource": {"name": wanted}}
            return self._status(user, note, status, "True", "Success", "OpenStack resource is available")
        if condition_is(user, "Available", "False", "Progressing"):
            return None
        note = f"User {key(user)}: no Keystone user {wanted!r}; waiting for it (Available=False)"
        return self._status(user, note, {}, "False", "Progressing", WAITING_FOR_IMPORT)

    def _manage(self, user: Obj) -> Reaction | None:
        resource = user["spec"].get("resource") or {}
        name = resource.get("name") or user["metadata"]["name"]
        domain = resource.get("domainRef") or ""
        password_ref = resource.get("passwordRef") or ""
        status = user.get("status") or {}
        held = self.user(domain, name)
        if held is not None and held != status.get("id"):
            return self._refuse_duplicate(user, name, domain)
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
        if held is None:
            note = f"User {key(user)}: created Keystone user {name!r} with the password of Secret {password_ref}"
        elif applied != password_ref:
            note = f"User {key(user)}: applied the password of Secret {password_ref} to Keystone user {name!r}"
        else:
            note = f"User {key(user)}: Keystone user {name!r} is available"
        new_status = {"id": user_id(name), "resource": {"name": name, "appliedPasswordRef": password_ref}}

        def apply() -> None:
            taken = self.user(domain, name)
            if taken is not None and taken != status.get("id"):
                # Keystone checks the name as it creates the user: another User of this round took it first,
                # so this reaction is stale; the next round refuses this User as Keystone does (409).
                raise Conflict(f"Keystone user {name!r} was created since this round looked")
            self._add_finalizer(user)
            self.keystone[(domain, fold(name))] = user_id(name)
            self._write_status(user, new_status, "True", "Success", "OpenStack resource is available")

        return Reaction(note, apply)

    def _refuse_duplicate(self, user: Obj, name: str, domain: str) -> Reaction | None:
        """Keystone's 409 for a second user of one name in a domain: terminal, latched until cleared."""
        message = (
            "invalid configuration creating resource: Expected HTTP response code [201] when accessing "
            "[POST /v3/users], but got 409 instead: Conflict occurred attempting to store user - "
            f"Duplicate entry found with name {name} at domain ID {domain}."
        )
        if condition_is(user, "Progressing", "False", TERMINAL) and _message(user, "Progressing") == message:
            return None

        def apply() -> None:
            self._add_finalizer(user)
            self._write_status(user, {}, "False", TERMINAL, message, progressing="False")

        return Reaction(f"User {key(user)}: Keystone refused a second user {name!r} in domain {domain!r} (409)", apply)

    def _delete(self, user: Obj) -> Reaction:
        resource = user["spec"].get("resource") or {}
        name = resource.get("name") or user["metadata"]["name"]
        domain = resource.get("domainRef") or ""
        created = (user.get("status") or {}).get("id")

        def apply() -> None:
            for held in ((domain, fold(name)), (ANY_DOMAIN, fold(name))):
                if created and self.keystone.get(held) == created:
                    del self.keystone[held]
            rest = [f for f in finalizers(user) if f != FINALIZER]
            self.cluster.patch(
                API_VERSION, KIND, user["metadata"]["namespace"], user["metadata"]["name"],
                {"metadata": {"finalizers": rest or None}}, field_manager=FIELD_MANAGER,
            )

        owned = bool(created) and created in (self.keystone.get((domain, fold(name))),
                                              self.keystone.get((ANY_DOMAIN, fold(name))))
        what = f"deleted Keystone user {name!r}" if owned else f"no Keystone user {name!r} of its own to delete"
        return Reaction(f"User {key(user)}: {what}; finalizer removed", apply)

    def _status(
        self, user: Obj, note: str, status: dict[str, Any], available: str, reason: str, message: str
    ) -> Reaction:
        return Reaction(note, lambda: self._write_status(user, status, available, reason, message))

    def _write_status(self, user: Obj, status: dict[str, Any], available: str, reason: str, message: str,
                      progressing: str | None = None) -> None:
        progressing = progressing or ("False" if available == "True" else "True")
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


def _message(obj: Obj, type_: str = "Available") -> str:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return str(cond.get("message", ""))
    return ""
