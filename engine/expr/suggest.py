"""Did you mean": the closest known names to a misspelt one, for lint messages."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str], *, call: bool = False) -> str:
    """``"; did you mean 'x'?"`` (``x()`` for functions) when a known name is close, else ``""``."""
    candidates = sorted({k for k in known if k and k != name})
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    if not close:
        lowered = {k.lower(): k for k in candidates}
        close = [lowered[name.lower()]] if name.lower() in lowered else []
    if not close:
        return ""
    shown = f"{close[0]}()" if call else repr(close[0])
    return f"; did you mean {shown}?"
