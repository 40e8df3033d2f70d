"""Every example kind under examples/ takes part in what the shipped kinds go through: it lints clean against its
own CRDs. `engine rbac` derives the TenantSpace example's rights (the built-in kinds it writes have known plurals;
the other examples' children are kinds no CRD here defines). The TenantSpace example carries a copy of the
ControlPlane CRD (`engine test --crds` takes one folder); it stays the project's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.rules.catalog import load_catalog
from engine.rules.lint import lint_paths
from engine.rules.rbac import crd_plurals, kind_rights

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.parent for p in ROOT.glob("examples/*/rules"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_example_lints_clean(example: Path) -> None:
    assert [str(e) for e in lint_paths([example / "rules"], check_crds=True)] == []


def test_tenantspace_grants_what_its_rules_do() -> None:
    """`engine rbac` knows every kind it names: applies and deletes on the target cluster, the patch of the
    ControlPlane, the reads of the hold."""
    example = ROOT / "examples" / "tenantspace"
    rights = kind_rights(load_catalog(example / "rules").values(), crd_plurals([example / "crds"]))
    verbs = {key: set(grant.reasons) for key, grant in rights.grants.items()}
    assert {"get", "list", "watch", "patch", "delete"} <= verbs[("rbac.authorization.k8s.io", "rolebindings")]
    assert {"patch", "delete"} <= verbs[("networking.k8s.io", "networkpolicies")]
    assert {"patch", "delete"} <= verbs[("", "resourcequotas")] & verbs[("", "limitranges")] & verbs[("", "namespaces")]
    assert {"list"} <= verbs[("", "pods")] & verbs[("", "persistentvolumeclaims")]
    assert {"get", "patch"} <= verbs[("c5c3.io", "controlplanes")]


def test_the_tenantspace_controlplane_crd_is_the_projects() -> None:
    copy = yaml.safe_load((ROOT / "examples" / "tenantspace" / "crds" / "c5c3.io_controlplanes.yaml").read_text())
    project = next(doc for doc in yaml.safe_load_all((ROOT / "deploy" / "crds" / "external" /
                                                      "c5c3.io_external.yaml").read_text())
                   if doc["metadata"]["name"] == "controlplanes.c5c3.io")
    assert copy == project
