"""What a cluster read answers is read-only: the read cache hands out the object it holds, not a copy.

A copy per read costs about 14% of a converged pass, and a pass only reads what it gets: the bodies it writes are
built anew (decision 0037). So a caller never changes an object (or a list item) a get or a list answered; to
change one it copies it first (``json_copy``). A caller that broke this would change the cache under every later
reader, so the tests check it: when checking, every object a read hands out is recorded with its JSON text, and
``changed`` names each one that no longer matches; off (the default, and always in production), ``handed_out``
returns at once. The test process turns it on with ``check_reads``; a process started with
``ENGINE_CHECK_READS=1`` (every ``engine run`` the tests start) checks itself with ``guard``, which ends it with
status ``EXIT_READS_CHANGED`` and a log line naming the objects when any was changed.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from typing import Any

from engine.cluster.api import Obj

ENVIRONMENT = "ENGINE_CHECK_READS"
"""The environment variable that, set to ``1`` when a process starts, has it check its reads (never in production)."""

CHECKING = os.environ.get(ENVIRONMENT) == "1"
"""Whether reads are recorded (tests); set once at import, or by ``check_reads``."""

SELF_CHECKING = CHECKING
"""Whether the process checks its own reads (``guard``): it was started with the variable, and no caller took
the check over with ``check_reads``."""

EXIT_READS_CHANGED = 70
"""The exit status of a self-checking process in which a reader changed an object a read handed out."""

VIOLATION = "a reader changed objects a cluster read handed out"
"""The start of the log line a self-checking process writes before it exits with ``EXIT_READS_CHANGED``."""

GUARD_INTERVAL = 1.0
"""Seconds between two checks of ``guard``."""

LOG = logging.getLogger("engine.cluster.readonly")

_lock = threading.Lock()
_handed: dict[int, tuple[Obj, str]] = {}
"""id of each object handed out -> the object (kept alive, so the id is not reused) and its JSON text."""


def check_reads(on: bool = True) -> None:
    """Record (or stop recording) what reads hand out, from now on; the caller checks them with ``changed``."""
    global CHECKING, SELF_CHECKING
    CHECKING = on
    SELF_CHECKING = False


def guard(done: threading.Event) -> threading.Thread | None:
    """In a self-checking process, a started thread that checks what reads handed out every second until ``done``
    is set, then once more, and ends the process (``EXIT_READS_CHANGED``) at the first change it finds: a
    status no test can overlook, where an exception would end in a pass's error handling. None otherwise."""
    if not SELF_CHECKING:
        return None
    thread = threading.Thread(target=_guard, args=(done,), name="read check", daemon=True)
    thread.start()
    return thread


def _guard(done: threading.Event) -> None:
    while not done.wait(GUARD_INTERVAL):
        _exit_if_changed()
    _exit_if_changed()


def _exit_if_changed() -> None:
    names = changed()
    if not names:
        return
    line = f"{VIOLATION}: {sorted(set(names))[:10]}"
    LOG.critical(line)
    for handler in logging.getLogger().handlers:
        handler.flush()
    print(line, file=sys.stderr, flush=True)
    os._exit(EXIT_READS_CHANGED)


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
