"""`bench/sharded_cpu.py`'s harness command: sharded runs give the harness a start of 30 s (Lease renewals never let
a sharded start look quiet, so the harness's 90 s default was waited out on every sharded run), one replica keeps
the harness's own start, and a packed placement holds the harness and the replicas on chosen CPUs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import sharded_cpu  # noqa: E402  (bench/ is no package)


def arguments(tmp_path: Path, placement: str) -> argparse.Namespace:
    harness = tmp_path / "harness"
    harness.mkdir(exist_ok=True)
    (harness / "bench.py").write_text("")
    return argparse.Namespace(harness=harness, project=ROOT, n=10, placement=placement)


def startup(command: list[str]) -> str | None:
    return command[command.index("--startup-timeout") + 1] if "--startup-timeout" in command else None


@pytest.mark.parametrize(("replicas", "sharded", "expected"), [(1, False, None), (1, True, "30"), (3, True, "30")])
def test_a_sharded_run_gives_the_harness_a_start_of_30_seconds(tmp_path: Path, replicas: int, sharded: bool,
                                                              expected: str | None) -> None:
    assert startup(sharded_cpu.harness_command(arguments(tmp_path, "default"), replicas, sharded)) == expected


def test_three_sharded_replicas_run_as_three_processes_with_the_issues_lease_flags(tmp_path: Path) -> None:
    command = sharded_cpu.harness_command(arguments(tmp_path, "default"), 3, True)
    operator = command[command.index("--operator") + 1]
    assert operator.count(" run ") == 3 and operator.endswith("& wait")
    assert operator.count(sharded_cpu.LEASE_FLAGS) == 3


def test_packed_holds_the_harness_on_the_first_cpu_and_each_replica_on_the_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sharded_cpu.os, "sched_getaffinity", lambda pid: {0, 1})
    command = sharded_cpu.harness_command(arguments(tmp_path, "packed"), 3, True)
    assert command[:3] == ["taskset", "-c", "0"]
    assert command[command.index("--operator") + 1].count("taskset -c 1 ") == 3
