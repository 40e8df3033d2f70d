"""The discovery cache folders a killed operator leaves are swept by ``sweep_dead``: only dead owners' folders
of our prefix in the folder we use, never a live owner's, never through a symlink."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from engine.cluster.kube.owned_dirs import OWNER_FILE, OwnedDir, sweep_dead

PREFIX = "engine-discovery-"

HOLDS_A_FOLDER = f"""
import sys
from engine.cluster.kube.owned_dirs import OwnedDir
print(OwnedDir({PREFIX!r}).path, flush=True)
sys.stdin.read()
"""


def killed_owners_folder(tmp: Path) -> Path:
    """A folder whose owner, a real process, was killed with SIGKILL while it held it."""
    with subprocess.Popen([sys.executable, "-c", HOLDS_A_FOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True, env={**os.environ, "TMPDIR": str(tmp)}) as owner:
        assert owner.stdout is not None
        path = Path(owner.stdout.readline().strip())
        owner.send_signal(signal.SIGKILL)
        owner.wait(30)
    assert path.parent == tmp and (path / OWNER_FILE).exists()
    return path


def test_only_the_folders_of_dead_owners_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = killed_owners_folder(tmp_path)
    (dead / "discovery-0123.json").write_text("{}")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    live = OwnedDir(PREFIX)  # this process's own, alive
    other_prefix = tmp_path / "engine-kubeconfig-1-abc"
    other_prefix.mkdir()
    (other_prefix / OWNER_FILE).write_text("")
    unmarked = tmp_path / f"{PREFIX}older"
    unmarked.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / OWNER_FILE).write_text("")
    (tmp_path / f"{PREFIX}link").symlink_to(outside)
    marker_link = tmp_path / f"{PREFIX}marker-link"
    marker_link.mkdir()
    (marker_link / OWNER_FILE).symlink_to(outside / OWNER_FILE)
    try:
        assert sweep_dead(PREFIX, tmp_path) == [dead]
        assert not dead.exists()
        assert live.path.is_dir() and other_prefix.is_dir() and unmarked.is_dir() and marker_link.is_dir()
        assert (outside / OWNER_FILE).exists() and (tmp_path / f"{PREFIX}link").is_symlink()
    finally:
        live.remove()
    assert not live.path.exists()
    assert sweep_dead(PREFIX, tmp_path) == []

