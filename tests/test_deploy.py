"""The deployment manifests match the code: the operator's flags parse, and its RBAC covers what the rules touch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import build_parser
from engine.rules.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy" / "operator"
CORE_PLURALS = {"Secret": "secrets", "ConfigMap": "configmaps", "Namespace": "namespaces", "Lease": "leases"}


def documents(folder: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(folder.glob("*.yaml")):
        yield from (d for d in yaml.safe_load_all(path.read_text()) if d)


def plurals() -> dict[tuple[str, str], str]:
    """(group, kind) -> plural, from our CRDs and the external kinds' stand-ins."""
    found = {("", kind): plural for kind, plural in CORE_PLURALS.items()}
    for folder in (ROOT / "deploy" / "crds", ROOT / "deploy" / "crds" / "external"):
        for crd in documents(folder):
            found[(crd["spec"]["group"], crd["spec"]["names"]["kind"])] = crd["spec"]["names"]["plural"]
    return found


def granted() -> dict[tuple[str, str], set[str]]:
    """(group, resource) -> verbs, from the ClusterRole."""
    role = next(d for d in documents(DEPLOY) if d["kind"] == "ClusterRole")
    verbs: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                verbs.setdefault((group, resource), set()).update(rule["verbs"])
    return verbs


def test_deployment_arguments_are_engine_run_flags() -> None:
    """Every argument the Deployment passes is a flag `engine run` accepts."""
    deployment = next(d for d in documents(DEPLOY) if d["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    parsed = build_parser().parse_args(args)
    assert parsed.command == "run"
    assert parsed.leader_elect is True


TEMPLATED_KINDS: dict[str, tuple[str, ...]] = {
    "{{ storeKind }}": ("SecretStore", "ClusterSecretStore"),
}
"""The kinds a templated `kind:` of an input can render to (rules/common/order.yaml's storeKind, whose other
values the rules refuse before reading), so the RBAC check covers them too."""


def kinds_of(kind: Any) -> tuple[str, ...]:
    """The kinds an input's `kind:` names: itself when constant, else its entry in TEMPLATED_KINDS."""
    if kind.is_constant:
        return (kind.source,)
    assert kind.source in TEMPLATED_KINDS, f"templated kind {kind.source!r}: list the kinds it renders to"
    return TEMPLATED_KINDS[kind.source]


def uncovered(verbs: dict[tuple[str, str], set[str]]) -> list[str]:
    """What the rules read or write that the granted verbs do not cover."""
    names = plurals()
    missing: list[str] = []

    def need(api_version: str, kind: str, wanted: set[str]) -> None:
        group = api_version.rpartition("/")[0]
        plural = names.get((group, kind))
        if plural is None:
            missing.append(f"{kind}.{api_version}: no CRD names its plural")
            return
        lacking = wanted - verbs.get((group, plural), set())
        if lacking:
            missing.append(f"{plural}.{group or 'core'}: {sorted(lacking)}")

    for kind in load_catalog(ROOT / "rules").values():
        need(kind.api_version, kind.kind, {"get", "list", "watch", "update", "patch"})
        for watch in kind.watches:
            need(watch.api_version, watch.kind, {"get", "list", "watch"})
        for item in kind.inputs.values():
            if item.verb == "served":
                continue
            assert item.api_version.is_constant, f"templated apiVersion {item.api_version.source!r}"
            for input_kind in kinds_of(item.kind):
                need(item.api_version.source, input_kind, {"get", "list", "watch"})
        for action in kind.teardown.actions:
            if action.op in ("patch", "delete"):
                need(action.api_version, action.kind, {"get", "list", "watch", "create", "patch", "delete"})
    return missing


def test_rbac_covers_every_kind_the_rules_read_and_write() -> None:
    """Reads (get/list/watch) for every kind read or watched; writes for every kind swept or delivered."""
    assert uncovered(granted()) == []


@pytest.mark.parametrize("plural", ["secretstores", "clustersecretstores"])
def test_rbac_check_sees_the_kinds_a_templated_input_reads(plural: str) -> None:
    """Without the rights to read a store kind that `kind: "{{ storeKind }}"` can name, the check fails."""
    verbs = {key: set(v) for key, v in granted().items() if key != ("external-secrets.io", plural)}
    assert uncovered(verbs) == [f"{plural}.external-secrets.io: ['get', 'list', 'watch']"] * 2


@pytest.mark.parametrize("kind", ["Deployment", "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Role"])
def test_manifests_are_present(kind: str) -> None:
    """The operator ships with each of its manifests."""
    assert any(d["kind"] == kind for d in documents(DEPLOY))


def test_containerfile_ships_rules_templates_and_crds() -> None:
    """The image carries what `engine run` reads at start (relative to its working directory)."""
    text = (ROOT / "deploy" / "Containerfile").read_text()
    for folder in ("rules/", "templates/", "deploy/crds/"):
        assert f"COPY {folder}" in text
    assert 'ENTRYPOINT ["engine"]' in text
