"""The condition marker: the only way a pass changes the order's conditions.

Conditions are upserted by type; lastTransitionTime moves only when the status flips; every
condition carries the order's generation; messages are cut to the API's limit on a rune
boundary. The aggregate (Ready) is derived, never written by a rule.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.api import Obj
from engine.rules.model import Conditions


def truncate(message: str, limit: int, suffix: str) -> str:
    """Cut ``message`` to at most ``limit`` UTF-8 bytes, on a character boundary, ending in ``suffix``."""
    data = message.encode("utf-8")
    if len(data) <= limit:
        return message
    room = max(limit - len(suffix.encode("utf-8")), 0)
    return data[:room].decode("utf-8", errors="ignore") + suffix


class ConditionMarker:
    """Collects the conditions a pass writes, starting from the ones the order carries."""

    def __init__(self, spec: Conditions, existing: list[Obj], generation: int, now: str) -> None:
        self.spec = spec
        self.generation = generation
        self.now = now
        self.existing = {c.get("type"): c for c in existing if isinstance(c, dict)}
        self.written: dict[str, Obj] = {}
        self.order_of_others = [c.get("type") for c in existing if isinstance(c, dict)]

    def set(self, condition_type: str, status: bool, reason: str, message: str) -> None:
        previous = self.written.get(condition_type) or self.existing.get(condition_type)
        status_text = "True" if status else "False"
        transition = self.now
        if previous is not None and previous.get("status") == status_text and previous.get("lastTransitionTime"):
            transition = previous["lastTransitionTime"]
        self.written[condition_type] = {
            "type": condition_type,
            "status": status_text,
            "observedGeneration": self.generation,
            "lastTransitionTime": transition,
            "reason": reason,
            "message": truncate(message, self.spec.max_message_bytes, self.spec.truncate_suffix),
        }

    def current(self, condition_type: str) -> Obj | None:
        return self.written.get(condition_type) or self.existing.get(condition_type)

    def snapshot(self) -> dict[str, Any]:
        """Type to status text, for expressions (``conditions.DeliveryReady == 'True'``)."""
        return {t: c.get("status") for t in self.spec.types if (c := self.current(t)) is not None}

    def finalize(self) -> list[Obj]:
        """The full list: sub-conditions in declared order, then the aggregate, then conditions of others."""
        subs = [self.current(t) for t in self.spec.types]
        all_true = all(c is not None and c.get("status") == "True" for c in subs)
        if all_true:
            self.set(self.spec.ready_type, True, self.spec.true_reason, self.spec.true_message)
        else:
            self.set(self.spec.ready_type, False, self.spec.false_reason, self.spec.false_message)
        ours = [*self.spec.types, self.spec.ready_type]
        result = [c for t in ours if (c := self.current(t)) is not None]
        result.extend(self.existing[t] for t in self.order_of_others if t not in ours and t in self.existing)
        return result
