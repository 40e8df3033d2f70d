"""The install with live rules: `kubectl kustomize .` (the kustomization beside rules/ and templates/) renders the
install plus one ConfigMap of every rule file and template, mounted so the operator reads the usual tree; the
mounted set lints clean and loads the same kinds; `kubectl apply -k . --dry-run=server` is accepted."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.clock import SystemClock
from engine.rules.catalog import load_catalog
from engine.rules.folder import RuleFolder
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator, write_kubeconfig
from tests.rules.test_rule_folder import configmap_volume
from tests.test_deploy_kustomize import kubectl

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None,
                                reason="kubectl is not installed: these tests drive the real binary")

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(p.relative_to(ROOT).as_posix() for folder in ("rules", "templates")
               for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    result = kubectl("kustomize", str(ROOT), home=tmp_path_factory.mktemp("home"))
    assert result.returncode == 0, result.stderr
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(result.stdout) if d}


def pod_spec(rendered: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = rendered[("Deployment", "c5c3-operator")]["spec"]["template"]["spec"]
    return spec


def test_every_rule_file_and_template_is_in_one_configmap(rendered: dict[tuple[str, str], dict[str, Any]]) -> None:
    """One ConfigMap, named without a hash (an update changes it in place, the pods do not roll), holds each
    file of rules/ and templates/ under its path with `/` as `.`; the rest of the install is there too."""
    configmap = rendered[("ConfigMap", "c5c3-rules")]
    assert configmap["metadata"]["namespace"] == "c5c3-system"
    keys = {path.replace("/", "."): path for path in FILES}
    assert set(configmap["data"]) == set(keys), (
        f"kustomization.yaml is stale: list every file of rules/ and templates/ under files: and items: "
        f"(missing {sorted(set(keys) - set(configmap['data']))}, extra {sorted(set(configmap['data']) - set(keys))})")
    for key, path in keys.items():
        assert configmap["data"][key] == (ROOT / path).read_text(), path
    assert "rules/keystoneuser.yaml" in FILES and "rules/common/order.yaml" in FILES
    assert ("ClusterRole", "c5c3-operator") in rendered and ("Service", "c5c3-operator-metrics") in rendered


def test_the_operator_reads_the_mounted_tree(rendered: dict[tuple[str, str], dict[str, Any]]) -> None:
    """The volume puts every key back at its path under one mount (no subPath: kubelet updates it), and
    --rules and --templates point into it."""
    spec = pod_spec(rendered)
    volume = next(v for v in spec["volumes"] if v.get("configMap", {}).get("name") == "c5c3-rules")
    items = {item["key"]: item["path"] for item in volume["configMap"]["items"]}
    assert items == {path.replace("/", "."): path for path in FILES}
    container = spec["containers"][0]
    mount = next(m for m in container["volumeMounts"] if m["name"] == volume["name"])
    assert mount == {"name": volume["name"], "mountPath": "/etc/c5c3", "readOnly": True}
    assert {"--rules=/etc/c5c3/rules", "--templates=/etc/c5c3/templates"} <= set(container["args"])


def test_the_mounted_set_lints_clean_and_serves_the_same_kinds(rendered: dict[tuple[str, str], dict[str, Any]],
                                                               tmp_path: Path) -> None:
    """Laid out as kubelet mounts the volume (``..data`` links), the set lints clean and loads every kind."""
    configmap = rendered[("ConfigMap", "c5c3-rules")]
    volume = next(v for v in pod_spec(rendered)["volumes"] if v["name"] == "rules")
    mount = tmp_path / "etc-c5c3"
    configmap_volume(mount, "2026_12_01_1",
                     {item["path"]: configmap["data"][item["key"]] for item in volume["configMap"]["items"]})
    folder = RuleFolder(mount / "rules", mount / "templates")
    assert [str(e) for e in folder.lint()] == []
    assert sorted(folder.load()) == sorted(load_catalog(ROOT / "rules"))


@pytest.fixture
def emulated(tmp_path: Path) -> Iterator[tuple[MemoryCluster, dict[str, str]]]:
    cluster = MemoryCluster("", clock=SystemClock())
    with Emulator(cluster) as served:
        config = tmp_path / "kubeconfig"
        write_kubeconfig(config, {"emulator": served}, "emulator")
        yield cluster, {"KUBECONFIG": str(config)}


def test_apply_k_with_the_rules_configmap_is_accepted_by_the_server(
        emulated: tuple[MemoryCluster, dict[str, str]], tmp_path: Path) -> None:
    """`kubectl apply -k . --dry-run=server` passes the server's checks and writes nothing."""
    cluster, env = emulated
    result = kubectl("apply", "-k", str(ROOT), "--dry-run=server", env=env, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "configmap/c5c3-rules created (server dry run)" in result.stdout
    assert cluster.list("v1", "ConfigMap", "c5c3-system").items == []
