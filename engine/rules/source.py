"""Load rule files with ruamel.yaml round-trip, keeping the position of every element."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from engine.rules.errors import Position, RuleError, RuleErrors
from engine.rules.limits import MAX_RULE_FILE_BYTES, FileTooLarge, read_limited, refusal
from engine.rules.yaml_text import plain_yaml_problem, token_position


@dataclass(frozen=True)
class SourceFile:
    """A parsed rule file: its data, and a way back from any path in it to a position."""

    path: str
    data: Any
    text: str = ""

    def locate(self, path: Sequence[str | int]) -> Position:
        """The position of the deepest element of ``path`` that exists (its key, for mapping entries)."""
        node = self.data
        line, col = 0, 0
        if isinstance(node, (CommentedMap, CommentedSeq)):
            line, col = node.lc.line, node.lc.col
        for step in path:
            try:
                if isinstance(node, CommentedMap) and step in node:
                    line, col = node.lc.key(step)
                    node = node[step]
                elif isinstance(node, CommentedSeq) and isinstance(step, int) and 0 <= step < len(node):
                    line, col = node.lc.item(step)
                    node = node[step]
                else:
                    break
            except (KeyError, TypeError, AttributeError):
                break
        return Position(self.path, line + 1, col + 1)

    def locate_value(self, path: Sequence[str | int]) -> Position:
        """The position of the value at ``path`` (for expression errors inside it)."""
        if not path:
            return self.locate(path)
        parent = self.data
        for step in path[:-1]:
            try:
                parent = parent[step]
            except (KeyError, IndexError, TypeError):
                return self.locate(path)
        last = path[-1]
        try:
            if isinstance(parent, CommentedMap) and last in parent:
                line, col = parent.lc.value(last)
                return Position(self.path, line + 1, col + 1)
        except (KeyError, AttributeError):
            pass
        return self.locate(path)


    def locate_token(self, path: Sequence[str | int], offset: int | None) -> Position:
        """The position of character ``offset`` of the string value at ``path`` (its start when unknown)."""
        start = self.locate_value(path)
        if offset is None or not self.text:
            return start
        found = token_position(self.text, start.line - 1, start.col - 1, offset)
        return start if found is None else Position(self.path, found[0] + 1, found[1] + 1)


def load_source(path: Path, display: str | None = None) -> SourceFile:
    """Parse one YAML rule file; syntax errors, duplicate keys and a file over the size limit (not read) become
    RuleErrors with positions."""
    name = display or str(path)
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        text = read_limited(path, MAX_RULE_FILE_BYTES).decode("utf-8")
    except OSError as err:
        raise RuleErrors([RuleError(Position(name, 1, 1), f"cannot read the rule file: {err.strerror}")]) from None
    except FileTooLarge as err:
        raise RuleErrors([RuleError(Position(name, 1, 1), refusal("rule file", err))]) from None
    except UnicodeDecodeError:
        raise RuleErrors([RuleError(Position(name, 1, 1), "the rule file is not UTF-8 text")]) from None
    try:
        data = yaml.load(text)
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = (err.problem or err.context or "invalid YAML").strip()
        if "duplicate key" in problem:
            problem = f"duplicate key: {problem}"
        plain = plain_yaml_problem(problem, line, text)
        if plain is not None:
            problem, col = plain
        raise RuleErrors([RuleError(Position(name, line, col), problem)]) from None
    if not isinstance(data, CommentedMap):
        raise RuleErrors([RuleError(Position(name, 1, 1), "a rule file is a mapping at the top level")])
    return SourceFile(name, data, text)
