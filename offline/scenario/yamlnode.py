"""ruamel round-trip values with the position they were written at, and their plain-data form.

ruamel keeps positions on the containers only (a scalar's position is asked of its parent),
so a Node carries its own position down as the loader walks: every error can then name
``file:line:col`` without the loader juggling ruamel's line/column API.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from engine.clock import format_time
from offline.scenario.model import Pos, ScenarioError

__all__ = ["Node", "load_documents", "plain"]


class Node:
    """One value of a loaded document and where it starts."""

    __slots__ = ("pos", "value")

    def __init__(self, value: Any, pos: Pos) -> None:
        self.value = value
        self.pos = pos

    def error(self, message: str) -> ScenarioError:
        return ScenarioError(self.pos, message)

    @property
    def is_map(self) -> bool:
        return isinstance(self.value, dict)

    @property
    def is_seq(self) -> bool:
        return isinstance(self.value, list)

    def has(self, key: str) -> bool:
        return self.is_map and key in self.value

    def key_pos(self, key: str) -> Pos:
        return self._at(lambda lc: lc.key(key))

    def child(self, key: str) -> Node:
        """The value under ``key`` (the mapping must hold it)."""
        return Node(self.value[key], self._at(lambda lc: lc.value(key)))

    def items(self) -> Iterator[tuple[str, Node]]:
        for key in self.value:
            yield str(key), self.child(key)

    def elements(self) -> Iterator[Node]:
        for index, item in enumerate(self.value):
            yield Node(item, self._at(lambda lc, i=index: lc.item(i)))

    def plain(self) -> Any:
        return plain(self.value)

    def _at(self, locate: Any) -> Pos:
        lc = getattr(self.value, "lc", None)
        if lc is None:
            return self.pos
        try:
            line, col = locate(lc)
        except (KeyError, IndexError, TypeError, AttributeError):
            return self.pos
        return Pos(self.pos.file, line + 1, col + 1)


def plain(value: Any) -> Any:
    """JSON-compatible data: dicts, lists, str, int, float, bool, None (timestamps as RFC 3339)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        if moment.microsecond:
            return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
        return format_time(moment)
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def load_documents(path: Path, display: str) -> list[Node]:
    """Every document of a YAML file, round-trip loaded; a syntax error is a ScenarioError."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(Pos(display, 1, 1), f"cannot read the file: {exc.strerror or exc}") from None
    try:
        docs = list(YAML(typ="rt").load_all(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = Pos(display, mark.line + 1, mark.column + 1) if mark else Pos(display, 1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        raise ScenarioError(pos, f"invalid YAML: {problem}") from None
    except YAMLError as exc:
        raise ScenarioError(Pos(display, 1, 1), f"invalid YAML: {exc}") from None
    return [Node(doc, _start(doc, display)) for doc in docs]


def _start(doc: Any, display: str) -> Pos:
    lc = getattr(doc, "lc", None)
    if lc is None or lc.line is None:
        return Pos(display, 1, 1)
    return Pos(display, lc.line + 1, (lc.col or 0) + 1)
