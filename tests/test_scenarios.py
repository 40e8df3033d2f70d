"""Every scenario file of the project runs as one test case: tests/scenarios/ and examples/*/scenarios/.

A scenario under ``examples/<name>/scenarios/`` runs against that example's own ``rules/``
and ``crds/`` (or ``deploy/crds/``) when it has them, else the project's; an example's own CRDs come with the
project's stand-ins for external kinds (``deploy/crds/external/``: the ControlPlane), as its README's
`engine test --crds ... --crds deploy/crds/external` installs them. The failure message is the runner's report,
exactly as `engine test` prints it.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from offline.scenario import Runner, Setup, load_setup

ROOT = Path(__file__).resolve().parent.parent
SCENARIO_KEY = re.compile(r"^scenario:", re.MULTILINE)


def scenario_files() -> list[Path]:
    """The *.yaml files under the scenario folders whose top level has a `scenario:` key."""
    roots = [ROOT / "tests" / "scenarios", *sorted((ROOT / "examples").glob("*/scenarios"))]
    files = [p for root in roots if root.is_dir() for p in sorted(root.rglob("*.yaml"))]
    return [p for p in files if SCENARIO_KEY.search(p.read_text(encoding="utf-8"))]


CrdFolders = Path | tuple[Path, ...]


def folders_for(path: Path) -> tuple[Path, CrdFolders]:
    """The rules folder and the CRD folders a scenario runs against."""
    relative = path.relative_to(ROOT)
    if relative.parts[0] == "examples":
        example = ROOT / "examples" / relative.parts[1]
        rules = example / "rules" if (example / "rules").is_dir() else ROOT / "rules"
        own_crds = [c for c in (example / "crds", example / "deploy" / "crds") if c.is_dir()]
        crds = (own_crds[0], ROOT / "deploy" / "crds" / "external") if own_crds else ROOT / "deploy" / "crds"
        return rules, crds
    return ROOT / "rules", ROOT / "deploy" / "crds"


@functools.cache
def setup_for(rules: Path, crds: CrdFolders) -> Setup:
    """Rules compile once per folder for the whole session."""
    return load_setup(rules, crds)


def check_scenario(path: Path, rules: Path, crds: CrdFolders, display: str) -> None:
    """The scenario passes; one that names a rule file that does not exist is invalid, so it fails too."""
    outcome = Runner(setup_for(rules, crds)).run_file(path, display)
    assert outcome is not None, f"{display} has no top-level `scenario:` key"
    assert outcome.status == "PASS", "\n".join(outcome.report())


@pytest.mark.parametrize("path", scenario_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_scenario(path: Path) -> None:
    """The scenario passes."""
    rules, crds = folders_for(path)
    check_scenario(path, rules, crds, str(path.relative_to(ROOT)))


def test_a_scenario_whose_rule_file_is_gone_fails(tmp_path: Path) -> None:
    """Renaming a rule file fails its scenarios (never skips them), with the position of the name."""
    scenario = tmp_path / "renamed.yaml"
    scenario.write_text("scenario: a rule file was renamed\nrules: [keystoneuser, widget]\nsteps: []\n")
    with pytest.raises(AssertionError, match=r"renamed.yaml:2:23: no rule file named 'widget'"):
        check_scenario(scenario, ROOT / "rules", ROOT / "deploy" / "crds", "renamed.yaml")
