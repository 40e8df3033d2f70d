"""What a cluster read answers is read-only: the read cache hands out the object it holds, not a copy.

A copy per read was about 14% of a converged pass (decision 37), and a pass only reads what it gets: the
bodies it writes are built anew. So the Cluster contract says a caller never changes an object (or a list
item) a get or a list answered; to change one it copies it first (``json_copy``). A caller that broke the
contract would change the cache under every later reader, so the test suite checks it: with ``ENGINE_CHECK_READS=1``
(set by ``tests/conftest.py``) every object a read hands out, by the kube store or by the in-memory cluster,
is recorded with its JSON text, and ``changed`` (called after every test) names each one that no longer
matches. Off (the default), ``handed_out`` returns at once.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from engine.cluster.api import Obj

CHECKING = os.environ.get("ENGINE_CHECK_READS") == "1"
"""Whether reads are recorded (tests); set once at import, or by ``check_reads``."""

_lock = threading.Lock()
_handed: dict[int, tuple[Obj, str]] = {}
"""id of each object handed out -> the object (kept alive, so the id is not reused) and its JSON text."""


def check_reads(on: bool = True) -> None:
    """Record (or stop recording) what reads hand out, from now on."""
    global CHECKING
    CHECKING = on


def handed_out(obj: Obj) -> Obj:
    """``obj``, recorded when checking: an object handed out before must still read as it did then."""
    if not CHECKING:
        return obj
    text = _text(obj)
    with _lock:
        before = _handed.get(id(obj))
        if before is not None and before[0] is obj and before[1] != text:
            raise AssertionError(f"a reader changed an object a read handed out: {_name(obj)}")
        _handed[id(obj)] = (obj, text)
    return obj


def changed() -> list[str]:
    """Each object handed out since the last call that a reader changed since (by namespace/name); forgets them all."""
    with _lock:
        handed = list(_handed.values())
        _handed.clear()
    return [_name(obj) for obj, text in handed if _text(obj) != text]


def _text(obj: Any) -> str:
    return json.dumps(obj, default=repr)


def _name(obj: Obj) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    return f"{obj.get('kind', '?') if isinstance(obj, dict) else '?'} {meta.get('namespace') or ''}/{meta.get('name')}"
