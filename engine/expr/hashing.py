"""Passwords and hashes of the shared function registry: ``password`` (the one impure generator), ``sha256``,
``hash8`` and ``hash_fraction``.

Registered into ``registry`` on import (``functions.py`` imports this module). ``password`` reports each value to
the current secret sink; inside ``address_only`` it generates nothing, for a render that only needs names.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import secrets
from collections.abc import Iterator
from contextvars import ContextVar

from engine.expr.registry import register as _register
from engine.expr.secret_sink import current_sink

_STR = ("string",)
_NUM = ("number",)
_ANY: tuple[str, ...] = ()


_addressing: ContextVar[bool] = ContextVar("addressing", default=False)


@contextlib.contextmanager
def address_only() -> Iterator[None]:
    """Inside the block ``password()`` generates nothing: a render that only needs an object's name and kind."""
    token = _addressing.set(True)
    try:
        yield
    finally:
        _addressing.reset(token)


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
