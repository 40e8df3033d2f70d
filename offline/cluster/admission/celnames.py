"""Property names as Kubernetes CEL reads them: ``namespace`` is ``__namespace__``, ``a.b`` is ``a__dot__b``."""

from __future__ import annotations

import re

RESERVED = frozenset(
    {
        "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
        "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while",
    }
)  # fmt: skip
_IDENTIFIER = re.compile(r"[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*\Z")
_EXPAND = re.compile(r"__|[.\-/]")
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


def escape(name: str) -> str | None:
    """A property name as CEL reads it (``namespace`` -> ``__namespace__``), or None if unreachable."""
    if name in RESERVED:
        return f"__{name}__"
    if not _IDENTIFIER.match(name):
        return None
    return _EXPAND.sub(lambda match: _ESCAPES[match.group()], name)
