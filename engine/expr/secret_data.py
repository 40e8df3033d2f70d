"""Which values of a Secret's data are secret: ONE rule, for the log redactor and `noSecretLeak` alike.

- A key whose name contains ``password``, ``token``, ``secret`` or ``clouds`` (any case): the
  whole decoded value.
- Otherwise a key whose name contains ``url``: only the password of each URL in the value that
  carries one (``scheme://user:password@host``; a transport URL may list several hosts, each
  ``user:password@host``), since the rest of a URL is an address, not a secret.
- Values shorter than MIN_SECRET_LENGTH characters are not taken (they match too much text).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any

SECRET_KEY_WORDS = ("password", "token", "secret", "clouds")
URL_KEY_WORD = "url"
MIN_SECRET_LENGTH = 8

_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_CREDENTIALS = re.compile(r"(?:://|,)[^:@/,\s]*:(?P<password>[^@\s]+?)@")


def is_secret_object(obj: Any) -> bool:
    """A core v1 Secret."""
    return isinstance(obj, dict) and obj.get("kind") == "Secret" and str(obj.get("apiVersion") or "v1") == "v1"


def secret_values_of(secret: dict[str, Any]) -> Iterator[str]:
    """The secret values of a Secret's ``data`` (decoded) and ``stringData``, by the rule above."""
    for field in ("data", "stringData"):
        data = secret.get(field)
        if not isinstance(data, dict):
            continue
        for key, raw in data.items():
            if not isinstance(key, str) or not isinstance(raw, str):
                continue
            value = raw if field == "stringData" else _decode(raw)
            if value is not None:
                yield from secret_values_for_key(key, value)


def secret_values_for_key(key: str, value: str) -> Iterator[str]:
    """The secret parts of one decoded data value under ``key``."""
    name = key.lower()
    if any(word in name for word in SECRET_KEY_WORDS):
        if len(value) >= MIN_SECRET_LENGTH:
            yield value
    elif URL_KEY_WORD in name and _URL.match(value):
        for match in _CREDENTIALS.finditer(value):
            if len(match["password"]) >= MIN_SECRET_LENGTH:
                yield match["password"]


def _decode(raw: str) -> str | None:
    try:
        return base64.b64decode(raw, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
