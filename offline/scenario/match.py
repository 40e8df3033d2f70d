"""`present` matching: a partial object against the live one, Chainsaw-style.

Mappings match by key (the live side may have more), lists element by element with the
same length, scalars by equality (a boolean never equals a number); an expected null
matches a missing field; a key in parentheses is a JMESPath expression evaluated on the
node it sits in, and its value is matched against the result.

Besides the verdict, matching yields the live object *projected* onto the expected shape,
so a failure can print a short diff of only the fields the scenario wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.expr.errors import ExprError, ExprSyntaxError
from engine.expr.jmes import compile_query

__all__ = ["MISSING", "Mismatch", "match"]


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()
"""Stands for a field the live object lacks, in projections."""


@dataclass(frozen=True)
class Mismatch:
    path: str
    expected: Any
    live: Any
    note: str = ""


def is_expression(key: str) -> bool:
    return len(key) >= 2 and key.startswith("(") and key.endswith(")")


def evaluate(expression: str, node: Any) -> Any:
    """A ``(...)`` key's value on ``node``, with the engine's function library."""
    query = compile_query(expression[1:-1])
    return query.evaluate(node if isinstance(node, dict) else {"@": node})


def match(expected: Any, live: Any, path: str = "") -> tuple[list[Mismatch], Any]:
    """The mismatches of ``live`` against ``expected``, and ``live`` projected onto ``expected``."""
    if isinstance(expected, dict):
        if not isinstance(live, dict):
            return [Mismatch(path or "(object)", expected, live, "expected a mapping")], live
        mismatches: list[Mismatch] = []
        projected: dict[str, Any] = {}
        for key, want in expected.items():
            sub = f"{path}.{key}" if path else key
            if is_expression(key):
                try:
                    got = evaluate(key, live)
                except (ExprError, ExprSyntaxError) as exc:
                    mismatches.append(Mismatch(sub, want, MISSING, f"the expression fails: {exc}"))
                    projected[key] = MISSING
                    continue
                inner, shown = match(want, got, sub)
                mismatches.extend(inner)
                projected[key] = shown
                continue
            if key not in live or live[key] is None:
                if want is None:
                    continue
                mismatches.append(Mismatch(sub, want, MISSING, "missing"))
                projected[key] = MISSING
                continue
            if want is None:
                mismatches.append(Mismatch(sub, None, live[key], "expected absent"))
                projected[key] = live[key]
                continue
            inner, shown = match(want, live[key], sub)
            mismatches.extend(inner)
            projected[key] = shown
        return mismatches, projected
    if isinstance(expected, list):
        if not isinstance(live, list):
            return [Mismatch(path, expected, live, "expected a list")], live
        if len(live) != len(expected):
            note = f"expected {len(expected)} item(s), live has {len(live)}"
            return [Mismatch(path, expected, live, note)], live
        mismatches = []
        items = []
        for index, (want, got) in enumerate(zip(expected, live, strict=True)):
            inner, shown = match(want, got, f"{path}[{index}]")
            mismatches.extend(inner)
            items.append(shown)
        return mismatches, items
    if scalar_equal(expected, live):
        return [], live
    return [Mismatch(path, expected, live)], live


def scalar_equal(expected: Any, live: Any) -> bool:
    if isinstance(expected, bool) or isinstance(live, bool):
        return isinstance(expected, bool) and isinstance(live, bool) and expected == live
    if isinstance(expected, (int, float)) and isinstance(live, (int, float)):
        return expected == live
    return type(expected) is type(live) and bool(expected == live)
