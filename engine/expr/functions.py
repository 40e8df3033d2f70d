"""The one function library that rule expressions (JMESPath) and templates (Jinja) share.

Every function is registered once, with its JMESPath argument types and its implementation;
``jmes.py`` turns the registry into JMESPath custom functions, ``jinja.py`` into Jinja globals
and filters, and ``engine lint`` reads it to report unknown functions. All functions are pure
except ``password`` and the cluster questions (``cluster_state``). Implementations raise
``FunctionError`` with messages that never quote an argument, since arguments may be secrets.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import hashlib
import json
import math
import re
import secrets
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import yaml

from engine import durations

# cluster_state, ownership and strings_and_maps hold more of the library and register their functions on import.
from engine.expr import cluster_state, golang, ownership, strings_and_maps  # noqa: F401
from engine.expr.errors import ExprError, ExprSyntaxError, FunctionError
from engine.expr.registry import FUNCTIONS, Function, call_described, check_arguments, described_failure
from engine.expr.registry import register as _register
from engine.expr.secret_data import is_secret_object, secret_values_of

__all__ = [
    "FUNCTIONS",
    "ExprError",
    "ExprSyntaxError",
    "Function",
    "FunctionError",
    "SecretSink",
    "address_only",
    "call_described",
    "check_arguments",
    "current_sink",
    "described_failure",
    "redact_secrets",
    "use_sink",
]


# --- secrets ---------------------------------------------------------------------------------------


class SecretSink:
    """Collects every secret value the process knows (each generated password, and the secret values of
    every Secret a pass read), so log redaction blanks them and tests can check none leaks."""

    LEARNED = 65536
    """Versions of Secrets remembered as learned (then forgotten all at once): one version, one content."""

    def __init__(self) -> None:
        self._values: dict[str, None] = {}
        self._order: list[str] = []
        """The values in the order they were learned (the sink only grows): a reader catches up from its count."""
        self._lock = threading.Lock()
        self._learned: set[tuple[str, str]] = set()

    def _add_locked(self, values: Iterable[str]) -> None:
        for value in values:
            if value not in self._values:
                self._values[value] = None
                self._order.append(value)

    def add(self, value: str) -> None:
        with self._lock:
            self._add_locked((value,))

    def add_all(self, values: Iterable[str]) -> None:
        with self._lock:
            self._add_locked(values)

    def learn(self, value: Any) -> None:
        """Add the secret values (engine.expr.secret_data's rule) of every Secret in ``value``: an object,
        or a list of objects; anything else is ignored. A version of a Secret (uid, resourceVersion) learned
        already is not read again (issue 11: every pass reads the same Secrets; their values are known)."""
        for obj in value if isinstance(value, list) else (value,):
            if not is_secret_object(obj):
                continue
            meta = obj.get("metadata")
            version = (meta.get("uid"), meta.get("resourceVersion")) if type(meta) is dict else (None, None)
            known = version[0] and version[1] and type(version[0]) is str and type(version[1]) is str
            if known and version in self._learned:
                continue
            secrets_found = list(secret_values_of(obj))
            with self._lock:
                self._add_locked(secrets_found)
                if known:
                    if len(self._learned) >= self.LEARNED:
                        self._learned.clear()
                    self._learned.add(version)  # type: ignore[arg-type]

    def values(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._values)

    def count(self) -> int:
        """How many values the sink holds (a method, not ``len``: an empty sink stays truthy)."""
        return len(self._order)

    def values_from(self, start: int) -> list[str]:
        """The values learned after the first ``start`` ones, in the order they were learned."""
        with self._lock:
            return self._order[start:]

    def redact(self, text: str) -> str:
        """``text`` with every collected secret, plain or base64-encoded as Secret data holds it, replaced by
        ``[redacted]`` (longest first, so no part of a longer secret is left beside a shorter one's blank)."""
        for value in sorted(self.values(), key=len, reverse=True):
            if value:
                text = text.replace(value, "[redacted]")
                text = text.replace(base64.b64encode(value.encode("utf-8", "replace")).decode("ascii"), "[redacted]")
        return text


_Read = TypeVar("_Read")

current_sink: ContextVar[SecretSink | None] = ContextVar("current_sink", default=None)
"""The sink ``password()`` reports to; per thread (context), unset by default."""


def redact_secrets(text: str) -> str:
    """``text`` with every secret the current sink knows blanked (``SecretSink.redact``); as it is with no sink."""
    sink = current_sink.get()
    return text if sink is None else sink.redact(text)


def remember_secrets(value: _Read) -> _Read:
    """Make the secret values of every Secret in ``value`` (read from a cluster) known to the current sink,
    so a restarted operator blanks passwords it read back as it blanks those it generated; returns ``value``."""
    sink = current_sink.get()
    if sink is not None:
        sink.learn(value)
    return value


@contextlib.contextmanager
def use_sink(sink: SecretSink) -> Iterator[SecretSink]:
    """Report generated secrets to ``sink`` inside the block."""
    token = current_sink.set(sink)
    try:
        yield sink
    finally:
        current_sink.reset(token)


_addressing: ContextVar[bool] = ContextVar("addressing", default=False)


@contextlib.contextmanager
def address_only() -> Iterator[None]:
    """Inside the block ``password()`` generates nothing: a render that only needs an object's name and kind."""
    token = _addressing.set(True)
    try:
        yield
    finally:
        _addressing.reset(token)


_STR = ("string",)
_NUM = ("number",)
_ANY: tuple[str, ...] = ()


@_register("password", returns="string", pure=False)
def password() -> str:
    """A new random password: 32 random bytes as unpadded URL-safe base64 (43 characters)."""
    if _addressing.get():
        return "-" * 43
    value = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode("ascii")
    sink = current_sink.get()
    if sink is not None:
        sink.add(value)
    return value


# --- hashing and encoding -----------------------------------------------------------------------


@_register("sha256", _STR, returns="string")
def sha256(s: str) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes."""
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


@_register("hash8", _STR, returns="string")
def hash8(s: str) -> str:
    """The first 8 hex characters of sha256: a short stable name suffix."""
    return sha256(s)[:8]


@_register("hash_fraction", _STR, returns="number")
def hash_fraction(s: str) -> float:
    """A stable number in [0, 1): the first 4 bytes of SHA-256 as a big-endian uint32 / 2**32 (for jitter)."""
    digest = hashlib.sha256(s.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


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


# --- names -------------------------------------------------------------------------------------


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


# --- numbers -------------------------------------------------------------------------------------


def _whole(x: float) -> int | float:
    """An integral float as an int, so results print as 3 rather than 3.0."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


@_register("add", _NUM, _NUM, returns="number")
def add(a: float, b: float) -> int | float:
    """a + b."""
    return _whole(a + b)


@_register("sub", _NUM, _NUM, returns="number")
def sub(a: float, b: float) -> int | float:
    """a - b."""
    return _whole(a - b)


@_register("mul", _NUM, _NUM, returns="number")
def mul(a: float, b: float) -> int | float:
    """a * b."""
    return _whole(a * b)


_INT_TEXT = re.compile(r"[+-]?[0-9]+")


@_register("to_int", _ANY, returns="number|null")
def to_int(value: Any) -> int | None:
    """A decimal integer string or a number as an int (fractions truncated); anything else gives null."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    if isinstance(value, str) and _INT_TEXT.fullmatch(value):
        return int(value)
    return None


@_register("int_or", _ANY, _NUM, returns="number")
def int_or(value: Any, default: float) -> int | float:
    """to_int(value), or ``default`` when that is null."""
    parsed = to_int(value)
    return default if parsed is None else parsed


_INT64_MAX = (1 << 63) - 1


@_register("parse_suffix_int", _STR, _STR, returns="number|null")
def parse_suffix_int(s: str, marker: str) -> int | None:
    """The text after the LAST ``marker`` as a base-10 int64 >= 1, else null.

    ``parse_suffix_int('x-password-v12', '-password-v')`` is 12.
    """
    at = s.rfind(marker)
    if at < 0 or not marker:
        return None
    tail = s[at + len(marker) :]
    if not _INT_TEXT.fullmatch(tail):
        return None
    value = int(tail)
    return value if 1 <= value <= _INT64_MAX else None


_RANGE_LIMIT = 10000


@_register("range_int", _NUM, _NUM, returns="array-number")
def range_int(start: float, stop: float) -> list[int]:
    """The integers from ``start`` up to but excluding ``stop``; at most 10000 of them."""
    low, high = to_int(start), to_int(stop)
    if low is None or high is None or low != start or high != stop:
        raise FunctionError("range_int(): bounds must be whole numbers")
    if high - low > _RANGE_LIMIT:
        raise FunctionError(f"range_int(): more than {_RANGE_LIMIT} items")
    return list(range(low, high))


# --- time ----------------------------------------------------------------------------------------

_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})",
    re.ASCII,
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _parse_time_us(ts: str, fn: str) -> int:
    """Microseconds since the epoch for an RFC 3339 timestamp."""
    us = _time_us(ts)
    if type(us) is str:
        raise FunctionError(f"{fn}(): {us}")
    return us  # type: ignore[return-value]


@functools.lru_cache(maxsize=4096)
def _time_us(ts: str) -> int | str:
    """``_parse_time_us`` of one text: the microseconds, or why there are none (the error names the calling
    function, so only the reason is kept). Cached (issue 11): a pass reads the same few timestamps (its order's
    status and conditions, ``now``) in several values, and each parse was a regex, a string and a datetime; the
    answer depends on the text alone."""
    match = _RFC3339.fullmatch(ts)
    if match is None:
        return "not an RFC 3339 timestamp"
    day, clock, fraction, zone = match.groups()
    micro = (fraction or "")[:6].ljust(6, "0")
    zone = "+00:00" if zone in "Zz" else zone
    try:
        parsed = datetime.fromisoformat(f"{day}T{clock}.{micro}{zone}")
    except ValueError:
        return "not a valid date or time"
    return (parsed - _EPOCH) // timedelta(microseconds=1)


def _format_time(seconds: int, fn: str) -> str:
    text = _time_text(seconds)
    if text is None:
        raise FunctionError(f"{fn}(): timestamp out of range")
    return text


@functools.lru_cache(maxsize=4096)
def _time_text(seconds: int) -> str | None:
    """RFC 3339 UTC whole seconds for seconds since the epoch (None: out of range); cached as ``_time_us``."""
    try:
        return (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    except OverflowError:
        return None


def _seconds(us: int) -> int | float:
    return us // 1_000_000 if us % 1_000_000 == 0 else us / 1_000_000


def _duration_ns(text: str, fn: str) -> int:
    try:
        return durations.parse_ns(text)
    except durations.DurationError as exc:
        raise FunctionError(f"{fn}(): {exc}") from None


@_register("duration_seconds", _STR, returns="number")
def duration_seconds(text: str) -> int | float:
    """A Go duration (``720h``, ``1m30s``, ``-1.5h``, ``10ms``, ``0``) in seconds."""
    ns = _duration_ns(text, "duration_seconds")
    return ns // 1_000_000_000 if ns % 1_000_000_000 == 0 else ns / 1e9


def _to_ns(seconds: float, fn: str) -> int:
    if isinstance(seconds, float) and not math.isfinite(seconds):
        raise FunctionError(f"{fn}(): seconds must be finite")
    if isinstance(seconds, int):
        return seconds * 1_000_000_000
    return round(seconds * 1e9)


@_register("format_duration", _NUM, returns="string")
def format_duration(seconds: float) -> str:
    """Seconds as Go's Duration.String writes them: ``1h0m0s``, ``1m30s``, ``1.5s``, ``10ms``, ``0s``."""
    return durations.format_ns(_to_ns(seconds, "format_duration"))


@_register("time_add", _STR, ("string", "number"), returns="string")
def time_add(ts: str, duration: str | float) -> str:
    """The timestamp plus a Go duration string or a number of seconds, as RFC 3339 UTC whole seconds."""
    ns = _duration_ns(duration, "time_add") if isinstance(duration, str) else _to_ns(duration, "time_add")
    total_us = _parse_time_us(ts, "time_add") + ns // 1000
    return _format_time(total_us // 1_000_000, "time_add")


@_register("time_diff", _STR, _STR, returns="number")
def time_diff(a: str, b: str) -> int | float:
    """Seconds from b to a (a - b)."""
    return _seconds(_parse_time_us(a, "time_diff") - _parse_time_us(b, "time_diff"))


@_register("time_before", _STR, _STR, returns="boolean")
def time_before(a: str, b: str) -> bool:
    """Whether a is strictly earlier than b."""
    return _parse_time_us(a, "time_before") < _parse_time_us(b, "time_before")


def _pick_time(fn: str, stamps: tuple[str | None, ...], latest: bool) -> str | None:
    best: tuple[int, str] | None = None
    for ts in stamps:
        if ts is None:
            continue
        us = _parse_time_us(ts, fn)
        if best is None or (us > best[0] if latest else us < best[0]):
            best = (us, ts)
    return None if best is None else best[1]


@_register("time_max", ("string", "null"), returns="string|null", variadic=True)
def time_max(*stamps: str | None) -> str | None:
    """The latest of the timestamps given (returned as written), ignoring nulls; null if all are null."""
    return _pick_time("time_max", stamps, latest=True)


@_register("time_min", ("string", "null"), returns="string|null", variadic=True)
def time_min(*stamps: str | None) -> str | None:
    """The earliest of the timestamps given (returned as written), ignoring nulls; null if all are null."""
    return _pick_time("time_min", stamps, latest=False)


# --- collections ---------------------------------------------------------------------------------


@_register("keys_sorted", ("object",), returns="array-string")
def keys_sorted(obj: Mapping[str, Any]) -> list[str]:
    """The object's keys in sorted order (JMESPath's keys() order is unspecified)."""
    return sorted(obj)


@_register("first", ("array", "null"), returns="any")
def first(items: list[Any] | None) -> Any:
    """The first element, or null for an empty array or null."""
    return items[0] if items else None


@_register("index_by", ("array",), _STR, returns="object")
def index_by(items: list[Any], key: str) -> dict[str, Any]:
    """An object mapping each element's ``key`` field (a string) to the element; later elements win."""
    out: dict[str, Any] = {}
    for item in items:
        value = item.get(key) if isinstance(item, Mapping) else None
        if isinstance(value, str):
            out[value] = item
    return out


def _rule_parts(rule: Any) -> tuple[list[str], Any]:
    if (
        isinstance(rule, list | tuple)
        and len(rule) == 2
        and isinstance(rule[0], list | tuple)
        and all(isinstance(s, str) for s in rule[0])
    ):
        return list(rule[0]), rule[1]
    raise FunctionError("classify(): each rule must be [[substring, ...], label]")


@_register("classify", ("array",), ("array",), returns="object|null")
def classify(texts: list[Any], rules: list[Any]) -> dict[str, Any] | None:
    """The first text, in order, that any rule matches (rules tried in order, case-sensitive substrings).

    Returns ``{"label": label, "text": text}``, or null when nothing matches; non-string texts are skipped.
    """
    parsed = [_rule_parts(rule) for rule in rules]
    for text in texts:
        if not isinstance(text, str):
            continue
        for needles, label in parsed:
            if any(needle in text for needle in needles):
                return {"label": label, "text": text}
    return None


@_register("condition", ("object", "null"), _STR, returns="object|null")
def condition(obj: Mapping[str, Any] | None, kind: str) -> Any:
    """The first entry of obj.status.conditions whose type is ``kind``, or null."""
    # ``type(x) is dict`` first: decoded JSON is dicts, and an ABC check costs a Python call (issue 11).
    status = obj.get("status") if type(obj) is dict or isinstance(obj, Mapping) else None
    conditions = status.get("conditions") if type(status) is dict or isinstance(status, Mapping) else None
    if not isinstance(conditions, list | tuple):
        return None
    for entry in conditions:
        if (type(entry) is dict or isinstance(entry, Mapping)) and entry.get("type") == kind:
            return entry
    return None


@_register("condition_true", ("object", "null"), _STR, returns="boolean")
def condition_true(obj: Mapping[str, Any] | None, kind: str) -> bool:
    """Whether obj has a condition of type ``kind`` with status "True"."""
    found = condition(obj, kind)
    return found is not None and found.get("status") == "True"  # condition answers a mapping or None


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


def _path_value(item: Any, path: str) -> Any:
    node = item
    for key in path.split("."):
        if type(node) is not dict and not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


@_register("valid_time", _ANY, returns="boolean")
def valid_time(value: Any) -> bool:
    """Whether ``value`` is an RFC 3339 timestamp the time functions accept."""
    if not isinstance(value, str):
        return False
    try:
        _parse_time_us(value, "valid_time")
    except FunctionError:
        return False
    return True


@_register("valid_duration", _ANY, returns="boolean")
def valid_duration(value: Any) -> bool:
    """Whether ``value`` is a Go duration string the duration functions accept (``720h``, ``-1h``, ``0``): a
    rule tests a field an order may hold past its CRD before it reads it."""
    if not isinstance(value, str):
        return False
    try:
        _duration_ns(value, "valid_duration")
    except FunctionError:
        return False
    return True


@_register("trim_suffix", _STR, _STR, returns="string")
def trim_suffix(s: str, suffix: str) -> str:
    """``s`` without ``suffix`` at its end (unchanged when it does not end with it)."""
    return s[: -len(suffix)] if suffix and s.endswith(suffix) else s


@_register("where_eq", ("array", "null"), _STR, _ANY, returns="array")
def where_eq(items: list[Any] | None, path: str, value: Any) -> list[Any]:
    """The elements whose dotted ``path`` equals ``value`` (a missing path reads null).

    JMESPath filters cannot read the root context; this compares against a value from it.
    """
    return [item for item in items or [] if _path_value(item, path) == value]


@_register("if_else", _ANY, _ANY, _ANY, returns="any")
def if_else(condition: Any, then: Any, otherwise: Any) -> Any:
    """``then`` when ``condition`` is truthy (JMESPath truthiness: 0 is true), else ``otherwise``."""
    false = condition is None or condition is False or condition == "" or condition == [] or condition == {}
    return otherwise if false else then


@_register("controlled_by", ("object", "null"), ("object", "null"), returns="boolean")
def controlled_by(obj: Mapping[str, Any] | None, owner: Mapping[str, Any] | None) -> bool:
    """Whether ``obj`` has a controller ownerReference to ``owner`` (compared by uid)."""
    if not isinstance(obj, Mapping) or not isinstance(owner, Mapping):
        return False
    uid = _path_value(owner, "metadata.uid")
    refs = _path_value(obj, "metadata.ownerReferences") or []
    return any(isinstance(r, Mapping) and r.get("controller") is True and r.get("uid") == uid for r in refs)


_ORDERINGS: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: bool(a < b),
    "<=": lambda a, b: bool(a <= b),
    ">": lambda a, b: bool(a > b),
    ">=": lambda a, b: bool(a >= b),
}


def _compare(left: Any, op: str, right: Any) -> bool:
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if op in ("in", "not in"):
        if not isinstance(right, list | tuple):
            raise FunctionError(f"where_cmp(): {op!r} needs an array value")
        return (left in right) == (op == "in")
    order = _ORDERINGS.get(op)
    if order is None:
        raise FunctionError("where_cmp(): op must be one of ==, !=, <, <=, >, >=, in, not in")
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (left, right))
    strings = isinstance(left, str) and isinstance(right, str)
    return (numbers or strings) and order(left, right)


@_register("where_cmp", ("array", "null"), _STR, _STR, _ANY, returns="array")
def where_cmp(items: list[Any] | None, path: str, op: str, value: Any) -> list[Any]:
    """The elements whose dotted ``path`` (``''``: the element) compares to ``value`` by ``op``.

    ``op`` is ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` (numbers with numbers, strings with
    strings; anything else is false, as in JMESPath), ``in`` or ``not in`` (``value`` an array).
    Like where_eq, it compares against a value from the root context, which a filter cannot read.
    """
    return [item for item in items or [] if _compare(item if path == "" else _path_value(item, path), op, value)]


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
