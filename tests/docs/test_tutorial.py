"""The tutorial (docs/tutorial/add-a-kind.md) runs as written: every step's commands, run in that step's folder of
docs/tutorial/files/, print what the page shows (its session.console, included into the page by snippet), the page
includes every step, and the last step's kustomization renders the install serving the new kind's rules."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.docs.tutorial import ROOT, STEPS, normal, session

PAGE = ROOT / "docs/tutorial/add-a-kind.md"


def test_the_tutorial_has_its_steps() -> None:
    assert len(STEPS) >= 6
    page = PAGE.read_text()
    for step in STEPS:
        assert f'--8<-- "docs/tutorial/files/{step.name}/session.console"' in page, f"{step.name} is not on the page"


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.name)
def test_a_step_prints_what_the_page_shows(step: Path) -> None:
    shown = (step / "session.console").read_text()
    assert normal(session(step)) == normal(shown), f"stale: run `python -m tests.docs.tutorial` ({step.name})"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed: kustomize needs the binary")
def test_the_last_step_ships_the_kind_through_the_rules_configmap(tmp_path: Path) -> None:
    """`kubectl kustomize` of the last step: the install, the kind's CRD, the ClusterRole `engine rbac` derived from
    the kind's rules in place of the install's, and the ConfigMap of the rule file and template the Deployment
    mounts as its rules."""
    last = STEPS[-1]
    done = subprocess.run(["kubectl", "kustomize", str(last)], capture_output=True, text=True, timeout=120,
                          check=False, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    objects = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(done.stdout) if d}
    assert ("CustomResourceDefinition", "apppasswords.tutorial.example.com") in objects
    derived = next(d for d in yaml.safe_load_all((last / "rbac.yaml").read_text()) if d["kind"] == "ClusterRole")
    assert objects[("ClusterRole", "c5c3-operator")]["rules"] == derived["rules"]
    shipped = {str(p.relative_to(last)) for folder in ("rules", "templates") for p in (last / folder).rglob("*")
               if p.is_file()}
    data = objects[("ConfigMap", "c5c3-rules")]["data"]
    assert {key.replace(".", "/", key.count(".") - (2 if key.endswith(".j2") else 1)) for key in data} == shipped
    pod = objects[("Deployment", "c5c3-operator")]["spec"]["template"]["spec"]
    assert "--rules=/etc/c5c3/rules" in pod["containers"][0]["args"]
    mounted = next(v for v in pod["volumes"] if v["name"] == "rules")["configMap"]["items"]
    assert {item["path"] for item in mounted} == shipped
