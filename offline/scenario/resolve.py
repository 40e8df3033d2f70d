"""Checks a loaded scenario against the rule catalog: rule names, order kinds, apiVersions.

Runs before the world is built so that a reference the runner cannot place is an invalid
scenario (exit 2, ``file:line:col``), never a failure halfway through.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from offline.scenario import model as m
from offline.scenario.model import ScenarioError, ScenarioErrors

__all__ = ["CORE_KINDS", "Resolved", "resolve", "rule_name"]

CORE_KINDS: dict[str, str] = {
    "Secret": "v1",
    "ConfigMap": "v1",
    "Namespace": "v1",
    "Lease": "coordination.k8s.io/v1",
}
"""Core kinds a reference may name without apiVersion."""


def rule_name(kind: Any) -> str:
    """The rule-file name of a compiled kind (``widget`` for rules/widget.yaml), as ``rules: [...]`` names it."""
    name = getattr(kind, "name", None)
    return str(name) if name else str(kind.kind).lower()


@dataclass(frozen=True)
class Resolved:
    """The scenario's share of the catalog and the apiVersion of every reference."""

    catalog: Mapping[str, Any]
    api_versions: Mapping[m.Ref, str]

    def api_version(self, ref: m.Ref) -> str:
        return ref.api_version or self.api_versions[ref]

    def kind_key(self, ref: m.Ref) -> str:
        return f"{self.api_version(ref)}/{ref.kind}"


def resolve(scenario: m.Scenario, catalog: Mapping[str, Any], broken: Collection[str] = ()) -> Resolved:
    """The scenario's catalog and reference apiVersions; ScenarioErrors for what cannot be placed (``broken``:
    the names of rule files that did not compile, left out of ``catalog``)."""
    errors: list[ScenarioError] = []
    subset = _subset(scenario, catalog, errors, broken)
    candidates = _candidates(scenario, subset)
    versions: dict[m.Ref, str] = {}
    for step in scenario.steps:
        for ref in step.refs():
            if ref.api_version is not None:
                continue
            found = sorted(candidates.get(ref.kind, ()))
            if len(found) == 1:
                versions[ref] = found[0]
            elif not found:
                errors.append(ScenarioError(ref.pos, f"cannot tell the apiVersion of kind {ref.kind!r}: it is "
                                            "not a loaded, core or scenario kind; write `apiVersion`"))
            else:
                errors.append(ScenarioError(ref.pos, f"kind {ref.kind!r} is ambiguous ({' or '.join(found)}); "
                                            "write `apiVersion`"))
        if isinstance(step, m.Reconcile) and step.ref is not None:
            api_version = step.ref.api_version or versions.get(step.ref)
            key = f"{api_version}/{step.ref.kind}"
            if api_version is not None and key not in subset:
                loaded = ", ".join(sorted(subset)) or "none"
                errors.append(ScenarioError(step.ref.pos, f"{key} is not an order kind of the loaded rules "
                                            f"(loaded: {loaded})"))
    if errors:
        raise ScenarioErrors(errors)
    return Resolved(subset, versions)


def _subset(scenario: m.Scenario, catalog: Mapping[str, Any], errors: list[ScenarioError],
            broken: Collection[str]) -> Mapping[str, Any]:
    if scenario.rules is None:
        return catalog
    by_name = {rule_name(kind): key for key, kind in catalog.items()}
    keys = []
    for name, pos in scenario.rules:
        if name in by_name:
            keys.append(by_name[name])
        elif name in broken:
            errors.append(ScenarioError(pos, f"rule file {name!r} did not compile (its errors are above)"))
        else:
            known = ", ".join(sorted(by_name)) or "none"
            errors.append(ScenarioError(pos, f"no rule file named {name!r} (rule files: {known})"))
    only = getattr(catalog, "only", None)
    if callable(only):
        wanted = [rule_name(catalog[key]) for key in keys]
        subset: Mapping[str, Any] = only(wanted)
        return subset
    return {key: catalog[key] for key in keys}


def _candidates(scenario: m.Scenario, catalog: Mapping[str, Any]) -> dict[str, set[str]]:
    """Kind -> apiVersions a reference without apiVersion may mean."""
    out: dict[str, set[str]] = {}

    def add(api_version: str, kind: str) -> None:
        out.setdefault(kind, set()).add(api_version)

    for kind, api_version in CORE_KINDS.items():
        add(api_version, kind)
    for compiled in catalog.values():
        add(compiled.api_version, compiled.kind)
        for watch in getattr(compiled, "watches", ()):
            add(watch.api_version, watch.kind)
    for seed in scenario.objects:
        add(str(seed.obj["apiVersion"]), str(seed.obj["kind"]))
    for step in scenario.steps:
        if isinstance(step, m.Create) and step.ref is not None and step.ref.api_version:
            add(step.ref.api_version, step.ref.kind)
    return out
