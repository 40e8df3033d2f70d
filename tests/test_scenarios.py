"""Every scenario file of the project runs as one test case: tests/scenarios/ and examples/*/scenarios/.

A scenario under ``examples/<name>/scenarios/`` runs against that example's own ``rules/``
and ``crds/`` (or ``deploy/crds/``) when it has them, else the project's. The failure message
is the runner's report, exactly as `engine test` prints it.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from engine.testing.scenario import Runner, Setup, load_setup

ROOT = Path(__file__).resolve().parent.parent
SCENARIO_KEY = re.compile(r"^scenario:", re.MULTILINE)


def scenario_files() -> list[Path]:
    """The *.yaml files under the scenario folders whose top level has a `scenario:` key."""
    roots = [ROOT / "tests" / "scenarios", *sorted((ROOT / "examples").glob("*/scenarios"))]
    files = [p for root in roots if root.is_dir() for p in sorted(root.rglob("*.yaml"))]
    return [p for p in files if SCENARIO_KEY.search(p.read_text(encoding="utf-8"))]


def folders_for(path: Path) -> tuple[Path, Path]:
    """The rules and CRD folders a scenario runs against."""
    relative = path.relative_to(ROOT)
    if relative.parts[0] == "examples":
        example = ROOT / "examples" / relative.parts[1]
        rules = example / "rules" if (example / "rules").is_dir() else ROOT / "rules"
        own_crds = [c for c in (example / "crds", example / "deploy" / "crds") if c.is_dir()]
        crds = own_crds[0] if own_crds else ROOT / "deploy" / "crds"
        return rules, crds
    return ROOT / "rules", ROOT / "deploy" / "crds"


@functools.cache
def setup_for(rules: Path, crds: Path) -> Setup:
    """Rules compile once per folder for the whole session."""
    return load_setup(rules, crds)


def rule_files_missing(path: Path, rules: Path) -> list[str]:
    """Rule names the scenario asks for that have no rule file yet (work in progress, not a failure)."""
    match = re.search(r"^rules:\s*\[([^\]]*)\]", path.read_text(encoding="utf-8"), re.MULTILINE)
    names = [n.strip() for n in match.group(1).split(",") if n.strip()] if match else []
    return [n for n in names if not (rules / f"{n}.yaml").is_file()]


@pytest.mark.parametrize("path", scenario_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_scenario(path: Path) -> None:
    """The scenario passes."""
    rules, crds = folders_for(path)
    missing = rule_files_missing(path, rules)
    if missing:
        pytest.skip(f"no rule file yet for {', '.join(missing)} in {rules.relative_to(ROOT)}")
    outcome = Runner(setup_for(rules, crds)).run_file(path, str(path.relative_to(ROOT)))
    assert outcome is not None
    assert outcome.status == "PASS", "\n".join(outcome.report())
