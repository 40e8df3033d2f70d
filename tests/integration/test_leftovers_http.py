"""What an operator killed with SIGKILL leaves in its temporary folder is removed by the next one that starts
(on a pod's emptyDir /tmp it would otherwise pile up with every container restart)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from integration_kit import OperatorProcess, World, wait_for

OWNS_A_FOLDER = """
import sys
from engine.cluster.kube.owned_dirs import OwnedDir
owned = OwnedDir("engine-discovery-")
print(owned.path, flush=True)
sys.stdin.read()  # holds the folder until the test closes our stdin
owned.remove()
"""


def discovery_folders(tmp: Path) -> set[Path]:
    return set(tmp.glob("engine-discovery-*"))


def test_a_starting_operator_removes_the_discovery_folder_of_a_killed_one(world: World) -> None:
    shared = world.tmp / "shared-tmp"
    shared.mkdir()
    first = OperatorProcess(world, name="killed", tmp=shared)
    first.wait_ready()
    (left,) = discovery_folders(shared)
    first.kill()  # SIGKILL: no graceful stop
    assert left.is_dir()

    elsewhere = world.tmp / "not-ours"
    elsewhere.mkdir()
    (elsewhere / "owner.lock").write_text("")  # a free marker: removed, were the link followed
    (shared / "engine-discovery-link").symlink_to(elsewhere)
    unmarked = shared / "engine-discovery-older-version"  # no marker: nothing says its owner is gone
    unmarked.mkdir()
    with subprocess.Popen([sys.executable, "-c", OWNS_A_FOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True, env={**os.environ, "TMPDIR": str(shared)}) as live_owner:
        assert live_owner.stdout is not None
        live = Path(live_owner.stdout.readline().strip())
        try:
            second = OperatorProcess(world, name="restarted", tmp=shared)
            second.wait_ready()
            wait_for(lambda: "left by an earlier engine run that was killed before it could clean up" in second.logs(),
                     message="the restarted operator to report the folder it removed")
            assert not left.exists()
            assert live.is_dir() and unmarked.is_dir() and elsewhere.is_dir() and (elsewhere / "owner.lock").exists()
            (own,) = discovery_folders(shared) - {live, unmarked, shared / "engine-discovery-link"}
            assert second.stop() == 0
            assert not own.exists()  # a graceful stop removes its own
        finally:
            assert live_owner.stdin is not None
            live_owner.stdin.close()
            live_owner.wait(30)
    assert not live.exists()

