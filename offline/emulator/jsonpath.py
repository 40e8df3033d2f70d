"""The small JSONPath subset CRD printer columns use, evaluated as kubectl's columns expect.

A real API server renders ``additionalPrinterColumns`` with Kubernetes JSONPath. Columns are
simple paths in practice, so this evaluator knows fields (``.a.b``, ``['a.b']``, an escaped
``\\.``), indexes and slices-free wildcards (``[0]``, ``[*]``, ``.*``) and filters comparing
a relative path with a literal (``[?(@.type=='Ready')]``, ``[?(@.n>2)]``, ``[?(@.ready)]``).
Anything else is a ``JsonPathError`` when the path is compiled.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

_IDENT = re.compile(r"(?:[^.\[\]\\\s=!<>()@'\"]|\\.)+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt,
}


class JsonPathError(ValueError):
    """A path outside the supported subset, or malformed."""


@dataclass(frozen=True)
class _Field:
    name: str


@dataclass(frozen=True)
class _Index:
    index: int


@dataclass(frozen=True)
class _All:
    pass


@dataclass(frozen=True)
class _Filter:
    path: tuple[_Step, ...]
    op: str | None
    value: Any


_Step = _Field | _Index | _All | _Filter


@dataclass(frozen=True)
class JsonPath:
    """A compiled path; ``find`` returns every match in document order."""

    text: str
    steps: tuple[_Step, ...]

    def find(self, doc: Any) -> list[Any]:
        return list(_walk(doc, self.steps))

    def first(self, doc: Any) -> tuple[bool, Any]:
        """(True, value) for the first match, (False, None) when nothing matches."""
        for value in _walk(doc, self.steps):
            return True, value
        return False, None


@functools.lru_cache(maxsize=256)
def compile_path(text: str) -> JsonPath:
    """Compile ``.a.b``, ``{.a.b}`` or ``$.a.b``; JsonPathError when outside the subset."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1].strip()
    body = body.removeprefix("$")
    parser = _Parser(body, text)
    steps = parser.steps(relative=False)
    if parser.pos != len(body):
        raise parser.fail("unexpected text")
    return JsonPath(text, steps)


class _Parser:
    def __init__(self, body: str, text: str) -> None:
        self.body, self.text, self.pos = body, text, 0

    def fail(self, why: str) -> JsonPathError:
        return JsonPathError(f"unsupported JSONPath {self.text!r}: {why} at offset {self.pos}")

    def peek(self, n: int = 1) -> str:
        return self.body[self.pos:self.pos + n]

    def steps(self, *, relative: bool) -> tuple[_Step, ...]:
        """Steps until the end, or (in a filter) until an operator or the closing parenthesis."""
        found: list[_Step] = []
        while self.pos < len(self.body):
            char = self.peek()
            if char == ".":
                self.pos += 1
                if self.peek() == ".":
                    raise self.fail("recursive descent is not supported")
                if self.peek() == "*":
                    self.pos += 1
                    found.append(_All())
                    continue
                found.append(_Field(self.ident()))
            elif char == "[":
                found.append(self.bracket())
            elif relative:
                break
            else:
                raise self.fail(f"unexpected {char!r}")
        return tuple(found)

    def ident(self) -> str:
        match = _IDENT.match(self.body, self.pos)
        if match is None:
            raise self.fail("expected a field name")
        self.pos = match.end()
        return re.sub(r"\\(.)", r"\1", match.group())

    def bracket(self) -> _Step:
        self.pos += 1
        step: _Step
        if self.peek() == "*":
            self.pos += 1
            step = _All()
        elif self.peek() in ("'", '"'):
            step = _Field(self.string())
        elif self.peek(2) == "?(":
            self.pos += 2
            step = self.filter()
        else:
            match = re.compile(r"-?\d+").match(self.body, self.pos)
            if match is None:
                raise self.fail("expected an index, '*', a quoted name or a filter")
            self.pos = match.end()
            step = _Index(int(match.group()))
        self.expect("]")
        return step

    def filter(self) -> _Filter:
        self.skip_spaces()
        self.expect("@")
        path = self.steps(relative=True)
        self.skip_spaces()
        op = next((o for o in ("==", "!=", "<=", ">=", "<", ">") if self.body.startswith(o, self.pos)), None)
        value: Any = None
        if op is not None:
            self.pos += len(op)
            self.skip_spaces()
            value = self.literal()
            self.skip_spaces()
        self.expect(")")
        return _Filter(path, op, value)

    def literal(self) -> Any:
        if self.peek() in ("'", '"'):
            return self.string()
        for word, value in (("true", True), ("false", False), ("null", None)):
            if self.body.startswith(word, self.pos):
                self.pos += len(word)
                return value
        match = _NUMBER.match(self.body, self.pos)
        if match is None:
            raise self.fail("expected a literal")
        self.pos = match.end()
        text = match.group()
        return float(text) if "." in text else int(text)

    def string(self) -> str:
        quote = self.peek()
        end = self.body.find(quote, self.pos + 1)
        if end < 0:
            raise self.fail("unterminated string")
        value = self.body[self.pos + 1:end]
        self.pos = end + 1
        return value

    def skip_spaces(self) -> None:
        while self.peek() == " ":
            self.pos += 1

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.fail(f"expected {char!r}")
        self.pos += 1


def _walk(node: Any, steps: tuple[_Step, ...]) -> Iterator[Any]:
    if not steps:
        yield node
        return
    step, rest = steps[0], steps[1:]
    if isinstance(step, _Field):
        if isinstance(node, dict) and step.name in node:
            yield from _walk(node[step.name], rest)
    elif isinstance(step, _Index):
        if isinstance(node, list) and -len(node) <= step.index < len(node):
            yield from _walk(node[step.index], rest)
    elif isinstance(step, _All):
        for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else ():
            yield from _walk(child, rest)
    else:
        for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else ():
            if _keeps(step, child):
                yield from _walk(child, rest)


def _keeps(step: _Filter, item: Any) -> bool:
    """Whether a filter keeps an item: an existence test, or a comparison of like-typed values."""
    for value in _walk(item, step.path):
        if step.op is None:
            return value is not None and value is not False
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (value, step.value))
        if not numbers and type(value) is not type(step.value):
            return step.op == "!="
        try:
            return bool(_COMPARE[step.op](value, step.value))
        except TypeError:
            return False
    return False
