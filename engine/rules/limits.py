"""How large a file the operator reads from disk may be, and a read that never takes more than that.

A rule set is tens of KiB: the largest rule file shipped is 33 KiB, every
template is under 1 KiB. Reading a rule file costs far more than its size (a round-trip YAML parse
that keeps every position, then compiling): a valid 256 KiB rule file lints in about 3 s and 35 MiB,
a 1 MiB one in 10 s and 130 MiB, and a 20 MiB one grew a running operator past 2 GiB. So a rule file, an
include or a template larger than ``MAX_RULE_FILE_BYTES`` (nearly eight times the largest shipped) is refused
without being read: a lint error naming it and the limit, which ``engine run`` refuses to start on and a
live reload refuses (the running rules keep serving). A CRD file lint reads beside the rules may be up
to ``MAX_CRD_FILE_BYTES``: the API server takes no request body larger, so no CRD it serves is.
"""

from __future__ import annotations

import os
from pathlib import Path

MAX_RULE_FILE_BYTES = 256 * 1024
"""The largest rule file, include or template read (docs/rules.md, "Size limits")."""

MAX_CRD_FILE_BYTES = 3 * 1024 * 1024
"""The largest CRD file read for lint's path checks: the API server's limit on a request body."""


def size_text(size: int) -> str:
    """A size as people write it: ``256 KiB``, ``20 MiB``, ``1.5 GiB``, ``12 bytes``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value >= 10 or value.is_integer() else f"{value:.1f} {unit}"
    return f"{size} bytes"


class FileTooLarge(ValueError):
    """A file over its limit; ``size`` is at least what was seen (its stated size, or limit + 1 read)."""

    def __init__(self, size: int, limit: int) -> None:
        shown, most = size_text(size), size_text(limit)
        if shown == most:  # just over: the rounded sizes would read alike
            shown, most = f"{size} bytes", f"{limit} bytes"
        super().__init__(f"{shown}, over the limit of {most}")
        self.size = size
        self.limit = limit


def read_limited(path: Path, limit: int) -> bytes:
    """The file's bytes; FileTooLarge when it is larger than ``limit``: a regular file is refused by its size
    before any byte is read, anything else (a device, a pipe) after ``limit + 1`` bytes. OSError as ``open``."""
    with path.open("rb") as file:
        stated = os.fstat(file.fileno()).st_size
        if stated > limit:
            raise FileTooLarge(stated, limit)
        data = file.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(max(stated, len(data)), limit)
    return data


def refusal(what: str, exc: FileTooLarge) -> str:
    """The lint message for a file over its limit: ``the rule file is 20 MiB, over the limit of 256 KiB; ...``."""
    return f"the {what} is {exc}; it is not read (see \"Size limits\" in docs/rules.md)"
