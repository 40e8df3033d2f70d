"""Every example kind under examples/ takes part in what the shipped kinds go through: it lints clean against its
own CRDs and the project's stand-ins for external kinds (deploy/crds/external/: the ControlPlane the TenantSpace
example writes), and the commands its README gives pass. `engine rbac` derives the TenantSpace example's rights
(the built-in kinds it writes have known plurals; the other examples' children are kinds no CRD here defines)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine.rules.catalog import load_catalog
from engine.rules.lint import lint_paths
from engine.rules.rbac import crd_plurals, kind_rights

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.parent for p in ROOT.glob("examples/*/rules"))
EXTERNAL_CRDS = ROOT / "deploy" / "crds" / "external"
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def crd_names(folder: Path) -> set[str]:
    """The metadata.name of every CRD below a folder."""
    return {doc["metadata"]["name"] for path in folder.rglob("*.yaml")
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_example_lints_clean(example: Path) -> None:
    found = lint_paths([example / "rules"], crds=[example / "crds", EXTERNAL_CRDS], check_crds=True)
    assert [str(e) for e in found] == []


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_example_carries_no_copy_of_a_project_crd(example: Path) -> None:
    """A CRD the project ships is passed as a second --crds, never copied (a copy drifts)."""
    assert crd_names(example / "crds") & crd_names(ROOT / "deploy" / "crds") == set()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_readme_commands_pass(example: Path) -> None:
    """Each `engine ...` line of the README's sh blocks runs from the project's root and exits 0."""
    blocks = SH_BLOCK.findall((example / "README.md").read_text(encoding="utf-8"))
    commands = [shlex.split(line) for block in blocks for line in block.splitlines() if line.startswith("engine ")]
    assert commands, f"{example.name}/README.md gives no engine command"
    for command in commands:
        run = subprocess.run([sys.executable, "-m", "engine.cli", *command[1:]], cwd=ROOT, capture_output=True,
                             text=True, timeout=120, check=False)
        assert run.returncode == 0, f"{shlex.join(command)}: exit {run.returncode}\n{run.stdout}\n{run.stderr}"


def test_tenantspace_grants_what_its_rules_do() -> None:
    """`engine rbac` knows every kind it names: applies and deletes on the target cluster, the patch of the
    ControlPlane, the reads of the hold."""
    example = ROOT / "examples" / "tenantspace"
    rights = kind_rights(load_catalog(example / "rules").values(), crd_plurals([example / "crds", EXTERNAL_CRDS]))
    verbs = {key: set(grant.reasons) for key, grant in rights.grants.items()}
    assert {"get", "list", "watch", "patch", "delete"} <= verbs[("rbac.authorization.k8s.io", "rolebindings")]
    assert {"patch", "delete"} <= verbs[("networking.k8s.io", "networkpolicies")]
    assert {"patch", "delete"} <= verbs[("", "resourcequotas")] & verbs[("", "limitranges")] & verbs[("", "namespaces")]
    assert {"list"} <= verbs[("", "pods")] & verbs[("", "persistentvolumeclaims")]
    assert {"get", "patch"} <= verbs[("c5c3.io", "controlplanes")]

