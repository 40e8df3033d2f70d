"""`engine test`: find scenario files, run each in a fresh world, print one line each and a summary.

Output: ``PASS <file> (<seconds>s)`` or ``FAIL <file> (<seconds>s)`` followed by the
failing step, assertion and difference; an invalid file prints ``file:line:col: what``
lines; last, ``N passed, M failed`` alone on a line (invalid files count as failed). A rule file that
does not compile is reported first, as ``engine lint`` reports it, and counts as failed; the scenarios of
the other kinds still run.
Exit status: 0 all passed, 1 any failed, 2 any file invalid (a scenario file, or a rule file that does not
compile).
"""

from __future__ import annotations

import argparse
import logging
import time
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

import yaml

from engine.rules.crd_lint import crd_file_errors
from offline.scenario import model as m
from offline.scenario.loader import load_scenario
from offline.scenario.model import ScenarioError, ScenarioErrors
from offline.scenario.resolve import resolve
from offline.scenario.steps import StepFailed, run_step
from offline.scenario.world import Setup, World, open_world

__all__ = ["Outcome", "Runner", "SetupError", "command", "discover", "load_setup", "run_paths"]

DEFAULT_RULES = Path("rules")
DEFAULT_CRDS = Path("deploy/crds")
RECENT_WARNINGS = 5
TRACEBACK_LINES = 20

Status = Literal["PASS", "FAIL", "INVALID"]


class SetupError(Exception):
    """The rules or CRDs cannot be loaded: nothing can run (exit 2)."""


@dataclass
class Outcome:
    """One scenario file's result and the lines that explain a failure."""

    path: str
    status: Status
    seconds: float = 0.0
    details: list[str] = field(default_factory=list)

    def report(self) -> list[str]:
        if self.status == "INVALID":
            return list(self.details)
        return [f"{self.status} {self.path} ({self.seconds:.2f}s)", *(f"  {line}" for line in self.details)]


def load_setup(rules_dir: Path | None = None, crds_dir: Path | Sequence[Path] | None = None,
               templates_dir: Path | None = None, *, partial: bool = False) -> Setup:
    """Compile the rules and read the CRDs (a folder or several); a default folder that does not exist means none.

    ``partial`` (``engine test``): a rule file that does not compile is left out of the catalog and kept, with
    its errors, in ``Setup.broken``, so the other kinds' scenarios still run; else it fails the setup."""
    catalog, broken = _load_catalog(rules_dir, templates_dir, partial)
    return Setup(catalog=catalog, crds=tuple(_load_crds(crds_dir)), broken=broken)


def _load_catalog(rules_dir: Path | None, templates_dir: Path | None,
                  partial: bool) -> tuple[Any, dict[str, tuple[str, ...]]]:
    path = rules_dir or DEFAULT_RULES
    if not path.exists():
        if rules_dir is None:
            return {}, {}
        raise SetupError(f"{path}: no such rules folder or file")
    # The compiler is heavy: loaded only to run scenarios.
    from engine.rules.catalog import catalog_of, load_catalog, rule_files
    from engine.rules.compile import compile_kind
    from engine.rules.errors import RuleErrors

    try:
        if not partial:
            return load_catalog(path, templates_dir=templates_dir), {}
        root = path if path.is_dir() else path.parent
        compiled, broken = [], {}
        for file in rule_files([path]):
            try:
                compiled.append((file, compile_kind(file, rules_dir=root,
                                                    templates_root=templates_dir or root.parent / "templates")))
            except RuleErrors as err:
                broken[file.stem] = tuple(str(error) for error in err.errors)
        return catalog_of(compiled), broken
    except Exception as exc:
        raise SetupError(str(exc)) from None


