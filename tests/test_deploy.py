"""The deployment manifests match the code: the operator's flags parse, and its RBAC covers what the rules touch."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import build_parser, main
from engine.operator import Options
from engine.rules.catalog import load_catalog
from engine.rules.rbac import crd_plurals, kind_rights

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy" / "operator"


def documents(folder: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(folder.glob("*.yaml")):
        yield from (d for d in yaml.safe_load_all(path.read_text()) if d)


def granted(folder: Path = DEPLOY) -> dict[tuple[str, str], set[str]]:
    """(group, resource) -> verbs, from the ClusterRole of a deploy folder (the operator's by default)."""
    role = next(d for d in documents(folder) if d["kind"] == "ClusterRole")
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


def test_the_deployment_runs_the_default_worker_count() -> None:
    """The Deployment does not hold the operator below the worker count `engine run` defaults to (and the
    README and the benchmarks assume): it passes no --max-concurrent-reconciles, or the default."""
    deployment = next(d for d in documents(DEPLOY) if d["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    default = build_parser().parse_args(["run"]).max_concurrent_reconciles
    assert build_parser().parse_args(args).max_concurrent_reconciles == default == Options().max_concurrent_reconciles


def rights(rules: Path = ROOT / "rules") -> dict[tuple[str, str], set[str]]:
    """(group, resource) -> verbs `engine rbac` derives from ``rules``."""
    derived = kind_rights(load_catalog(rules).values(), crd_plurals([ROOT / "deploy" / "crds"]))
    return {key: set(grant.reasons) for key, grant in derived.grants.items()}


def test_rbac_manifest_is_the_output_of_engine_rbac(capsys: pytest.CaptureFixture[str]) -> None:
    """deploy/operator/rbac.yaml is what `engine rbac` prints now: a rule change that needs a new right fails here."""
    assert main(["rbac", "--rules", str(ROOT / "rules"), "--crds", str(ROOT / "deploy" / "crds")]) == 0
    printed = capsys.readouterr().out.replace(f"{ROOT / 'rules'}/", "rules/")
    assert printed == (DEPLOY / "rbac.yaml").read_text(), "stale: run `engine rbac > deploy/operator/rbac.yaml`"


def test_rbac_grants_verb_by_verb_what_the_rules_do() -> None:
    """Reads for inputs, create/patch for applied templates, delete for teardown; no update on Secrets."""
    verbs = granted()
    assert verbs[("", "secrets")] == {"get", "list", "watch", "create", "patch", "delete"}
    assert verbs[("c5c3.io", "controlplanes")] == {"get", "list", "watch"}
    assert verbs[("c5c3.io", "keystoneusers/finalizers")] == {"update"}
    assert verbs[("openstack.k-orc.cloud", "users/status")] == {"patch"}
    assert verbs[("external-secrets.io", "secretstores")] == {"get", "list", "watch"}
    assert verbs[("external-secrets.io", "clustersecretstores")] == {"get", "list", "watch"}
    assert verbs[("events.k8s.io", "events")] == {"create", "patch"}


def test_rbac_follows_the_rule_files(tmp_path: Path) -> None:
    """A rule file that stops applying a template loses the write verbs that template needed."""
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    shutil.copytree(ROOT / "templates", tmp_path / "templates")
    before = rights(rules)
    text = (rules / "rabbitmqvhost.yaml").read_text()
    (rules / "rabbitmqvhost.yaml").unlink()
    assert "RabbitmqCluster" in text
    after = rights(rules)
    assert ("rabbitmq.com", "vhosts") in before
    assert ("rabbitmq.com", "vhosts") not in after
    assert ("rabbitmq.com", "rabbitmqclusters") not in after


def test_registration_secrets_and_the_lease_are_namespaced_roles() -> None:
    """The runtime's own rights stay in their namespaces: the Lease and the registration Secrets."""
    roles = {d["metadata"]["name"]: d for d in documents(DEPLOY) if d["kind"] == "Role"}
    lease = roles["c5c3-operator-leader-election"]
    assert lease["metadata"]["namespace"] == "c5c3-system"
    assert lease["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                               "verbs": ["create", "delete", "get", "list", "update", "watch"]}]
    registrations = roles["c5c3-operator-registrations"]
    assert registrations["metadata"]["namespace"] == "c5c3-clusters"
    assert registrations["rules"][0]["resources"] == ["secrets"]


def test_engine_rbac_names_a_missing_rules_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing folder is one line naming the path and the flag, not a traceback."""
    assert main(["rbac", "--rules", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"engine rbac: {tmp_path / 'nope'}: no such file or folder (set --rules)"


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


TARGET = ROOT / "deploy" / "target-cluster"


def test_target_rbac_manifest_is_the_output_of_engine_rbac_target(capsys: pytest.CaptureFixture[str]) -> None:
    """deploy/target-cluster/rbac.yaml is what `engine rbac --target` prints now (stale after a rule change)."""
    assert main(["rbac", "--target", "--rules", str(ROOT / "rules"), "--crds", str(ROOT / "deploy" / "crds")]) == 0
    printed = capsys.readouterr().out.replace(f"{ROOT / 'rules'}/", "rules/")
    assert printed == (TARGET / "rbac.yaml").read_text(), \
        "stale: run `engine rbac --target > deploy/target-cluster/rbac.yaml`"


def test_target_rbac_grants_what_the_rules_do_on_the_orders_cluster_only() -> None:
    """On a target cluster: its orders, the delivered Secret and the inputs read there, Events; nothing the
    rules address on the management cluster only (the external operators' kinds, the ControlPlane)."""
    verbs = granted(TARGET)
    assert verbs[("c5c3.io", "keystoneusers")] == {"get", "list", "watch", "update", "patch"}
    assert verbs[("c5c3.io", "rabbitmqvhosts/status")] == {"get", "patch", "update"}
    assert verbs[("", "secrets")] == {"get", "list", "watch", "create", "patch", "delete"}
    assert verbs[("events.k8s.io", "events")] == {"create", "patch"}
    management_only = {("c5c3.io", "controlplanes"), ("openstack.k-orc.cloud", "users"),
                       ("rabbitmq.com", "vhosts"), ("external-secrets.io", "pushsecrets")}
    assert not management_only & set(verbs)
    assert management_only <= set(granted())
    binding = next(d for d in documents(TARGET) if d["kind"] == "ClusterRoleBinding")
    account = next(d for d in documents(TARGET) if d["kind"] == "ServiceAccount")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": account["metadata"]["namespace"]}]
    assert not any(d["kind"] == "Role" for d in documents(TARGET))  # no Lease, no registrations there


def test_target_rbac_follows_where_a_rule_writes(rules_dir: Callable[..., Path]) -> None:
    """A template applied on the management cluster needs no right on a target; applied on the order's
    cluster, it does."""
    from tests.conftest import WIDGET

    def target_rights(rule: str) -> dict[tuple[str, str], set[str]]:
        rules = rules_dir(rule)
        derived = kind_rights(load_catalog(rules).values(), crd_plurals([]) | {("example.io", "Widget"): "widgets"},
                              target=True)
        return {key: set(grant.reasons) for key, grant in derived.grants.items()}

    assert ("", "configmaps") not in target_rights(WIDGET)
    on_order = WIDGET.swap("        as: part\n", "        as: part\n        cluster: order\n")
    assert target_rights(on_order)[("", "configmaps")] >= {"get", "create", "patch"}
