"""The compare-before-write check (decision 3): a child already holding every field the rule writes is not
written. Its fast path for string fields answers what the general comparison answers, for every JSON type."""

from __future__ import annotations

import itertools
from typing import Any

from engine.reconcile.actions import contains


def general(live: Any, want: Any) -> bool:
    """The comparison as written before the fast path (maps by key, lists element-wise, booleans by identity)."""
    if isinstance(want, dict):
        return isinstance(live, dict) and all(k in live and general(live[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(live, list) and len(live) == len(want) and all(map(general, live, want))
    if isinstance(want, bool) or isinstance(live, bool):
        return live is want
    return bool(live == want)


SCALARS: list[Any] = ["", "a", "1", "true", 1, 0, 1.0, 0.0, True, False, None]
VALUES: list[Any] = [*SCALARS, [], ["a"], [1, "a"], [True], {}, {"k": "a"}, {"k": 1}, {"k": True}, {"k": None},
                     {"k": ["a"]}, {"k": {"k": "a"}}, {"k": "a", "j": 1}]


def test_the_same_answer_as_the_general_comparison() -> None:
    """Every pair of JSON values, whole and under a key (where the string fast path answers)."""
    for live, want in itertools.product(VALUES, repeat=2):
        assert contains(live, want) == general(live, want), (live, want)
        assert contains({"k": live, "x": "y"}, {"k": want}) == general({"k": live}, {"k": want}), (live, want)
        assert contains({"k": live}, {"x": want}) is False


def test_a_string_field_holds_only_that_string() -> None:
    assert contains({"a": "x", "b": {"c": "y"}}, {"b": {"c": "y"}})
    for other in ("X", 1, True, None, ["x"], {"x": "x"}):
        assert not contains({"a": other}, {"a": "x"}), other
