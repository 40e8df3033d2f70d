"""Whether a schema's ``pattern`` compiles as Go's regexp compiles it, and Go's words when it does not.

The API server compiles every ``pattern`` of a CRD schema with Go's ``regexp`` (RE2 syntax: no lookaround,
no backreferences) and refuses the CRD when one does not compile. ``google-re2`` parses the same syntax; its
error codes are reworded as Go's ``regexp/syntax`` words them.
"""

from __future__ import annotations

import functools

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

_GO_WORDS = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid character class range": "invalid character class range",
    "invalid character class": "invalid character class",
    "bad repetition operator": "invalid nested repetition operator",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "invalid escape sequence": "invalid escape sequence",
    "invalid named capture group": "invalid named capture",
    "invalid UTF-8": "invalid UTF-8",
    "pattern too large - compile failed": "expression too large",
    "pattern too large - reverse compile failed": "expression too large",
}


@functools.lru_cache(maxsize=1024)
def regex_error(pattern: str) -> str | None:
    """Go's ``error parsing regexp: ...`` for a pattern that does not compile, or None when it does."""
    try:
        re2.compile(pattern, options=_OPTIONS)
    except re2.error as error:
        text = error.args[0].decode() if error.args and isinstance(error.args[0], bytes) else str(error)
        if text.startswith("trailing \\"):
            return "error parsing regexp: trailing backslash at end of expression: ``"
        code, _, expression = text.partition(": ")
        return f"error parsing regexp: {_GO_WORDS.get(code, code)}: `{expression}`"
    return None
