"""Scenario tests (`engine test`): YAML files that build a world, drive the operator, and assert.

The contract is the project's scenario format (docs and ``design/scenarios.md``). Modules:
``loader`` (file -> model, with positions), ``resolve`` (against the rule catalog), ``world``
(clusters, clock, metrics, the operator), ``steps``, ``assertions``, ``match`` (``present``),
``leaks`` (``noSecretLeak``), ``report`` (diffs that never show Secret data), ``runner`` (CLI).
"""

from offline.scenario.loader import load_scenario
from offline.scenario.model import Scenario, ScenarioError, ScenarioErrors
from offline.scenario.runner import Outcome, Runner, SetupError, command, discover, load_setup, run_paths
from offline.scenario.world import Setup

__all__ = [
    "Outcome",
    "Runner",
    "Scenario",
    "ScenarioError",
    "ScenarioErrors",
    "Setup",
    "SetupError",
    "command",
    "discover",
    "load_scenario",
    "load_setup",
    "run_paths",
]
