"""Byte-exact reproductions of the Go standard-library formatting that rule outputs must match.

The objects the engine writes are compared against those of an operator written in Go, so quoting
(``strconv.Quote``), URL escaping (``net/url``) and durations (``time.ParseDuration`` and
``Duration.String``) follow Go's rules exactly rather than Python's nearest equivalents.
"""

from __future__ import annotations

import unicodedata
from enum import Enum

from engine.expr.errors import FunctionError

__all__ = [
    "format_duration_ns",
    "is_print",
    "parse_duration_ns",
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


def quote(s: str) -> str:
    """Go's ``strconv.Quote`` (and ``fmt`` ``%q`` of a string)."""
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


# --- time.ParseDuration / Duration.String --------------------------------------------------------

_NS = 1
_US = 1000 * _NS
_MS = 1000 * _US
_SECOND = 1000 * _MS
_MINUTE = 60 * _SECOND
_HOUR = 60 * _MINUTE

_UNITS = {
    "ns": _NS,
    "us": _US,
    "\u00b5s": _US,  # MICRO SIGN
    "\u03bcs": _US,  # GREEK SMALL LETTER MU
    "ms": _MS,
    "s": _SECOND,
    "m": _MINUTE,
    "h": _HOUR,
}
_MAX = 1 << 63
_DIGITS = "0123456789"


def _leading_int(s: str) -> tuple[int, str]:
    i = 0
    value = 0
    while i < len(s) and s[i] in _DIGITS:
        if value > _MAX // 10:
            raise FunctionError("invalid duration: overflow")
        value = value * 10 + int(s[i])
        if value > _MAX:
            raise FunctionError("invalid duration: overflow")
        i += 1
    return value, s[i:]


def _leading_fraction(s: str) -> tuple[int, float, str]:
    i = 0
    value = 0
    scale = 1.0
    overflow = False
    while i < len(s) and s[i] in _DIGITS:
        if not overflow:
            nxt = value * 10 + int(s[i])
            if value > (_MAX - 1) // 10 or nxt > _MAX:
                overflow = True  # Go ignores the digits it can no longer hold
            else:
                value = nxt
                scale *= 10
        i += 1
    return value, scale, s[i:]


def parse_duration_ns(text: str) -> int:
    """Go's ``time.ParseDuration``, in integer nanoseconds; raises FunctionError on invalid input."""
    s = text
    negative = False
    if s and s[0] in "+-":
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise FunctionError("invalid duration: empty")
    total = 0
    while s:
        if not (s[0] == "." or s[0] in _DIGITS):
            raise FunctionError("invalid duration: expected a number")
        before = len(s)
        whole, s = _leading_int(s)
        has_whole = len(s) != before
        frac, scale, has_frac = 0, 1.0, False
        if s and s[0] == ".":
            s = s[1:]
            before = len(s)
            frac, scale, s = _leading_fraction(s)
            has_frac = len(s) != before
        if not has_whole and not has_frac:
            raise FunctionError("invalid duration: a number has no digits")
        i = 0
        while i < len(s) and not (s[i] == "." or s[i] in _DIGITS):
            i += 1
        if i == 0:
            raise FunctionError("invalid duration: missing unit")
        unit_text, s = s[:i], s[i:]
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise FunctionError("invalid duration: unknown unit (use h, m, s, ms, us or ns)")
        if whole > _MAX // unit:
            raise FunctionError("invalid duration: overflow")
        value = whole * unit
        if frac > 0:
            value += int(float(frac) * (float(unit) / scale))
            if value > _MAX:
                raise FunctionError("invalid duration: overflow")
        total += value
        if total > _MAX:
            raise FunctionError("invalid duration: overflow")
    if negative:
        return -total
    if total > _MAX - 1:
        raise FunctionError("invalid duration: overflow")
    return total


def _frac(value: int, precision: int) -> tuple[str, int]:
    """Go's ``fmtFrac``: the fraction of value/10**precision without trailing zeros, and the quotient."""
    digits: list[str] = []
    printed = False
    for _ in range(precision):
        digit = value % 10
        printed = printed or digit != 0
        if printed:
            digits.append(str(digit))
        value //= 10
    text = "." + "".join(reversed(digits)) if printed else ""
    return text, value


def format_duration_ns(ns: int) -> str:
    """Go's ``time.Duration.String``: ``1h0m0s``, ``1m30s``, ``1.5s``, ``10ms``, ``0s``."""
    negative = ns < 0
    u = -ns if negative else ns
    if u < _SECOND:
        if u == 0:
            return "0s"
        if u < _US:
            body = f"{u}ns"
        elif u < _MS:
            frac, whole = _frac(u, 3)
            body = f"{whole}{frac}\u00b5s"
        else:
            frac, whole = _frac(u, 6)
            body = f"{whole}{frac}ms"
    else:
        frac, seconds = _frac(u, 9)
        body = f"{seconds % 60}{frac}s"
        minutes = seconds // 60
        if minutes > 0:
            body = f"{minutes % 60}m{body}"
            hours = minutes // 60
            if hours > 0:
                body = f"{hours}h{body}"
    return f"-{body}" if negative else body
