"""Rule-file errors: every one names file, line and column (1-based), like a compiler."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Position:
    """Where an element of a rule file or template starts."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class RuleError:
    position: Position
    message: str

    def __str__(self) -> str:
        return f"{self.position}: {self.message}"


class RuleErrors(Exception):
    """One or more rule-file errors, reported together so a platform team fixes them in one go."""

    def __init__(self, errors: Iterable[RuleError]) -> None:
        self.errors = sorted(set(errors), key=lambda e: (e.position.file, e.position.line, e.position.col, e.message))
        super().__init__("\n".join(str(e) for e in self.errors))
