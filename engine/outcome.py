"""What a pass is asked (Request) and what it answers (Result).

This is the contract between runtime, reconcile and rules; it sits below every layer
so that compiled watches (rules) can build requests too.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import NamedTuple


class Request(NamedTuple):
    """One order to reconcile: a name, not an event (reconciling is level-based).

    A named tuple, not a frozen dataclass: queues, ledgers and sets hash and compare requests on every event and
    every pass, and a tuple's hash and equality run in C where a dataclass's generated ``__hash__`` and ``__eq__``
    are Python calls. The hash is the same (that of the tuple of the four fields), so is the order."""

    kind: str
    """The order kind's key, ``<apiVersion>/<Kind>`` (e.g. ``example.io/v1/Widget``)."""
    cluster: str
    namespace: str
    name: str

    def __str__(self) -> str:
        where = f"cluster {self.cluster!r} " if self.cluster else ""
        return f"{self.kind.rpartition('/')[2]} {where}{self.namespace}/{self.name}"


@dataclass(frozen=True)
class StepOutcome:
    """One step's run, for metrics: its sub_reconciler name, condition, duration and whether it errored."""

    metric: str
    condition: str
    seconds: float
    error: bool


@dataclass(frozen=True)
class EventNote:
    """What a refusal or a failed pass tells about the order as a Warning Event: the reason and
    message of the condition it set (safe to show), and the order's uid (``kubectl describe`` finds
    an object's Events by it)."""

    reason: str
    message: str
    uid: str = ""


@dataclass
class Result:
    """A pass's answer: come back after ``requeue_after`` (None: only on an event), or retry on ``error``;
    ``event``: a refusal or a failure to record on the order (None on the converge path)."""

    requeue_after: dt.timedelta | None = None
    error: Exception | None = None
    outcomes: list[StepOutcome] = field(default_factory=list)
    event: EventNote | None = None

    def merge(self, other: Result) -> Result:
        """Keep the shortest requeue, the first error and the first event; collect outcomes."""
        requeues = [r for r in (self.requeue_after, other.requeue_after) if r is not None]
        return Result(
            requeue_after=min(requeues) if requeues else None,
            error=self.error or other.error,
            outcomes=[*self.outcomes, *other.outcomes],
            event=self.event or other.event,
        )


class PassError(Exception):
    """A pass ended in an error the runtime retries with backoff. The text is safe to log."""


class TerminalError(PassError):
    """A pass error no retry can fix (the rule file is wrong); logged and counted, not retried."""
