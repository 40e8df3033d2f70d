"""No import circles: the acyclic contract of pyproject.toml, as configured, refuses a circle between modules.

The contract runs in ``scripts/test`` (``lint-imports``) on the real tree; this test runs the same contract on a
small package of its own, so a contract that stopped looking (a narrowed ancestor, type-only imports left out)
fails here.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def acyclic_contract() -> dict[str, object]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["type"] == "acyclic_siblings"]
    assert contract["ancestors"] == ["engine"]
    return dict(contract)


def run_contract(tmp_path: Path, modules: dict[str, str]) -> subprocess.CompletedProcess[str]:
    package = tmp_path / "engine" / "expr"
    package.mkdir(parents=True)
    (tmp_path / "engine" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    for name, text in modules.items():
        (package / f"{name}.py").write_text(text)
    contract = acyclic_contract()
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_package = engine\n\n[importlinter:contract:acyclic]\n"
        f"name = {contract['name']}\ntype = acyclic_siblings\nancestors = engine\n"
    )
    return subprocess.run([str(LINT_IMPORTS), "--config", ".importlinter", "--no-cache"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(tmp_path)})


def test_a_circle_through_a_type_only_import_breaks_the_contract(tmp_path: Path) -> None:
    result = run_contract(tmp_path, {
        "library": "from engine.expr import parts\n",
        "parts": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from engine.expr import library\n",
    })
    assert result.returncode != 0, result.stdout
    assert "No cycles are allowed in engine.expr" in result.stdout


def test_a_registry_both_sides_import_keeps_it(tmp_path: Path) -> None:
    result = run_contract(tmp_path, {
        "registry": "REGISTRY = {}\n",
        "library": "from engine.expr import parts, registry\n",
        "parts": "from engine.expr import registry\n",
    })
    assert result.returncode == 0, result.stdout
