"""Temporary folders that say whether their owner still runs, so a starting operator can remove those a
killed one left (``kill -9``, an OOM kill): on a pod's emptyDir /tmp they would outlive the container and
pile up with every restart.

The owner holds an exclusive ``flock`` on the folder's ``owner.lock`` for the folder's life; the kernel drops
it when the process ends, however it ends. A sweeper that can take that lock knows the owner is gone. This
works across pid namespaces (two containers sharing one volume) where a pid would not. The marker appears
under its name only once it is locked, so a folder being made is never taken for a dead one; a folder with
no marker (an older version's, or one killed while it was made) is left alone."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from pathlib import Path

OWNER_FILE = "owner.lock"
"""The marker whose lock its owner holds while it runs."""


class OwnedDir:
    """A new private folder in the temporary folder, locked as this process's until ``remove``."""

    def __init__(self, prefix: str) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=prefix))
        fresh = self.path / f"{OWNER_FILE}.new"
        self._lock_fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(fresh, self.path / OWNER_FILE)  # visible as a marker only once it is locked
        except BaseException:
            os.close(self._lock_fd)
            shutil.rmtree(self.path, ignore_errors=True)
            raise

    def remove(self) -> None:
        """Delete the folder, then let go of its lock. Safe to call twice."""
        if self._lock_fd < 0:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._lock_fd)
        self._lock_fd = -1


def sweep_dead(prefix: str, temp_dir: Path | None = None) -> list[Path]:
    """Remove the folders named ``<prefix>*`` in the temporary folder (or ``temp_dir``) whose owner no longer
    runs; the removed ones. Only real folders of this user that carry an unlocked marker go; symlinks are
    never followed, a live owner's folder (this process's too) stays."""
    folder = temp_dir if temp_dir is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        candidates = sorted(folder.glob(f"{prefix}*"))
    except OSError:
        return removed
    for path in candidates:
        if _take_if_dead(path):
            removed.append(path)
    return removed


def _take_if_dead(path: Path) -> bool:
    """Remove ``path`` when it is our folder and its owner's lock is free; whether it was removed."""
    try:
        dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False  # a symlink, a file, or gone already
    try:
        if os.fstat(dir_fd).st_uid != os.getuid():
            return False
        try:
            marker = os.open(OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError:
            return False  # no marker: not ours to judge
        try:
            if not stat.S_ISREG(os.fstat(marker).st_mode):
                return False
            try:
                fcntl.flock(marker, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False  # its owner runs
            if not os.path.samestat(os.lstat(path), os.fstat(dir_fd)):
                return False  # replaced since we opened it
            shutil.rmtree(path)  # holding the lock; rmtree refuses a symlink and follows none inside
            return True
        except OSError:
            return False
        finally:
            os.close(marker)
    finally:
        with contextlib.suppress(OSError):
            os.close(dir_fd)
