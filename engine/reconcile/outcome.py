"""What a pass is asked (Request) and what it answers (Result): the runtime's only contract with reconcile."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Request:
    """One order to reconcile: a name, not an event (reconciling is level-based)."""

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


@dataclass
class Result:
    """A pass's answer: come back after ``requeue_after`` (None: only on an event), or retry on ``error``."""

    requeue_after: dt.timedelta | None = None
    error: Exception | None = None
    outcomes: list[StepOutcome] = field(default_factory=list)

    def merge(self, other: Result) -> Result:
        """Keep the shortest requeue and the first error; collect outcomes."""
        requeues = [r for r in (self.requeue_after, other.requeue_after) if r is not None]
        return Result(
            requeue_after=min(requeues) if requeues else None,
            error=self.error or other.error,
            outcomes=[*self.outcomes, *other.outcomes],
        )


class PassError(Exception):
    """A pass ended in an error the runtime retries with backoff. The text is safe to log."""


class TerminalError(PassError):
    """A pass error no retry can fix (the rule file is wrong); logged and counted, not retried."""
