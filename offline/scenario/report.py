"""How failures read: short YAML, a trimmed unified diff, and Secret data never shown.

Secret ``data``/``stringData`` values are replaced on both sides before anything is
printed: equal values read ``<hidden>``, differing ones say so and give only a length.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import yaml

from offline.scenario.match import MISSING, Mismatch, is_expression

__all__ = ["MAX_DIFF_LINES", "diff", "dump", "is_secret", "mask_secret", "mismatch_line", "short"]

MAX_DIFF_LINES = 40
SECRET_FIELDS = ("data", "stringData")
HIDDEN = "<hidden>"


def is_secret(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("kind") == "Secret" and obj.get("apiVersion", "v1") == "v1"


def _hidden_pair(want: Any, got: Any) -> tuple[Any, Any]:
    if got is MISSING:
        return HIDDEN, MISSING
    if want == got:
        return HIDDEN, HIDDEN
    length = f", {len(got)} chars" if isinstance(got, str) else ""
    return HIDDEN, f"<hidden: differs{length}>"


def mask_secret(expected: Any, live: Any) -> tuple[Any, Any]:
    """Both sides with every Secret data value (and every data-reading expression) hidden."""
    if not (isinstance(expected, dict) and isinstance(live, dict)):
        return expected, live
    want, got = dict(expected), dict(live)
    for field in SECRET_FIELDS:
        if isinstance(want.get(field), dict) and isinstance(got.get(field), dict):
            masked_want: dict[str, Any] = {}
            masked_got: dict[str, Any] = {}
            for key, value in want[field].items():
                masked_want[key], masked_got[key] = _hidden_pair(value, got[field].get(key, MISSING))
            want[field], got[field] = masked_want, masked_got
        elif field in got and got[field] is not MISSING:
            got[field] = HIDDEN
    for key in want:
        if is_expression(key) and "data" in key.lower() and isinstance(got.get(key), str):
            want[key], got[key] = _hidden_pair(want[key], got[key])
    return want, got


def _printable(value: Any) -> Any:
    if value is MISSING:
        return "<missing>"
    if isinstance(value, dict):
        return {str(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


def dump(value: Any) -> str:
    """Block-style YAML in the order written."""
    text = yaml.safe_dump(_printable(value), default_flow_style=False, sort_keys=False, allow_unicode=True, width=1000)
    return text[:-5] if text.endswith("\n...\n") else text


def diff(expected: Any, live: Any) -> list[str]:
    """A unified diff (expected -> live) of two YAML dumps, trimmed to MAX_DIFF_LINES lines."""
    lines = list(difflib.unified_diff(dump(expected).splitlines(), dump(live).splitlines(),
                                      "expected", "live", lineterm="", n=2))
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... ({len(lines) - MAX_DIFF_LINES} more diff lines)"]
    return lines


def short(value: Any, limit: int = 100) -> str:
    """One line, JSON-ish, bounded."""
    if value is MISSING:
        return "missing"
    text = json.dumps(_printable(value), ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def mismatch_line(mismatch: Mismatch, *, secret: bool) -> str:
    path = mismatch.path
    reads_data = path.startswith(SECRET_FIELDS) or (path.startswith("(") and "data" in path.lower())
    if secret and reads_data:
        return f"{mismatch.path}: values differ (hidden: Secret data)"
    note = f" ({mismatch.note})" if mismatch.note else ""
    return f"{mismatch.path or '(object)'}: expected {short(mismatch.expected)}, live {short(mismatch.live)}{note}"
