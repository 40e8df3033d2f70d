"""YAML text helpers for rule-file errors: a character's place in a scalar, and plain words for
the YAML library's indentation messages (which name parser states, not the line's mistake)."""

from __future__ import annotations

__all__ = ["plain_yaml_problem", "token_position"]

_ESCAPE_LENGTHS = {"x": 4, "u": 6, "U": 10}


def _quoted(line: str, col: int, offset: int) -> int | None:
    """The column of the ``offset``-th character of the quoted scalar starting at ``line[col]``."""
    quote = line[col]
    i, seen = col + 1, 0
    while i < len(line):
        if seen == offset:
            return i
        ch = line[i]
        if quote == "'" and ch == "'" and line[i + 1 : i + 2] == "'":
            i += 2
        elif quote == '"' and ch == "\\":
            i += _ESCAPE_LENGTHS.get(line[i + 1 : i + 2], 2)
        elif ch == quote:
            return None
        else:
            i += 1
        seen += 1
    return None


def _block(lines: list[str], first: int, offset: int) -> tuple[int, int] | None:
    """(line, column), 0-based, of the ``offset``-th character of a block scalar whose text starts on ``first``."""
    indent: int | None = None
    remaining = offset
    for number in range(first, len(lines)):
        text = lines[number]
        if not text.strip():
            remaining -= 1
            continue
        if indent is None:
            indent = len(text) - len(text.lstrip(" "))
        if len(text) - len(text.lstrip(" ")) < indent:
            return None
        content = len(text) - indent
        if remaining <= content:
            return number, indent + remaining
        remaining -= content + 1
    return None


def token_position(text: str, line: int, col: int, offset: int) -> tuple[int, int] | None:
    """The 0-based (line, column) of character ``offset`` of the scalar whose value starts at (line, col).

    None when it cannot be told (a plain scalar folded over lines): the caller keeps the value's start.
    """
    lines = text.splitlines()
    if not 0 <= line < len(lines) or col >= len(lines[line]) or offset < 0:
        return None
    source = lines[line]
    head = source[col]
    if head in "\"'":
        found = _quoted(source, col, offset)
        return None if found is None else (line, found)
    if head in "|>":
        return _block(lines, line + 1, offset)
    if col + offset < len(source.rstrip()):
        return line, col + offset
    return None


def _indent(text: str, line: int) -> int:
    """The 1-based column of the first non-blank character of 1-based ``line`` (1 when unknown)."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return 1
    source = lines[line - 1]
    return len(source) - len(source.lstrip(" \t")) + 1


def plain_yaml_problem(problem: str, line: int, text: str) -> tuple[str, int] | None:
    """An indentation or tab mistake said plainly, naming the line, with the column to show; else None."""
    if "'\\t'" in problem:
        return f"line {line} is indented with a tab: YAML indents with spaces only", _indent(text, line)
    if problem.startswith("mapping values are not allowed"):
        return (f"line {line} is indented deeper than its siblings (or a value holds ': ' unquoted: quote it)",
                _indent(text, line))
    if problem.startswith("expected <block end>"):
        return (f"line {line} is indented differently from the keys or list items above it: align it with its "
                "siblings", _indent(text, line))
    if "did not find expected" in problem or "could not find expected ':'" in problem:
        return f"line {line}: an indentation mistake or a missing ':' ({problem})", _indent(text, line)
    return None
