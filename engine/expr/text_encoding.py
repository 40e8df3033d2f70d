"""Text and encoding functions of the shared function registry: base64, URL escapes, Go quoting, YAML and JSON,
name folding and checks, byte truncation, host:port.

Registered into ``registry`` on import (``functions.py`` imports this module); the Go-compatible escapes and quoting
live in ``golang``. Errors never quote an argument, since arguments may be secrets.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import unicodedata
from typing import Any

import yaml

from engine.expr import golang
from engine.expr.arithmetic import to_int
from engine.expr.errors import FunctionError
from engine.expr.registry import register as _register

_STR = ("string",)
_NUM = ("number",)
_ANY: tuple[str, ...] = ()


@_register("b64enc", _STR, returns="string")
def b64enc(s: str) -> str:
    """Standard padded base64 of the UTF-8 bytes (as Secret data is stored)."""
    return base64.b64encode(s.encode("utf-8")).decode("ascii")


@_register("b64dec", _STR, returns="string")
def b64dec(s: str) -> str:
    """Decode standard padded base64 to UTF-8 text."""
    try:
        raw = base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise FunctionError("b64dec(): not valid base64") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FunctionError("b64dec(): decoded bytes are not UTF-8") from None


@_register("query_escape", _STR, returns="string")
def query_escape(s: str) -> str:
    """Go's url.QueryEscape: only A-Za-z0-9-_.~ stay, space becomes +."""
    return golang.query_escape(s)


@_register("path_escape", _STR, returns="string")
def path_escape(s: str) -> str:
    """Go's url.PathEscape: escapes one path segment (/ ; , ? and non-ASCII)."""
    return golang.path_escape(s)


@_register("userinfo_escape", _STR, returns="string")
def userinfo_escape(s: str) -> str:
    """The user or password part of a URL as Go's url.UserPassword writes it (@ / ? : escaped)."""
    return golang.userinfo_escape(s)


@_register("go_quote", _STR, returns="string")
def go_quote(s: str) -> str:
    """Go's strconv.Quote (fmt %q): a double-quoted string with Go escapes."""
    return golang.quote(s)


@_register("go_quote_list", ("array-string",), returns="string")
def go_quote_list(items: list[str]) -> str:
    """Go's fmt %q of a []string: ["a" "b"]."""
    return golang.quote_list(items)


@_register("to_yaml", _ANY, returns="string")
def to_yaml(value: Any) -> str:
    """Block-style YAML, keys in their given order, UTF-8 kept literal."""
    try:
        text: str = yaml.safe_dump(value, default_flow_style=False, sort_keys=False, allow_unicode=True)
    except yaml.YAMLError:
        raise FunctionError("to_yaml(): value cannot be represented as YAML") from None
    return text


@_register("to_json", _ANY, returns="string")
def to_json(value: Any) -> str:
    """Compact JSON, keys in their given order, UTF-8 kept literal."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        raise FunctionError("to_json(): value cannot be represented as JSON") from None


@_register("fold", _STR, returns="string")
def fold(s: str) -> str:
    """A case- and accent-insensitive key, as a *_general_ci collation compares: NFD, drop Mn, NFC, casefold."""
    if s.isascii():  # ASCII has no marks and normalizes to itself: only the case is folded
        return s.casefold()
    stripped = "".join(ch for ch in unicodedata.normalize("NFD", s) if unicodedata.category(ch) != "Mn")
    return unicodedata.normalize("NFC", stripped).casefold()


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


@_register("dns_label_ok", _STR, returns="boolean")
def dns_label_ok(s: str) -> bool:
    """Whether the text is an RFC 1123 DNS label (lowercase alphanumerics and '-', at most 63)."""
    return len(s) <= 63 and _DNS_LABEL.fullmatch(s) is not None


@_register("truncate_bytes", _STR, _NUM, _STR, returns="string")
def truncate_bytes(s: str, limit: float, suffix: str) -> str:
    """At most ``limit`` UTF-8 bytes: when cut, cut on a character boundary and end with ``suffix``."""
    n = to_int(limit)
    if n is None or n != limit or n < 0:
        raise FunctionError("truncate_bytes(): limit must be a whole number >= 0")
    raw = s.encode("utf-8")
    if len(raw) <= n:
        return s
    tail = suffix.encode("utf-8")
    if len(tail) >= n:
        return tail[:n].decode("utf-8", errors="ignore")
    return raw[: n - len(tail)].decode("utf-8", errors="ignore") + suffix


@_register("trim_suffix", _STR, _STR, returns="string")
def trim_suffix(s: str, suffix: str) -> str:
    """``s`` without ``suffix`` at its end (unchanged when it does not end with it)."""
    return s[: -len(suffix)] if suffix and s.endswith(suffix) else s


def _split_host_port(hostport: str) -> tuple[str, str] | None:
    """Go's net.SplitHostPort, None where Go returns an error."""
    colon = hostport.rfind(":")
    if colon < 0:
        return None
    start, end_of_host = 0, 0
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0 or end + 1 != colon:
            return None
        host, start, end_of_host = hostport[1:end], 1, end + 1
    else:
        host = hostport[:colon]
        if ":" in host:
            return None
    if "[" in hostport[start:] or "]" in hostport[end_of_host:]:
        return None
    return host, hostport[colon + 1 :]


@_register("split_host_port", _STR, returns="object|null")
def split_host_port(hostport: str) -> dict[str, str] | None:
    """``{host, port}`` (both strings, IPv6 brackets removed) as Go's net.SplitHostPort splits it, else null.

    The port is not checked: ``split_host_port('h:x').port`` is ``'x'``.
    """
    parts = _split_host_port(hostport)
    return None if parts is None else {"host": parts[0], "port": parts[1]}


@_register("join_host_port", _STR, _STR, returns="string")
def join_host_port(host: str, port: str) -> str:
    """Go's net.JoinHostPort: ``host:port``, with a host that holds a colon (IPv6) in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
