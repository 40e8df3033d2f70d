"""The errors of the expression layer, and how evaluation failures are described without leaking values.

Evaluated data may hold secrets (generated passwords, credentials read from Secrets), and error
messages end up in conditions, events and logs. So a message names the expression and the kind
of failure, never a value: a quoted token from a library message survives only when it also
appears in the expression's own source text (a key or variable the author wrote) or is a type name.
"""

from __future__ import annotations

import re

__all__ = ["ExprError", "ExprSyntaxError", "FunctionError", "PassThrough", "safe_reason"]

_SNIPPET = 200


def _snippet(source: str, limit: int = _SNIPPET) -> str:
    """The expression as a message shows it: one line, bounded."""
    flat = " ".join(source.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class ExprSyntaxError(ValueError):
    """An expression or template that cannot be compiled: bad syntax, or an unknown function.

    ``offset`` is the 0-based character offset in the expression or template text (the offending
    token); ``line`` is the 1-based line in a template. Either may be None when no position is known.
    """

    def __init__(self, message: str, offset: int | None = None, *, line: int | None = None, source: str = "",
                 others: tuple[ExprSyntaxError, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.line = line
        self.source = source
        self.others = others
        """Further problems of the same text, found in the same look (every unknown function of a template)."""

    @property
    def problems(self) -> tuple[ExprSyntaxError, ...]:
        """This problem and the others, in the order they occur."""
        return (self, *self.others)

    def __str__(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.offset is not None:
            where.append(f"column {self.offset}")
        return f"{self.message} ({', '.join(where)})" if where else self.message


class ExprError(Exception):
    """Evaluating a compiled expression or template failed.

    Carries the expression source (or template path), where the rule wrote it (``origin``,
    file:line:col) and a short reason naming the types met; never the data values. A value computed
    when first read fails inside its reader: the error stays the failing expression's own, and each
    reader it passed through is added (``read_by``), so the message names the cause first, then who
    needed the value.
    """

    def __init__(self, source: str, reason: str, *, path: str | None = None, line: int | None = None,
                 origin: str | None = None) -> None:
        super().__init__(source, reason)
        self.source = source
        self.reason = reason
        self.path = path
        self.line = line
        self.origin = origin
        self.name: str | None = None
        """The named value or input whose expression failed (``values.assignment``), when it is one."""
        self.readers: list[tuple[str, str]] = []
        """(where, what) of each expression that read the failing value, innermost first."""

    def named(self, name: str) -> ExprError:
        """Say which named value or input was being computed: the failing one, or the last reader."""
        if not self.readers:
            self.name = self.name or name
        elif not self.readers[-1][1] or self.readers[-1][1].startswith(("'", '"')):
            self.readers[-1] = (self.readers[-1][0], name)
        return self

    def read_by(self, where: str | None, source: str | None) -> ExprError:
        """Add the expression, rule string or template file (``source`` None: named by ``where`` alone) that read
        the failing value; returns this error, to raise again."""
        self.readers.append((where or "", "" if source is None else repr(_snippet(source, _READER_SNIPPET))))
        return self

    def __str__(self) -> str:
        if self.path is not None:
            where = f"{self.path}:{self.line}" if self.line is not None else self.path
            return f"{where}: {self.reason}{self._readers()}"
        suffix = f" (line {self.line})" if self.line is not None else ""
        where = f"{self.origin}: " if self.origin else ""
        return f"{where}cannot evaluate {_snippet(self.source)!r}{suffix}: {self.reason}{self._readers()}"

    def _readers(self) -> str:
        """``; values.a, read by x.yaml:3:9 values.b, read by x.yaml:9:11 'b > 1'``: who needed the value."""
        if not self.readers:
            return ""
        shown = self.readers if len(self.readers) <= _READERS else [*self.readers[:1], *self.readers[-2:]]
        parts = [" ".join(["read by", *(text for text in (where, what) if text)]) for where, what in shown]
        if len(shown) < len(self.readers):
            parts.insert(1, f"({len(self.readers) - len(shown)} more)")
        return f"; {self.name or 'the value'}, {', '.join(parts)}"


_READER_SNIPPET = 80
_READERS = 4
"""Readers a message lists (the first and the last ones past that): an Event note holds 1024 bytes."""


LONE_SURROGATE = "a string holds a lone surrogate (half of a UTF-16 pair), which is not Unicode text"
"""What a value with a lone surrogate (``"\\ud800"`` in an order's JSON) is told as: it has no UTF-8 form, so
it can be neither hashed, encoded nor written, and an API server would store U+FFFD in its place."""


class PassThrough(Exception):
    """Raised by the caller's context while an expression runs (a lazy read failed): never wrapped."""


class FunctionError(ValueError):
    """Raised by a function implementation; its message must never contain argument values."""


_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_TYPE_WORDS = frozenset(
    {
        "int", "float", "str", "bool", "dict", "list", "tuple", "set", "NoneType", "bytes", "object",
        "string", "number", "boolean", "array", "null", "function", "method", "builtin_function_or_method",
        "Undefined", "StrictUndefined", "Markup", "LoopContext", "Namespace",
    }
)  # fmt: skip


def _is_type_word(token: str) -> bool:
    word = token.removesuffix(" object")
    return word in _TYPE_WORDS or word.endswith("Undefined")


def safe_reason(exc: BaseException, source: str) -> str:
    """A reason for ``exc`` fit for an error message: the library's text if it quotes no value, else its type."""
    if isinstance(exc, FunctionError):
        return str(exc)
    kind = type(exc).__name__
    text = str(exc).strip()
    if not text:
        return kind
    for match in _QUOTED.finditer(text):
        token = match.group(1) if match.group(1) is not None else match.group(2)
        if not (token in source or _is_type_word(token)):
            return kind
    if len(text) > _SNIPPET:
        return kind
    return f"{kind}: {text}"
