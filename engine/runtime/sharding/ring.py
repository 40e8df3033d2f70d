"""Rendezvous (highest random weight) hashing, and the names members go by.

Each (member, order) pair gets a score from a hash; an order belongs to the member with the
highest score. A member joining takes only the orders it now scores highest on (about 1/N of
them); a member leaving gives up only its own. No ring state is stored: any replica that knows
the live members computes the same owner.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

NAME_LIMIT = 63
"""A label value and a Lease name (as a DNS label) hold at most 63 characters."""


def order_key(cluster: str, kind: str, namespace: str, name: str) -> str:
    """What an order is hashed by: its cluster is part of it, so target clusters' orders spread too."""
    return "\0".join((cluster, kind, namespace, name))


def score(member: str, key: str) -> int:
    digest = hashlib.blake2b(f"{member}\0{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def owner(key: str, members: Iterable[str]) -> str | None:
    """The member an order belongs to (ties, which a 64-bit hash makes unlikely, go to the larger name)."""
    best: tuple[int, str] | None = None
    for member in members:
        candidate = (score(member, key), member)
        if best is None or candidate > best:
            best = candidate
    return best[1] if best is not None else None


class Owners:
    """Each order's owner for the member list a round places by, remembered from the round before: a round hashes
    only the orders it has not placed by the same members (at 20,000 orders a leader's round every retry period
    would otherwise hash each one once per member). One per cluster and kind, so a reload that changes who serves
    a kind recomputes that kind alone."""

    def __init__(self) -> None:
        self._members: tuple[str, ...] = ()
        self._before: dict[str, str] = {}
        self._now: dict[str, str] = {}

    def start(self, members: Iterable[str]) -> None:
        """Begin a round placing by ``members``: the last round's owners stay known when its members were these."""
        members = tuple(members)
        self._before = self._now if members == self._members else {}
        self._members = members
        self._now = {}

    def of(self, key: str) -> str | None:
        """The owner of the order ``key`` among the round's members; the round forgets the orders it did not ask."""
        found = self._before.get(key)
        if found is None:
            found = owner(key, self._members)
            if found is None:
                return None
        self._now[key] = found
        return found


def member_name(identity: str, incarnation: str) -> str:
    """A replica's member name, unique to this process: its identity as lowercase letters, digits and dashes,
    then ``-<incarnation>``; at most 63 characters (a Lease name and a label value). A restarted replica is
    always a new member, so a name once lapsed never works again (decision 0027)."""
    base = re.sub(r"[^a-z0-9-]+", "-", identity.lower()).strip("-") or "member"
    room = NAME_LIMIT - len(incarnation) - 1
    if len(base) > room:
        digest = hashlib.sha256(identity.encode()).hexdigest()[:8]
        base = f"{base[:room - 9].rstrip('-')}-{digest}"
    return f"{base}-{incarnation}"