def _load_crds(crds_dir: Path | Sequence[Path] | None) -> list[dict[str, Any]]:
    given = [crds_dir] if isinstance(crds_dir, Path) else list(crds_dir or ())
    files: list[Path] = []
    for path in given or [DEFAULT_CRDS]:
        if not path.exists():
            if not given:
                return []
            raise SetupError(f"{path}: no such CRD folder or file")
        # Every YAML file below the folder: deploy/crds/external/ holds the stand-ins of the kinds other
        # controllers serve, so the children a rule writes are admitted against their schemas too.
        files += sorted(f for f in path.rglob("*") if f.suffix in (".yaml", ".yml") and f.is_file()) \
            if path.is_dir() else [path]
    crds: list[dict[str, Any]] = []
    for file in files:
        try:
            docs = list(yaml.safe_load_all(file.read_text(encoding="utf-8")))
        except (OSError, yaml.YAMLError) as exc:
            raise SetupError(f"{file}: cannot read the CRD: {exc}") from None
        crds.extend(d for d in docs if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition")
    # A CRD the API server would refuse stops every scenario at its start: said once, at its line, before any run.
    refused = [error for file in files for error in crd_file_errors(file)]
    if refused:
        raise SetupError("\n".join(str(error) for error in refused))
    return crds


def discover(paths: Iterable[Path]) -> tuple[list[Path], list[str]]:
    """The YAML files under the given files and folders (recursively, ``*.yaml``), and the paths not found."""
    files: list[Path] = []
    missing: list[str] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.yaml") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            missing.append(f"{path}: no such file or folder")
    return files, missing


class Runner:
    """Runs scenario files against one Setup."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup

    def run_file(self, path: Path, display: str | None = None) -> Outcome | None:
        """The outcome of the scenario in ``path``; None when the file is a fixture."""
        shown = display if display is not None else str(path)
        started = time.perf_counter()
        try:
            scenario = load_scenario(path, shown)
            if scenario is None:
                return None
            resolved = resolve(scenario, self.setup.catalog, self.setup.broken)
        except ScenarioErrors as exc:
            return Outcome(shown, "INVALID", time.perf_counter() - started, [str(e) for e in exc.errors])
        outcome = self.run(scenario, resolved)
        outcome.seconds = time.perf_counter() - started
        return outcome

    def run(self, scenario: m.Scenario, resolved: Any) -> Outcome:
        try:
            with open_world(scenario, resolved, self.setup) as world:
                return self._steps(world)
        except ScenarioError as exc:
            return Outcome(scenario.path, "INVALID", details=[str(exc)])
        except Exception as exc:  # the engine raised while the world was built or started: a failure, not a crash
            return Outcome(scenario.path, "FAIL", details=[f"starting the operator raised {type(exc).__name__}: {exc}",
                                                           *_traceback(exc, None)])

    def _steps(self, world: World) -> Outcome:
        for step in world.scenario.steps:
            where = f" on cluster {step.cluster!r}" if step.cluster else ""
            header = f"step {step.index} ({step.verb}{where}) at {step.pos}:"
            try:
                run_step(world, step)
            except StepFailed as exc:
                return Outcome(world.scenario.path, "FAIL", details=[header, *(f"  {line}" for line in exc.lines),
                                                                     *_recent_warnings(world)])
            except Exception as exc:
                lines = [header, f"  raised {type(exc).__name__}: {world.leaks.redact(str(exc))}",
                         *(f"  {line}" for line in _traceback(exc, world))]
                return Outcome(world.scenario.path, "FAIL", details=[*lines, *_recent_warnings(world)])
        return Outcome(world.scenario.path, "PASS")


def _traceback(exc: BaseException, world: World | None) -> list[str]:
    lines = "".join(traceback.format_exception(exc)).rstrip().splitlines()
    if len(lines) > TRACEBACK_LINES:
        lines = ["...", *lines[-TRACEBACK_LINES:]]
    return [world.leaks.redact(line) for line in lines] if world is not None else lines


def _recent_warnings(world: World) -> list[str]:
    recent = world.leaks.logs.recent(logging.WARNING, RECENT_WARNINGS)
    if not recent:
        return []
    shown = [world.leaks.redact(text).splitlines()[0][:300] for text in recent if text]
    return ["the operator's last warnings:", *(f"  {line}" for line in shown)]


def run_paths(paths: Sequence[Path], setup: Setup, out: TextIO) -> int:
    """Run every scenario under ``paths``, print the report, return the exit status."""
    files, missing = discover(paths)
    for line in [*missing, *(line for lines in setup.broken.values() for line in lines)]:
        print(line, file=out)
    runner = Runner(setup)
    passed, failed = 0, len(setup.broken)  # a rule file that did not compile counts as failed
    invalid = bool(missing or setup.broken)
    for file in files:
        outcome = runner.run_file(file)
        if outcome is None:
            continue
        for line in outcome.report():
            print(line, file=out)
        out.flush()
        if outcome.status == "PASS":
            passed += 1
        else:
            failed += 1
            invalid = invalid or outcome.status == "INVALID"
    print(f"{passed} passed, {failed} failed", file=out)
    return 2 if invalid else (1 if failed else 0)


def command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """The ``engine test`` subcommand (arguments from ``engine.cli``)."""
    import sys

    stream = out if out is not None else sys.stdout
    try:
        setup = load_setup(args.rules, args.crds, args.templates, partial=True)
    except SetupError as exc:
        print(str(exc), file=stream)
        return 2
    return run_paths(args.paths, setup, stream)
