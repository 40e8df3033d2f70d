"""The scenarios of the test kinds under tests/rulelab/<lab>/: each lab holds its own rules/, templates/,
crds/ and scenarios/ (a kind written to exercise rule-language constructs the shipped kinds use only in part).
Each scenario runs as one test case, as `engine test --rules tests/rulelab/<lab>/rules --crds
tests/rulelab/<lab>/crds tests/rulelab/<lab>/scenarios` runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_scenarios import check_scenario

ROOT = Path(__file__).resolve().parent.parent
LABS = ROOT / "tests" / "rulelab"


def lab_scenarios() -> list[Path]:
    return sorted(LABS.glob("*/scenarios/*.yaml"))


def test_every_lab_has_scenarios() -> None:
    assert lab_scenarios(), "no scenario under tests/rulelab/*/scenarios"


@pytest.mark.parametrize("path", lab_scenarios(), ids=lambda p: str(p.relative_to(ROOT)))
def test_lab_scenario(path: Path) -> None:
    """The scenario passes against its lab's own rules and CRDs."""
    lab = path.parent.parent
    check_scenario(path, lab / "rules", lab / "crds", str(path.relative_to(ROOT)))
