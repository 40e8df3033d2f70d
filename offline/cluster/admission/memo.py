"""A bounded memo of CEL rule verdicts, shared by the rules of one CRD version.

Interpreting a rule with celpy costs about a millisecond; an emulated cluster admits every write of every
object through every rule, mostly with the same values at the paths a rule reads (the name, an immutable
reference, a default). A verdict depends on the rule and those values only (``celreads``), so it is kept
under that key and reused. The memo is bounded: it counts what its keys weigh and forgets the entries used
least recently once past its budget, and an entry heavier than a sixteenth of the budget is not kept at all
(that input is evaluated every time).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass

BUDGET_BYTES = 4 * 1024 * 1024
"""What one CRD version's memo may hold: its keys' strings, its failures' details, ENTRY_BYTES per entry."""

ENTRY_BYTES = 240
"""What an entry costs beyond its keys' strings: the key tuple, the ordered dict's slot and link."""

Key = tuple[int, str, str | None]
"""The rule's number in its CRD version, what it reads of ``self``, what it reads of ``oldSelf`` (None when
there is no old value; "" when the rule does not read it)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a rule said of one input: passed, or failed with the detail of its error."""

    passed: bool
    detail: str = ""
    evaluation_error: bool = False
    """The rule could not be evaluated (the detail is the evaluation error's text), rather than being false."""


PASSED = Verdict(passed=True)


class VerdictMemo:
    """Verdicts by rule and input, least recently used dropped first, within a budget of bytes."""

    def __init__(self, budget_bytes: int = BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self.heaviest_key = budget_bytes // 16
        self.hits = 0
        self.misses = 0
        self._weight = 0
        self._rules = 0
        self._entries: OrderedDict[Key, Verdict] = OrderedDict()
        self._lock = threading.Lock()

    def number(self) -> int:
        """A number for one more rule of the CRD version, its part of every key."""
        with self._lock:
            self._rules += 1
            return self._rules

    def get(self, key: Key) -> Verdict | None:
        with self._lock:
            verdict = self._entries.get(key)
            if verdict is None:
                self.misses += 1
                return None
            self.hits += 1
            self._entries.move_to_end(key)
            return verdict

    def put(self, key: Key, verdict: Verdict) -> None:
        weight = _weight(key, verdict)
        if weight > self.heaviest_key:
            return
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = verdict
            self._weight += weight
            while self._weight > self.budget_bytes:
                self._weight -= _weight(*self._entries.popitem(last=False))

    @property
    def weight(self) -> int:
        """What the entries held now count against the budget."""
        return self._weight

    def __len__(self) -> int:
        return len(self._entries)


def _weight(key: Key, verdict: Verdict) -> int:
    """The bytes an entry holds: its key's strings, a failure's detail (a pass is shared), and the rest."""
    strings = sys.getsizeof(key[1]) + (sys.getsizeof(key[2]) if key[2] else 0)
    return strings + (0 if verdict is PASSED else sys.getsizeof(verdict) + sys.getsizeof(verdict.detail)) + ENTRY_BYTES
