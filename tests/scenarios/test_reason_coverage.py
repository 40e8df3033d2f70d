"""Every condition reason a rule file declares is produced by at least one of its kind's scenarios.

A reason counts as produced when a scenario under ``tests/scenarios/<kind>/`` asserts it in a
``conditions:`` assertion (``UserReady: False/ServiceAccountCollision``). A kind is checked when
``rules/<kind>.yaml`` has such a folder beside it.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "rules"
SCENARIOS = ROOT / "tests" / "scenarios"
SCENARIO_KEY = re.compile(r"^scenario:", re.MULTILINE)
STATUS_REASON = re.compile(r"^(?:True|False|Unknown)/(?P<reason>\w+)$")

def _load(path: Path) -> Any:
    """One YAML document, as plain data."""
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def declared_reasons(rule_file: Path) -> list[str]:
    """The reasons a rule file declares under conditions.reasons, in file order."""
    data = _load(rule_file) or {}
    return [str(r) for r in (data.get("conditions") or {}).get("reasons") or []]


def scenario_files(folder: Path) -> list[Path]:
    """The *.yaml files under a folder whose top level has a `scenario:` key (fixtures are not)."""
    files = sorted(folder.rglob("*.yaml"))
    return [p for p in files if SCENARIO_KEY.search(p.read_text(encoding="utf-8"))]


def _assertions(scenario: Any) -> Iterator[Any]:
    """Every assertion of every `expect` step."""
    steps = scenario.get("steps") if isinstance(scenario, dict) else None
    for step in steps or []:
        if isinstance(step, dict) and isinstance(step.get("expect"), list):
            yield from step["expect"]


def asserted_reasons(scenario: Any) -> set[str]:
    """The reasons a scenario's `conditions:` assertions expect (`Status/Reason` values only)."""
    found: set[str] = set()
    for assertion in _assertions(scenario):
        conditions = assertion.get("conditions") if isinstance(assertion, dict) else None
        if not isinstance(conditions, dict):
            continue
        for key, value in conditions.items():
            match = STATUS_REASON.match(value) if key != "ref" and isinstance(value, str) else None
            if match:
                found.add(match.group("reason"))
    return found


def checked_kinds() -> list[str]:
    """Rule files (by kind name) that have a scenario folder of their own."""
    return [p.stem for p in sorted(RULES.glob("*.yaml")) if (SCENARIOS / p.stem).is_dir()]


@pytest.mark.parametrize("kind", checked_kinds())
def test_every_declared_reason_is_asserted_by_a_scenario(kind: str) -> None:
    """Each reason in rules/<kind>.yaml appears in some scenario's conditions assertion."""
    declared = declared_reasons(RULES / f"{kind}.yaml")
    assert declared, f"rules/{kind}.yaml declares no conditions.reasons"
    covered: set[str] = set()
    for path in scenario_files(SCENARIOS / kind):
        covered |= asserted_reasons(_load(path))
    missing = [r for r in declared if r not in covered]
    assert not missing, (
        f"no scenario in tests/scenarios/{kind}/ asserts these reasons of rules/{kind}.yaml "
        f"in a conditions: assertion: {', '.join(missing)}"
    )


def test_asserted_reasons_reads_status_reason_values_of_conditions_assertions() -> None:
    """Only `Status/Reason` values of conditions assertions count; messages, bare statuses and refs do not."""
    scenario = _load_text("""
        scenario: s
        steps:
          - settle: {}
          - expect:
              - conditions:
                  ref: {kind: Thing, namespace: a, name: b}
                  Built: False/Waiting
                  Ready: True
                  Other: Absent
                  Last: Unknown/Pending
              - message: {ref: {kind: Thing, name: b}, type: Built, contains: False/Broken}
              - present: {status: {reason: True/Hidden}}
          - update: {conditions: {Built: True/Sneaky}}
    """)
    assert asserted_reasons(scenario) == {"Waiting", "Pending"}


def test_fixture_files_are_not_scenarios(tmp_path: Path) -> None:
    """A YAML file without a top-level `scenario:` key is not read as a scenario."""
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "world.yaml").write_text("kind: Namespace\n", encoding="utf-8")
    (tmp_path / "one.yaml").write_text("scenario: one\nsteps: []\n", encoding="utf-8")
    assert scenario_files(tmp_path) == [tmp_path / "one.yaml"]


def _load_text(text: str) -> Any:
    """YAML text, dedented, as plain data."""
    return YAML(typ="safe").load(textwrap.dedent(text))
