"""A benchmark's ``--project DIR`` runs DIR's code or refuses (a venv borrowed from another checkout is named), and a
relative ``--harness`` still names the harness from the ``--project`` folder the harness runs in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import harness_location  # noqa: E402  (bench/ is no package)
import project_engine  # noqa: E402

VENV = Path(sys.prefix)


def borrowing(folder: Path) -> Path:
    """A checkout-like folder whose .venv is this test run's venv (whose editable install is ROOT's)."""
    folder.mkdir()
    (folder / ".venv").symlink_to(VENV, target_is_directory=True)
    return folder


def test_a_borrowed_venv_is_found_to_run_the_other_checkouts_code(tmp_path: Path) -> None:
    assert project_engine.imported_from(borrowing(tmp_path / "other")) == ROOT / "engine"


def test_a_borrowed_venv_is_refused_with_the_folder_it_runs(tmp_path: Path) -> None:
    other = borrowing(tmp_path / "other")
    with pytest.raises(SystemExit) as refused:
        project_engine.checkout(other)
    assert f"runs the code in {ROOT / 'engine'}, not {other}/engine" in str(refused.value)


def test_a_folder_without_a_venv_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as refused:
        project_engine.checkout(tmp_path)
    assert "no .venv/bin/engine there" in str(refused.value)


def test_the_projects_own_venv_runs_its_code() -> None:
    """The README's test command runs from ROOT's .venv (``scripts/test`` makes it)."""
    assert project_engine.checkout(ROOT / "bench" / "..") == ROOT


def test_a_relative_harness_folder_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "bench.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert harness_location.resolve(Path("harness"), needs="bench.py") == tmp_path.resolve() / "harness"
