"""Every YAML example of the scenario format reference works: a complete scenario runs and passes with
`engine test` against rules/, and a fragment (top-level keys, steps, or assertions) is read by the scenario loader
without an error, so the page cannot describe a form the code does not accept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main
from offline.scenario.loader import ASSERTION_KEYS, load_scenario
from tests.docs.blocks import ROOT, Block, blocks

PAGE = ROOT / "docs/reference/scenarios.md"
FIXTURES = ROOT / "tests/scenarios/keystoneuser/fixtures"
EXAMPLES = list(blocks(PAGE, "yaml"))


def scenario_of(example: Any) -> tuple[dict[str, Any], bool]:
    """The example as a scenario file, and whether it is complete (a fragment is wrapped in a minimal one)."""
    if isinstance(example, dict) and "scenario" in example:
        return example, True
    frame: dict[str, Any] = {"scenario": "a fragment of docs/reference/scenarios.md", "clusters": ["edge-1"]}
    if isinstance(example, dict):
        return {**frame, **example, "steps": example.get("steps", [{"settle": {}}])}, False
    assert isinstance(example, list), "an example is a mapping or a list"
    assertions = any(isinstance(item, dict) and set(item) & set(ASSERTION_KEYS) for item in example)
    return {**frame, "steps": [{"expect": example}] if assertions else example}, False


def test_the_page_has_complete_scenarios_and_fragments() -> None:
    kinds = [scenario_of(yaml.safe_load(block.body))[1] for block in EXAMPLES]
    assert True in kinds and False in kinds


@pytest.mark.parametrize("block", EXAMPLES, ids=str)
def test_a_scenario_example_works(block: Block, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario, complete = scenario_of(yaml.safe_load(block.body))
    (tmp_path / "fixtures").symlink_to(FIXTURES)
    path = tmp_path / "example.yaml"
    path.write_text(block.body if complete else yaml.safe_dump(scenario, sort_keys=False))
    if complete:
        code = main(["test", str(path), "--rules", str(ROOT / "rules"), "--crds", str(ROOT / "deploy/crds")])
        assert code == 0, f"{block}: the example scenario fails:\n{capsys.readouterr().out[-3000:]}"
    else:
        assert load_scenario(path) is not None  # raises ScenarioErrors, naming every mistake, when invalid
