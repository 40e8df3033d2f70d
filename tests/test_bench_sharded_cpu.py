"""`bench/sharded_cpu.py`'s harness command: sharded runs give the harness a start of 30 s (Lease renewals never let
a sharded start look quiet, so the harness's 90 s default was waited out on every sharded run), one replica keeps
the harness's own start, a packed placement holds the harness and the replicas on chosen CPUs, and each replica
serves metrics on its own loopback port only when passes are counted; each run says where its replicas' threads
ran, read from their log."""

from __future__ import annotations

import argparse
import json
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
    return argparse.Namespace(harness=harness, project=ROOT, n=10, placement=placement, count_passes=False)


def startup(command: list[str]) -> str | None:
    return command[command.index("--startup-timeout") + 1] if "--startup-timeout" in command else None


@pytest.mark.parametrize(("replicas", "sharded", "expected"), [(1, False, None), (1, True, "30"), (3, True, "30")])
def test_a_sharded_run_gives_the_harness_a_start_of_30_seconds(tmp_path: Path, replicas: int, sharded: bool,
                                                              expected: str | None) -> None:
    assert startup(sharded_cpu.harness_command(arguments(tmp_path, "default"), [0] * replicas, sharded)) == expected


def test_three_sharded_replicas_run_as_three_processes_with_the_issues_lease_flags(tmp_path: Path) -> None:
    command = sharded_cpu.harness_command(arguments(tmp_path, "default"), [0, 0, 0], True)
    operator = command[command.index("--operator") + 1]
    assert operator.count(" run ") == 3 and operator.endswith("& wait")
    assert operator.count(sharded_cpu.LEASE_FLAGS) == 3


def test_packed_holds_the_harness_on_the_first_cpu_and_each_replica_on_the_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sharded_cpu.os, "sched_getaffinity", lambda pid: {0, 1})
    command = sharded_cpu.harness_command(arguments(tmp_path, "packed"), [0, 0, 0], True)
    assert command[:3] == ["taskset", "-c", "0"]
    assert command[command.index("--operator") + 1].count("taskset -c 1 ") == 3


def test_each_replica_serves_its_metrics_on_its_own_loopback_port_only_when_passes_are_counted(tmp_path: Path) -> None:
    counted = sharded_cpu.harness_command(arguments(tmp_path, "default"), [41001, 41002, 41003], True)
    operator = counted[counted.index("--operator") + 1]
    assert [f"--metrics-bind-address 127.0.0.1:{port}" in operator for port in (41001, 41002, 41003)] == [True] * 3
    quiet = sharded_cpu.harness_command(arguments(tmp_path, "default"), [0, 0, 0], True)
    assert quiet[quiet.index("--operator") + 1].count("--metrics-bind-address 0 ") == 3


def test_the_cpus_the_replicas_kept_and_moved_to_are_read_from_their_log() -> None:
    def line(logger: str, message: str) -> str:
        return json.dumps({"time": "2026-12-07T22:24:33Z", "level": "info", "logger": logger, "message": message})
    log = "\n".join([
        line(sharded_cpu.PINNING_LOGGER, "keeping the operator's threads on CPU 0 of the 2 it may use (...)"),
        "not JSON: a traceback's line",
        line("engine.runtime", "threads on CPU 7 of the 8: another logger's line"),
        line(sharded_cpu.PINNING_LOGGER, "keeping the operator's threads on CPU 1 of the 2 it may use (...)"),
        line(sharded_cpu.PINNING_LOGGER, "keeping the operator's threads on CPU 0 of the 2 it may use (...)"),
        line(sharded_cpu.PINNING_LOGGER, "moving the operator's threads from CPU 1 to CPU 0: other processes ..."),
    ])
    assert sharded_cpu.cpus_chosen(log) == "0,1,0; moved 1>0"
    assert sharded_cpu.cpus_chosen(line("engine.runtime", "started")) == "none logged"
