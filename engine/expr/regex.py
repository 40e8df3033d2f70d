"""Regular expressions for ``matches()``: RE2 syntax and linear-time matching, compiled once.

Rule expressions run on untrusted cluster data, so matching uses RE2 (the library Go and
Kubernetes CEL use): no backtracking, hence no pattern that a crafted value can make run for
minutes, and the same syntax a Go author knows. Python-only constructs (lookarounds,
backreferences, atomic groups, possessive quantifiers, ``\\Z``) are refused, not emulated.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

from engine.expr.errors import FunctionError

__all__ = ["check_pattern", "compile_pattern", "full_match"]

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the library would print the pattern to stderr


class PatternError(FunctionError):
    """A pattern RE2 refuses; ``detail`` quotes the offending fragment of the pattern."""

    def __init__(self, problem: str, detail: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.detail = detail


def _problem(exc: Exception) -> tuple[str, str]:
    raw = exc.args[0] if exc.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    problem, _, fragment = text.partition(": ")
    return problem or "invalid pattern", fragment


_HINT = "lookarounds, backreferences, atomic groups and possessive quantifiers are Python-only"


@lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> Any:
    """The compiled RE2 pattern (cached: a literal pattern is compiled once per process)."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        problem, fragment = _problem(exc)
        hint = f"; {_HINT}" if problem in ("invalid perl operator", "invalid escape sequence",
                                           "bad repetition operator") else ""
        raise PatternError(f"matches(): the pattern is not RE2 syntax ({problem}{hint})",
                           f"{problem}: {fragment}" if fragment else problem) from None


def full_match(text: str, pattern: str) -> bool:
    """Whether the whole of ``text`` matches ``pattern``; the error names the problem, never the text."""
    return compile_pattern(pattern).fullmatch(text) is not None


def check_pattern(pattern: Any) -> str | None:
    """For lint: why a literal pattern is refused (quoting the pattern's own fragment), or None."""
    if not isinstance(pattern, str):
        return None
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        return f"matches(): the pattern is not RE2 syntax: {exc.detail}" + (
            f" ({_HINT})" if _HINT in exc.problem else "")
    return None
