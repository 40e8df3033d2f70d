"""The kustomize install: `kubectl kustomize deploy/` renders every object of the install, and
`kubectl apply -k deploy/ --dry-run=server` is accepted by an API server (the emulator, on 127.0.0.1)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.clock import SystemClock
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator, write_kubeconfig
from simulators.embedded import crd_documents

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None,
                                reason="kubectl is not installed: these tests drive the real binary")

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
LABELS = {"app.kubernetes.io/name": "c5c3-operator"}


def kubectl(*args: str, env: dict[str, str] | None = None, home: Path) -> subprocess.CompletedProcess[str]:
    environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), **(env or {})}
    return subprocess.run(["kubectl", *args], env=environment, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    """(kind, name) -> object, as `kubectl kustomize deploy/` renders them."""
    result = kubectl("kustomize", str(DEPLOY), home=tmp_path_factory.mktemp("home"))
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def test_it_installs_crds_namespaces_rbac_and_the_operator(rendered: dict[tuple[str, str], Any]) -> None:
    """One apply installs everything: the order CRDs, both namespaces, the RBAC of `engine rbac`, the Deployment."""
    assert set(rendered) >= {
        ("CustomResourceDefinition", "keystoneusers.c5c3.io"), ("CustomResourceDefinition", "rabbitmqvhosts.c5c3.io"),
        ("Namespace", "c5c3-system"), ("Namespace", "c5c3-clusters"), ("ServiceAccount", "c5c3-operator"),
        ("ClusterRole", "c5c3-operator"), ("ClusterRoleBinding", "c5c3-operator"),
        ("Role", "c5c3-operator-leader-election"), ("Role", "c5c3-operator-registrations"),
        ("Deployment", "c5c3-operator"), ("Service", "c5c3-operator-metrics"),
        ("PodDisruptionBudget", "c5c3-operator"), ("NetworkPolicy", "c5c3-operator-metrics"),
    }
    external = {d["metadata"]["name"] for d in crd_documents(DEPLOY / "crds" / "external")}
    installed = {name for kind, name in rendered if kind == "CustomResourceDefinition"}
    assert not installed & external, "the external kinds' stand-in CRDs are for the lab, not the install"


def test_the_metrics_service_selects_the_operator_pods(rendered: dict[tuple[str, str], Any]) -> None:
    """The Service reaches the operator's metrics port by name."""
    service = rendered[("Service", "c5c3-operator-metrics")]
    pod = rendered[("Deployment", "c5c3-operator")]["spec"]["template"]
    assert service["metadata"]["namespace"] == "c5c3-system"
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    ports = {p["name"]: p["containerPort"] for p in pod["spec"]["containers"][0]["ports"]}
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}]
    assert ports["metrics"] == 8080


def test_a_drain_keeps_one_replica_spread_over_nodes_and_zones(rendered: dict[tuple[str, str], Any]) -> None:
    """The PodDisruptionBudget keeps one of the two replicas; the spread puts them on other nodes and zones."""
    deployment = rendered[("Deployment", "c5c3-operator")]
    budget = rendered[("PodDisruptionBudget", "c5c3-operator")]
    assert deployment["spec"]["replicas"] == 2
    assert budget["spec"] == {"minAvailable": 1, "selector": {"matchLabels": LABELS}}
    spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in spread} == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
    assert all(c["labelSelector"] == {"matchLabels": LABELS} and c["maxSkew"] == 1 for c in spread)


def test_the_network_policy_opens_only_the_metrics_port(rendered: dict[tuple[str, str], Any]) -> None:
    """Ingress to the operator's pods is the metrics port, nothing else."""
    policy = rendered[("NetworkPolicy", "c5c3-operator-metrics")]["spec"]
    assert policy["podSelector"] == {"matchLabels": LABELS}
    assert policy["policyTypes"] == ["Ingress"]
    assert [rule["ports"] for rule in policy["ingress"]] == [[{"port": "metrics", "protocol": "TCP"}]]


def test_the_image_is_set_in_one_place(rendered: dict[tuple[str, str], Any]) -> None:
    """The kustomization names the image the Deployment runs (an overlay changes it with `images:`)."""
    container = rendered[("Deployment", "c5c3-operator")]["spec"]["template"]["spec"]["containers"][0]
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    image = kustomization["images"][0]
    assert container["image"] == f"{image['name']}:{image['newTag']}"


@pytest.fixture
def emulated(tmp_path: Path) -> Iterator[tuple[MemoryCluster, dict[str, str]]]:
    """An empty emulated API server (127.0.0.1), and kubectl's environment for it."""
    cluster = MemoryCluster("", clock=SystemClock())
    with Emulator(cluster) as served:
        config = tmp_path / "kubeconfig"
        write_kubeconfig(config, {"emulator": served}, "emulator")
        yield cluster, {"KUBECONFIG": str(config)}


def test_apply_k_is_accepted_by_the_server(emulated: tuple[MemoryCluster, dict[str, str]], tmp_path: Path) -> None:
    """`kubectl apply -k deploy/ --dry-run=server` passes the server's checks and writes nothing; then, as the
    README says, `kubectl apply -k deploy/` installs it on an empty cluster."""
    cluster, env = emulated
    result = kubectl("apply", "-k", str(DEPLOY), "--dry-run=server", env=env, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "poddisruptionbudget.policy/c5c3-operator created (server dry run)" in result.stdout
    assert cluster.list("apps/v1", "Deployment", None).items == []
    result = kubectl("apply", "-k", str(DEPLOY), env=env, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [d["metadata"]["name"] for d in cluster.list("networking.k8s.io/v1", "NetworkPolicy", None).items] == [
        "c5c3-operator-metrics"]
    assert cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "keystoneusers.c5c3.io")


def test_the_target_cluster_install_renders_and_is_accepted(
        emulated: tuple[MemoryCluster, dict[str, str]], tmp_path: Path) -> None:
    """`kubectl apply -k deploy/target-cluster/` on a target: the namespace, the ServiceAccount and the ClusterRole
    `engine rbac --target` derives, bound to it; accepted by the server."""
    result = kubectl("kustomize", str(DEPLOY / "target-cluster"), home=tmp_path)
    assert result.returncode == 0, result.stderr
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(result.stdout) if d)
    assert kinds == [("ClusterRole", "c5c3-operator-target"), ("ClusterRoleBinding", "c5c3-operator-target"),
                     ("Namespace", "c5c3-system"), ("ServiceAccount", "c5c3-operator")]
    _, env = emulated
    result = kubectl("apply", "-k", str(DEPLOY / "target-cluster"), "--dry-run=server", env=env, home=tmp_path)
    assert result.returncode == 0, result.stderr
