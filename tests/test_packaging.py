"""The package as installed: every imported distribution is declared, and the lab is found by entry point.

The operator (``engine``) never imports its lab (``simulators``: the embedded clusters and the demo);
``engine run`` without a cluster and ``engine demo`` find them through the ``c5c3_order_engine.lab``
entry points, so an image without the lab still runs the operator. import-linter checks the arrows.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import entry_points, packages_distributions
from pathlib import Path

import pytest

from engine import cli
from engine.rules import crd_lint

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
OWN = {"engine", "offline", "simulators"}


def imported_top_levels(package: str) -> set[str]:
    """Top-level module names imported anywhere in a package (lazy imports in functions included)."""
    return {name for path in (ROOT / package).rglob("*.py") for name in imported_top_levels_of(path)}


def imported_top_levels_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def declared() -> set[str]:
    """Normalised distribution names of `[project] dependencies`."""
    return {_normal(re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]) for spec in PYPROJECT["project"]["dependencies"]}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


TEST_TOOLS = {"cryptography": "offline/realkube"}
"""Imports of the test tier alone, declared in the ``test`` extra, each only below the folder named: the real
API servers' certificates are made by the tests' launcher, never by the operator or the lab."""


def test_every_imported_distribution_is_declared() -> None:
    """What engine/ and simulators/ import is the standard library, ourselves, or a declared dependency."""
    by_module = packages_distributions()
    third_party = {n for p in OWN for n in imported_top_levels(p)} - set(sys.stdlib_module_names) - OWN
    undeclared = sorted(f"{name} ({', '.join(by_module.get(name, ['no distribution']))})"
                        for name in third_party - set(TEST_TOOLS)
                        if not {_normal(d) for d in by_module.get(name, [])} & declared())
    assert undeclared == []


@pytest.mark.parametrize("module", sorted(TEST_TOOLS))
def test_a_test_tool_is_declared_as_one_and_imported_only_by_its_tier(module: str) -> None:
    test_extra = {_normal(re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0])
                  for spec in PYPROJECT["project"]["optional-dependencies"]["test"]}
    assert _normal(module) in test_extra
    importers = sorted(str(path.relative_to(ROOT)) for p in OWN for path in (ROOT / p).rglob("*.py")
                       if module in imported_top_levels_of(path))
    assert importers and all(path.startswith(TEST_TOOLS[module] + "/") for path in importers), importers


def test_the_lab_is_found_by_entry_point() -> None:
    """The embedded clusters, the demo and the world on real servers are the lab's entry points, not imports of the
    engine."""
    found = {ep.name: ep.value for ep in entry_points(group=cli.LAB_ENTRY_POINTS)}
    assert found == {"embedded": "simulators.embedded:main", "demo": "simulators.demo:main",
                     "real-world": "simulators.real_world:real_world"}
    assert PYPROJECT["project"]["entry-points"][cli.LAB_ENTRY_POINTS] == found


def test_the_offline_world_is_found_by_entry_point() -> None:
    """`engine test`, `engine render` and the CRD check of `engine lint` are the offline world's entry points, not
    imports of the engine."""
    found = {ep.name: ep.value for ep in entry_points(group=cli.OFFLINE_ENTRY_POINTS)}
    assert found == {"test": "offline.scenario.runner:command", "render": "offline.render:command",
                     "crd-check": "offline.cluster.crd_check"}
    assert crd_lint.OFFLINE_ENTRY_POINTS == cli.OFFLINE_ENTRY_POINTS
    assert PYPROJECT["project"]["entry-points"][cli.OFFLINE_ENTRY_POINTS] == found


def test_without_the_lab_engine_demo_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An install without the lab refuses `engine demo` with a sentence and exit status 2, no traceback."""
    monkeypatch.setattr(cli, "LAB_ENTRY_POINTS", "c5c3_order_engine.no-such-lab")
    assert cli.main(["demo"]) == 2
    assert "engine demo needs the lab (package simulators), which this install leaves out" in capsys.readouterr().err


def test_without_the_offline_world_engine_lint_crds_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An install without the offline world refuses `engine lint --crds` with one line and exit status 2; lint
    without --crds leaves the CRD check out."""
    monkeypatch.setattr(crd_lint, "OFFLINE_ENTRY_POINTS", "c5c3_order_engine.no-such-offline")
    crd_lint.crd_check.cache_clear()
    try:
        assert cli.main(["lint", "--crds", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and "Traceback" not in err
        assert "engine lint --crds needs the CRD check of the test harness (package offline)" in err
        assert cli.main(["lint"]) == 0
    finally:
        crd_lint.crd_check.cache_clear()


def contract_modules() -> set[str]:
    """Every module an import-linter contract of pyproject.toml names."""
    named: set[str] = set()
    for contract in PYPROJECT["tool"]["importlinter"]["contracts"]:
        for key in ("layers", "modules", "source_modules", "forbidden_modules"):
            for entry in contract.get(key, []):
                named.update(part.strip() for part in entry.split("|"))
    return named


@pytest.mark.parametrize("package", sorted(OWN))
def test_every_module_of_the_root_packages_is_fenced(package: str) -> None:
    """Each top-level module and subpackage of engine/ and simulators/ sits in some import-linter contract."""
    modules = {f"{package}.{p.stem}" for p in (ROOT / package).glob("*.py") if p.stem != "__init__"}
    modules |= {f"{package}.{p.parent.name}" for p in (ROOT / package).glob("*/__init__.py")}
    assert sorted(modules - contract_modules()) == []
