"""Which rule element wrote a condition: the gate, step and action a platform team edits.

A pass reports its verdicts only as conditions (reason and message). The rule elements that
could have written one are those naming its type and reason; when several share a reason, the
one whose message template matches the rendered message is it (a template's ``{{ }}`` parts
match anything, its literal text must appear, text inside ``{% %}`` blocks may be absent). What
still stays ambiguous is reported as every candidate, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from engine.rules.model import Action, CompiledKind, Gate, Outcome, Step

__all__ = ["Source", "written_by"]

_TAG = re.compile(r"({{.*?}}|{%-?\s*\w+.*?%}|{#.*?#})", re.DOTALL)
_OPENS = ("if", "for", "with", "macro", "call", "filter", "set")
_CLOSES = ("endif", "endfor", "endwith", "endmacro", "endcall", "endfilter", "endset")
_RULES_FAILED = "the rules failed: "


@dataclass(frozen=True)
class Source:
    """A rule element that writes a condition: ``gate <name>``, ``step <name>`` or ``teardown``, what in it
    (``wait``, ``refuse``, ``done``, ``when``, ...), and where the rule file says it."""

    element: str
    what: str
    at: str

    def as_dict(self) -> dict[str, str]:
        return {"by": self.element, "action": self.what, "at": self.at}


@dataclass(frozen=True)
class _Candidate:
    source: Source
    status: str
    reason: str | None
    """None: the reason is rendered from the pass (``{{ cause.label }}``): any declared reason."""
    message: str
    """A message template's source, or a literal prefix (``prefix=True``)."""
    prefix: bool = False


def written_by(kind: CompiledKind, condition: dict[str, Any]) -> list[Source]:
    """The rule elements that wrote ``condition`` (one when it can be told, several when not, none when no
    element of the kind writes that type, status and reason)."""
    ctype, status = str(condition.get("type") or ""), str(condition.get("status") or "")
    reason, message = str(condition.get("reason") or ""), str(condition.get("message") or "")
    by_reason = [c for c in _candidates(kind, ctype)
                 if c.status == status and (c.reason is None or c.reason == reason)]
    by_message = [c for c in by_reason if _matches(c, message)]
    chosen = by_message or by_reason
    if len(chosen) > 1:  # a fixed reason beats a rendered one that happens to fit
        fixed = [c for c in chosen if c.reason is not None]
        chosen = fixed or chosen
    seen: dict[Source, None] = {}
    for candidate in chosen:
        seen.setdefault(candidate.source, None)
    return list(seen)


def _matches(candidate: _Candidate, message: str) -> bool:
    if candidate.prefix:
        return message.startswith(candidate.message)
    return _pattern(candidate.message).fullmatch(" ".join(message.split())) is not None


def _pattern(source: str) -> re.Pattern[str]:
    """A template's source as a regular expression over its rendered text (whitespace folded)."""
    parts: list[str] = []
    depth = 0
    for index, piece in enumerate(_TAG.split(source)):
        if index % 2:  # a tag
            if piece.startswith("{%"):
                word = piece.strip("{%-+ \n").split(" ", 1)[0]
                depth += 1 if word in _OPENS else -1 if word in _CLOSES else 0
            parts.append(".*?" if piece.startswith("{{") else "")
            continue
        literal = r"\s*".join(re.escape(word) for word in piece.split())
        if piece[:1].isspace():
            literal = r"\s*" + literal
        if piece[-1:].isspace() and piece.strip():
            literal += r"\s*"
        parts.append(f"(?:{literal})?" if depth > 0 and literal else literal)
    return re.compile("".join(parts), re.DOTALL)


def _candidates(kind: CompiledKind, ctype: str) -> Iterator[_Candidate]:
    for gate in kind.gates:
        if gate.finalizer or ctype not in (gate.conditions or kind.conditions.types):
            continue
        yield from _gate(gate, ctype)
    for step in kind.steps:
        if step.condition == ctype:
            yield from _step(step)
    for action in kind.teardown.actions:
        if action.op == "hold" and action.hold is not None and action.condition in (ctype, ""):
            yield _outcome("teardown", "hold", action.hold)


def _gate(gate: Gate, ctype: str) -> Iterator[_Candidate]:
    own_reason, own_message = gate.texts(ctype)
    element = f"gate {gate.name}"
    rendered = gate.outcome is not None and gate.outcome.reason_text is not None  # any declared reason
    if gate.outcome is not None:
        message = own_message if own_message is not None else gate.outcome.message
        yield _Candidate(Source(element, "when", str(gate.outcome.origin)), "False",
                         own_reason or (None if rendered else gate.outcome.reason), message.source)
    if gate.error is not None:
        reason = gate.error.reason or ("Error" if rendered else gate.outcome.reason if gate.outcome else None)
        yield _Candidate(Source(element, "error (a failed read)", str(gate.origin)), "False", reason,
                         gate.error.message.source)
    if gate.when is not None:
        yield _Candidate(Source(element, "error (a rule failed)", str(gate.origin)), "False", gate.failed_reason,
                         _RULES_FAILED, prefix=True)


def _step(step: Step) -> Iterator[_Candidate]:
    element = f"step {step.name}"
    for what, outcome in (("skipped", step.skipped), ("when (otherwise)", step.otherwise), ("done", step.done)):
        if outcome is not None:
            yield _outcome(element, what, outcome, "True" if what == "done" else None)
    for action in step.actions:
        yield from _action(element, step, action)
    yield _Candidate(Source(element, "error (a failed call)", str(step.origin)), "False",
                     step.error.reason or "Error", step.error.message.source)
    yield _Candidate(Source(element, "error (a rule failed)", str(step.origin)), "False",
                     step.error.reason or "Error", _RULES_FAILED, prefix=True)


def _action(element: str, step: Step, action: Action) -> Iterator[_Candidate]:
    if action.outcome is not None:
        yield _outcome(element, action.op, action.outcome)
    for outcome in action.otherwise:
        yield _outcome(element, f"{action.op} (otherwise)", outcome)
    if action.foreign is not None:
        yield _outcome(element, f"{action.op} (a foreign object)", action.foreign)
    if action.error is not None and action.error.write_condition:
        yield _Candidate(Source(element, f"{action.op} (a failed call)", str(action.origin)), "False",
                         action.error.reason or step.error.reason or "Error", action.error.message.source)


def _outcome(element: str, what: str, outcome: Outcome, status: str | None = None) -> _Candidate:
    shown = status or ("True" if outcome.status else "False")
    reason = None if outcome.reason_text is not None else outcome.reason
    return _Candidate(Source(element, what, str(outcome.origin)), shown, reason, outcome.message.source)
