"""Fault windows (what the proxy does to which requests), the kinds of request, and the tally of what it saw."""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

KINDS = ("watch", "list", "get", "write", "other")
"""What a request is: a watch, a collection's list, one object's get, a write (POST, PUT, PATCH, DELETE), or other
(discovery, OpenAPI, version)."""

ALL = frozenset(KINDS)
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
@dataclass(frozen=True)
class Fault:
    """What the proxy does to the requests of ``kinds`` (a ``share`` of them, at random) while in force."""

    action: str
    """``status`` (answer ``code``), ``latency`` (hold ``delay`` seconds, then forward), ``reset``, ``gone`` (a watch
    answered by a 410 ERROR event), ``cut`` (a watch answered 200, chunked, closed before any chunk)."""
    kinds: frozenset[str] = ALL
    share: float = 1.0
    code: int = 0
    retry_after: int | None = None
    delay: float = 0.0
    target: str = ""
    """Only requests whose target (path and query) contains this ("" every one of ``kinds``)."""

    @property
    def ends_open_watches(self) -> bool:
        """Whether switching it on first ends the watch streams open now (so every watch meets it)."""
        return self.action in ("status", "reset", "gone", "cut") and "watch" in self.kinds


def status(code: int, *, retry_after: int | None = None, share: float = 1.0, kinds: frozenset[str] = ALL) -> Fault:
    """Answer a Status document with that code (``retry_after``: a Retry-After header, in seconds)."""
    return Fault("status", kinds, share, code=code, retry_after=retry_after)


def latency(seconds: float, *, share: float = 1.0, kinds: frozenset[str] = ALL, target: str = "") -> Fault:
    """Hold each request ``seconds`` before forwarding it (``target``: only those whose target contains it)."""
    return Fault("latency", kinds, share, delay=seconds, target=target)


def conflict(share: float = 1.0) -> Fault:
    """Answer 409 Conflict to that share of writes."""
    return status(409, share=share, kinds=frozenset({"write"}))


def reset(*, share: float = 1.0, kinds: frozenset[str] = ALL) -> Fault:
    """Reset the connection (TCP RST) instead of answering."""
    return Fault("reset", kinds, share)


def gone(share: float = 1.0) -> Fault:
    """Answer watches 200 with one ERROR event, code 410 (the resourceVersion is too old), then end them."""
    return Fault("gone", frozenset({"watch"}), share)


def cut(share: float = 1.0) -> Fault:
    """Answer watches 200 with ``Transfer-Encoding: chunked``, then close the connection with no chunk."""
    return Fault("cut", frozenset({"watch"}), share)


FAULTS: dict[str, Fault] = {
    "500": status(500),
    "429": status(429, retry_after=1),
    "latency": latency(3.0),
    "409": conflict(0.7),
    "reset": reset(),
    "410": gone(),
    "cut": cut(),
}
"""The fault windows of the project's own fault tests, by name."""


def kind_of(method: str, target: str) -> str:
    """The kind (``KINDS``) of a request by its method and request target (path and query)."""
    if method.upper() in WRITES:
        return "write"
    split = urlsplit(target)
    query = dict(parse_qsl(split.query))
    parts = [part for part in split.path.split("/") if part]
    if parts[:1] == ["api"] and len(parts) >= 2:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        rest = parts[3:]
    else:
        return "other"
    if rest[:1] == ["watch"] or query.get("watch", "").lower() in ("true", "1"):
        return "watch"
    if not rest:
        return "other"
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    return "list" if len(rest) == 1 else "get"


@dataclass
class Tally:
    """The requests a proxy saw while it was open: by kind, and by (kind, path)."""

    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    paths: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)

    @property
    def seconds(self) -> float:
        """How long it has been (or was) open."""
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    def per_second(self, kind: str | None = None) -> float:
        """Requests of a kind (None: of every kind) per second while it was open."""
        count = sum(self.counts.values()) if kind is None else self.counts[kind]
        return count / max(self.seconds, 1e-9)
