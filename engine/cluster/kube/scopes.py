"""Label scopes of the read cache: a label selector per label-selected informer, and what it may answer.

A scope is a label selector string: a label key (``example.com/owner``: every object carrying
it), a ``key=value`` (``sharding.c5c3.io/shard=member-1``: a shard member's orders), or several
requirements joined by commas (every one must hold). An informer of a scope holds exactly the objects
the selector matches, so:

- it must hear of a write or an event on an object the selector matches (``holds``);
- it answers a list alone when every object the list's selector matches is one it holds (``answers``);
- a get it misses is NotFound without asking the server only when the caller says the wanted object
  carries every key the scope requires (``trusted``; decision 19), and then only because the caller
  knows the values match too (its own labels).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping

from engine.cluster.selectors import Requirement, Selector, parse_labels

IMPLYING = frozenset({"=", "in", "exists"})
"""Operators under which every matching object carries the requirement's key."""


@functools.lru_cache(maxsize=256)
def _parsed(scope: str) -> Selector:
    return parse_labels(scope)


def holds(scope: str, labels: Mapping[str, str]) -> bool:
    """Whether an object with these labels is in the scope."""
    return _parsed(scope).matches(labels)


def answers(scope: str, selector: Selector) -> bool:
    """Whether every object ``selector`` matches is in the scope (a list by ``selector`` is complete there)."""
    return all(any(_implies(given, wanted) for given in selector.requirements)
               for wanted in _parsed(scope).requirements)


def _implies(given: Requirement, wanted: Requirement) -> bool:
    if given.key != wanted.key or given.operator not in IMPLYING:
        return False
    if wanted.operator == "exists":
        return True
    if wanted.operator in ("=", "in"):
        return given.operator in ("=", "in") and set(given.values) <= set(wanted.values)
    return False


def trusted(scope: str, carries: Collection[str]) -> bool:
    """Whether a get the scope's cache misses is NotFound: the caller says the object carries every key it requires."""
    return all(requirement.key in carries for requirement in _parsed(scope).requirements)
