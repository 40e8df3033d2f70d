"""A rendered child template read without a YAML parser, when it is the plain subset templates write.

A child template renders block YAML whose values are JSON (``name: {{ x | tojson }}``) or plain words. PyYAML
takes ~3 ms for such a 20-line document, more than the rest of a converged pass, and a cache of parsed texts helps
only while every order's texts fit in it (decision 0029). This reads that subset line by line and gives up on
anything else: ``parse`` raises ``NotPlain`` and the caller parses with PyYAML, which stays the authority; what is
read here is what PyYAML's safe loader reads from the same text (a test compares both). The subset: printable
ASCII; block mappings of plain keys (not a YAML 1.1 boolean or null word); block sequences; values that are a JSON
string, object or array (no float, no ``\\u`` escape), an integer, a plain word, or a YAML 1.1 boolean or null;
whole-line comments and blank lines. Nothing else (no ``---``, block scalars, anchors, tags, flow values that are
not JSON, comments after a value, tabs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["NotPlain", "Skeleton", "parse", "read_value"]


class NotPlain(Exception):
    """The text leaves the subset read here: parse it with PyYAML."""


_UNPRINTABLE = re.compile(r"[^\n\x20-\x7e]")
"""Anything but printable ASCII and newlines (YAML refuses some, reads others as line breaks; tabs too)."""
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*")
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_BOOLS = {word: value for words, value in (("yes Yes YES true True TRUE on On ON", True),
                                           ("no No NO false False FALSE off Off OFF", False))
          for word in words.split()}
_NULLS = frozenset({"null", "Null", "NULL", "~"})
_SPECIAL_WORDS = frozenset(_BOOLS) | _NULLS | {"y", "Y", "n", "N"}
"""Words a YAML 1.1 resolver may read as something other than a string (y and n included for safety)."""


def parse(text: str) -> Any:
    """The object ``text`` holds; NotPlain when it is not in the plain subset."""
    if _UNPRINTABLE.search(text) is not None:
        raise NotPlain
    lines: list[tuple[int, str]] = []
    for raw in text.split("\n"):
        content = raw.rstrip(" ")
        stripped = content.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        lines.append((len(content) - len(stripped), stripped))
    if not lines or lines[0][0] != 0:
        raise NotPlain
    reader = _Reader(lines)
    value = reader.block(0)
    if reader.at != len(lines):
        raise NotPlain
    return value


class _Reader:
    def __init__(self, lines: list[tuple[int, str]]) -> None:
        self.lines = lines
        self.at = 0

    def block(self, indent: int) -> Any:
        """The mapping or sequence whose lines start at exactly ``indent``."""
        if self.lines[self.at][1].startswith("- ") or self.lines[self.at][1] == "-":
            return self.sequence(indent)
        return self.mapping(indent, self.lines[self.at][1])

    def mapping(self, indent: int, first: str) -> dict[str, Any]:
        """A block mapping at ``indent``; ``first`` is its first line's text (after a ``- `` when in a list).
        The common line (``key: "text"``) is read inline: this runs for most lines of every rendered child."""
        out: dict[str, Any] = {}
        lines = self.lines
        count = len(lines)
        text = first
        while True:
            key, colon, rest = text.partition(":")
            if not colon or key in out or (key not in _GOOD_KEYS and not _good_key(key)):
                raise NotPlain
            self.at += 1
            if rest:
                if rest[0] != " ":
                    raise NotPlain
                rest = rest.lstrip(" ")
                if rest[0] == '"' and rest[-1] == '"' and rest.count('"') == 2 and "\\" not in rest:
                    out[key] = rest[1:-1]  # a JSON string without escapes (most values): itself
                else:
                    out[key] = _scalar(rest)
            else:
                out[key] = self.value_after_key(indent, rest)
            if self.at == count:
                return out
            next_indent, text = lines[self.at]
            if next_indent < indent:
                return out
            if next_indent > indent or text[0] == "-":
                raise NotPlain

    def value_after_key(self, indent: int, rest: str) -> Any:
        if rest:
            return _scalar(rest)
        if self.at == len(self.lines):
            return None
        next_indent, text = self.lines[self.at]
        if next_indent > indent:
            return self.block(next_indent)
        if next_indent == indent and (text.startswith("- ") or text == "-"):
            return self.sequence(indent)
        return None

    def sequence(self, indent: int) -> list[Any]:
        out: list[Any] = []
        while True:
            text = self.lines[self.at][1]
            if not text.startswith("- "):
                raise NotPlain
            item = text[2:].lstrip(" ")
            item_indent = indent + (len(text) - len(item))
            if item.startswith(("- ", "#")) or item == "-":
                raise NotPlain
            if item[:1] in ('"', "{", "[") or _is_scalar_word(item):
                self.at += 1
                out.append(_scalar(item))
            else:
                out.append(self.mapping(item_indent, item))
            if self.at == len(self.lines):
                return out
            next_indent, text = self.lines[self.at]
            if next_indent < indent:
                return out
            if next_indent > indent or not text.startswith("- "):
                if next_indent == indent:  # a key after a sequence at its key's indentation: the mapping goes on
                    return out
                raise NotPlain


_GOOD_KEYS: set[str] = set()
"""Keys found plain already (a template's keys repeat in every render); bounded."""


def _good_key(key: str) -> bool:
    """A plain key YAML reads as that string (and remembered as one)."""
    if _KEY.fullmatch(key) is None or key in _SPECIAL_WORDS:
        return False
    if len(_GOOD_KEYS) < 4096:
        _GOOD_KEYS.add(key)
    return True


def _is_scalar_word(text: str) -> bool:
    """A sequence item that is one plain value (not ``key: ...``)."""
    return _INT.fullmatch(text) is not None or (_WORD.fullmatch(text) is not None) or text in _NULLS


def _scalar(text: str) -> Any:
    if text[0] in ('"', "{", "["):
        if "\\u" in text:  # a surrogate pair is one character to JSON, two to PyYAML
            raise NotPlain
        try:
            value = _JSON.decode(text)
        except ValueError:
            raise NotPlain from None
        return value
    if _INT.fullmatch(text):
        return int(text)
    if text in _BOOLS:
        return _BOOLS[text]
    if text in _NULLS:
        return None
    if _WORD.fullmatch(text) and text not in _SPECIAL_WORDS:
        return text
    raise NotPlain


def _no_float(text: str) -> Any:
    """A JSON float (or NaN, Infinity): YAML 1.1 reads some of their spellings as strings; leave it to PyYAML."""
    raise NotPlain


_JSON = json.JSONDecoder(parse_float=_no_float, parse_constant=_no_float)


class _Hole:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


_HOLE_LINE = r"(?m)^ *(?:- +)?(?:[A-Za-z_][A-Za-z0-9_./-]*: +)?{token} *$"
"""The only lines a hole may sit on: a whole value after ``key: ``, ``- `` or ``- key: ``."""


class Skeleton:
    """A template's text with holes where its outputs go, read once, so a child is rendered straight to
    its object. When every hole is a whole value on its own line (``key: {{ x | tojson }}``,
    ``- {{ x | tojson }}``) and the rest is in the plain subset, the object a render's text reads as is this
    one with each hole's text read as ``parse`` reads a value there (``read_value``), which ``build`` writes:
    a function generated from the skeleton's literal structure, one dict or list display per node."""

    __slots__ = ("build", "holes")

    def __init__(self, build: Callable[[list[Any]], Any], holes: int) -> None:
        self.build = build
        """The object for the holes' values, in order (new each call: the caller owns it)."""
        self.holes = holes

    @classmethod
    def of(cls, pieces: list[str | None]) -> Skeleton | None:
        """The skeleton of a text made of ``pieces`` (literal text, or None for a hole), or None when a hole is
        not a whole value on its own line or the text is not in the plain subset."""
        stem = "hole"
        while any(piece is not None and stem in piece for piece in pieces):
            stem += "x"
        tokens: list[str] = []
        written: list[str] = []
        for piece in pieces:
            if piece is None:
                tokens.append(f"{stem}{len(tokens)}z")
                written.append(tokens[-1])
            else:
                written.append(piece)
        text = "".join(written)
        if any(len(re.findall(_HOLE_LINE.format(token=token), text)) != 1 for token in tokens):
            return None
        try:
            tree = parse(text)
            found: list[int] = []
            source = _display(tree, {token: index for index, token in enumerate(tokens)}, found)
            if sorted(found) != list(range(len(tokens))):
                return None
            build = eval(compile(f"lambda values: {source}", "<skeleton>", "eval"), {})
        except (NotPlain, SyntaxError, RecursionError, MemoryError):
            return None
        return cls(build, len(tokens))


def _display(tree: Any, tokens: dict[str, int], found: list[int]) -> str:
    """Python source building ``tree`` anew, each hole's token read from ``values``: literals are the
    ``repr`` of parsed strings, integers, booleans and None (the only scalars ``parse`` answers)."""
    if type(tree) is dict:
        if any(key in tokens for key in tree):
            raise NotPlain  # a hole as a key
        return "{" + "".join(f"{key!r}: {_display(value, tokens, found)}, " for key, value in tree.items()) + "}"
    if type(tree) is list:
        return "[" + "".join(f"{_display(value, tokens, found)}, " for value in tree) + "]"
    if type(tree) is str and tree in tokens:
        found.append(tokens[tree])
        return f"values[{tokens[tree]}]"
    if type(tree) in (str, int, bool, type(None)):
        return repr(tree)
    raise NotPlain


def read_value(text: str) -> Any:
    """A hole's text read as ``parse`` reads a whole value after ``key: `` or ``- `` (NotPlain where it might
    read it otherwise: empty, more than one line, anything but printable ASCII, or not one scalar)."""
    if not text or not (text.isascii() and text.isprintable()):
        raise NotPlain
    if text[0] == '"' and text[-1] == '"' and text.count('"') == 2 and "\\" not in text:
        return text[1:-1]  # a JSON string without escapes (most values), as ``mapping`` reads it
    return _scalar(text)
