"""The real kubectl against the emulator as against an API server: short names and categories,
field validation, ``kubectl explain``, ``--dry-run=server``, Events, the kinds of deploy/."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.clock import SystemClock
from engine.cluster.memory import MemoryCluster
from engine.testing.emulator import Emulator, write_kubeconfig
from simulators.embedded import crd_documents

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None,
                                reason="kubectl is not installed: these tests drive the real binary")

ROOT = Path(__file__).resolve().parents[2]
API = "c5c3.io/v1alpha1"


def order(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name, "namespace": "ns"},
            "spec": {"controlPlaneRef": {"name": "cp"}, **spec}}


@pytest.fixture
def cluster() -> MemoryCluster:
    """A cluster with deploy/crds/ installed (and the external kinds') and namespace ns."""
    made = MemoryCluster("", clock=SystemClock())
    for crd in crd_documents(ROOT / "deploy" / "crds", ROOT / "deploy" / "crds" / "external"):
        made.create(crd)
    made.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    return made


@pytest.fixture
def kubectl(cluster: MemoryCluster, tmp_path: Path) -> Iterator[Any]:
    """Runs kubectl (30 s at most) against an emulator of the cluster; HOME is the test's own, so no
    discovery cache is shared."""
    with Emulator(cluster) as served:
        config = tmp_path / "kubeconfig"
        write_kubeconfig(config, {"emulator": served}, "emulator")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "KUBECONFIG": str(config)}

        def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["kubectl", *args], env=env, input=stdin, capture_output=True, text=True,
                                  timeout=30)

        yield run


def test_get_by_category_and_short_names(kubectl: Any, cluster: MemoryCluster) -> None:
    """``kubectl get c5c3`` lists the orders of both kinds; ksu and rmqv are their short names."""
    cluster.create(order("KeystoneUser", "u"))
    cluster.create(order("RabbitMQVhost", "v"))
    result = kubectl("get", "c5c3", "-A", "-o", "name")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == ["keystoneuser.c5c3.io/u", "rabbitmqvhost.c5c3.io/v"]
    assert kubectl("get", "ksu", "-n", "ns", "-o", "name").stdout.split() == ["keystoneuser.c5c3.io/u"]
    assert kubectl("get", "rmqv", "-n", "ns", "-o", "name").stdout.split() == ["rabbitmqvhost.c5c3.io/v"]

