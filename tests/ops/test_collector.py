"""``engine run`` tunes the garbage collector for a process that runs only the operator (decision 0046, issue 11:
CPU per order): the start-up objects are frozen out of the cyclic collector's walks and young collections run
less often; a rule reload gives the frozen objects back; an operator run inside another process (tests, tools)
leaves that process's collector alone."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import engine.operator
from engine.cli import main


def in_fresh_interpreter(code: str) -> str:
    """What ``code`` prints in a new interpreter (the collector's settings are per process)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          check=True)
    return done.stdout.strip()


def test_the_operator_s_own_process_freezes_its_start_up_objects_and_collects_young_ones_less_often() -> None:
    printed = in_fresh_interpreter("""
        import gc
        from engine.operator import YOUNG_COLLECTION_THRESHOLD, thaw_collector, tune_collector
        before = gc.get_threshold()
        tune_collector()
        print(before[0], gc.get_freeze_count() > 1000, gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, *before[1:]))
        thaw_collector()
        print(gc.get_freeze_count())
    """)
    assert printed.splitlines() == ["700 True True", "0"]


def test_engine_run_tunes_the_collector_only_as_its_own_process(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(engine.operator, "run", lambda options, **kwargs: seen.append(kwargs) or 0)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    assert main(["run", "--kubeconfig", str(kubeconfig), "--rules", "rules"]) == 0
    assert seen == [{"own_process": True}]
    monkeypatch.undo()
    assert engine.operator.run.__kwdefaults__["own_process"] is False  # in-process callers keep their collector
