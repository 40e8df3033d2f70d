"""Byte-exact reproductions of the Go standard-library formatting that rule outputs must match.

The objects the engine writes are compared against those of an operator written in Go, so quoting
(``strconv.Quote``) and URL escaping (``net/url``) follow Go's rules exactly rather than Python's
nearest equivalents. Durations (``time.ParseDuration``) are engine/durations.py's.
"""

from __future__ import annotations

import re
import unicodedata
from enum import Enum

__all__ = [
    "is_print",
    "path_escape",
    "query_escape",
    "quote",
    "quote_list",
    "userinfo_escape",
]

# --- strconv.Quote -------------------------------------------------------------------------------

_SHORT_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def is_print(ch: str) -> bool:
    """Go's ``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols and the ASCII space.

    Python's Unicode tables may be a version behind Go's; characters assigned in between differ.
    """
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def _quote_char(ch: str) -> str:
    if ch == '"':
        return '\\"'
    if ch == "\\":
        return "\\\\"
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        # A lone surrogate (only reachable through a JSON "\ud800" escape) decodes to U+FFFD in Go.
        return "\ufffd"
    if is_print(ch):
        return ch
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


_PLAIN = re.compile(r'[ !#-\[\]-~]*')
"""Printable ASCII but the quote and the backslash: characters ``strconv.Quote`` writes as they are."""


def quote(s: str) -> str:
    """Go's ``strconv.Quote`` (and ``fmt`` ``%q`` of a string)."""
    if _PLAIN.fullmatch(s):
        return '"' + s + '"'
    return '"' + "".join(_quote_char(ch) for ch in s) + '"'


def quote_list(items: list[str]) -> str:
    """Go's ``fmt`` ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(quote(item) for item in items) + "]"


# --- net/url escaping ----------------------------------------------------------------------------


class _Mode(Enum):
    PATH_SEGMENT = "path segment"
    USERINFO = "userinfo"
    QUERY = "query component"


_UNRESERVED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~")
_RESERVED = frozenset("$&+,/:;=?@")


def _should_escape(byte: int, mode: _Mode) -> bool:
    """Go's ``net/url.shouldEscape`` for the three modes the engine exposes."""
    ch = chr(byte)
    if ch in _UNRESERVED:
        return False
    if ch in _RESERVED:
        if mode is _Mode.PATH_SEGMENT:
            return ch in "/;,?"
        if mode is _Mode.USERINFO:
            return ch in "@/?:"
        return True
    return True


def _escape(s: str, mode: _Mode) -> str:
    out: list[str] = []
    for byte in s.encode("utf-8"):
        if byte == 0x20 and mode is _Mode.QUERY:
            out.append("+")
        elif _should_escape(byte, mode):
            out.append(f"%{byte:02X}")
        else:
            out.append(chr(byte))
    return "".join(out)


def query_escape(s: str) -> str:
    """Go's ``url.QueryEscape``: everything but ``A-Za-z0-9-_.~`` escaped, space as ``+``."""
    return _escape(s, _Mode.QUERY)


def path_escape(s: str) -> str:
    """Go's ``url.PathEscape``: a single path segment; ``/ ; , ?`` and non-ASCII are escaped."""
    return _escape(s, _Mode.PATH_SEGMENT)


def userinfo_escape(s: str) -> str:
    """How Go's ``url.UserPassword(...).String()`` escapes a user name or password: ``@ / ? :`` escaped."""
    return _escape(s, _Mode.USERINFO)
