"""The real kubectl against the emulator: apply --server-side, get with printer columns, wait, delete."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cluster.api import NotFound
from engine.cluster.patches import json_copy
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator, write_kubeconfig

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None,
                                reason="kubectl is not installed: these tests drive the real binary")

CRD_FILE = Path(__file__).resolve().parents[2] / "deploy" / "crds" / "c5c3.io_keystoneusers.yaml"
USERS = "c5c3.io/v1alpha1"

ORDER = """\
apiVersion: c5c3.io/v1alpha1
kind: KeystoneUser
metadata:
  name: x
  namespace: ns
spec:
  controlPlaneRef:
    name: cp
"""

READY: dict[str, Any] = {"status": {"passwordGeneration": 1, "conditions": [{
    "type": "Ready", "status": "True", "reason": "AllReady", "message": "all ready",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}]}}


@pytest.fixture
def clock() -> SimulatedClock:
    """The clock of the cluster and of the emulator's tables."""
    return SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))


@pytest.fixture
def cluster(clock: SimulatedClock) -> MemoryCluster:
    """A cluster with the KeystoneUser CRD from deploy/crds installed."""
    made = MemoryCluster("", clock=clock)
    for doc in yaml.safe_load_all(CRD_FILE.read_text()):
        if doc:
            made.create(doc)
    return made


@pytest.fixture
def kubectl(cluster: MemoryCluster, clock: SimulatedClock, tmp_path: Path) -> Iterator[Any]:
    """Runs kubectl against an emulator of the cluster through a kubeconfig file; HOME is the test's
    own, so no discovery cache is shared."""
    with Emulator(cluster, clock=clock) as served:
        config = tmp_path / "kubeconfig"
        write_kubeconfig(config, {"emulator": served}, "emulator")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "KUBECONFIG": str(config)}

        def run(*args: str, stdin: str | None = None, background: bool = False) -> Any:
            command = ["kubectl", *args]
            if background:
                return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            return subprocess.run(command, env=env, input=stdin, capture_output=True, text=True, timeout=30)

        yield run


def apply(kubectl: Any, tmp_path: Path, text: str = ORDER) -> subprocess.CompletedProcess[str]:
    order = tmp_path / "order.yaml"
    order.write_text(text)
    result: subprocess.CompletedProcess[str] = kubectl("apply", "--server-side", "-f", str(order))
    return result


def test_apply_server_side_creates_the_order(kubectl: Any, cluster: MemoryCluster, tmp_path: Path) -> None:
    """``kubectl apply --server-side`` creates the order, defaulted, owned by kubectl's field manager."""
    result = apply(kubectl, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "keystoneuser.c5c3.io/x serverside-applied"
    stored = cluster.get(USERS, "KeystoneUser", "ns", "x")
    assert stored["spec"] == {"controlPlaneRef": {"name": "cp"}, "passwordGeneration": 1,
                              "rotation": {"interval": "720h"}}
    assert [m["manager"] for m in stored["metadata"]["managedFields"]] == ["kubectl"]


def test_apply_server_side_again_updates(kubectl: Any, cluster: MemoryCluster, tmp_path: Path) -> None:
    """Applying a changed file updates the order in place."""
    apply(kubectl, tmp_path)
    result = apply(kubectl, tmp_path, ORDER + "  passwordGeneration: 3\n")
    assert result.returncode == 0, result.stderr
    stored = cluster.get(USERS, "KeystoneUser", "ns", "x")
    assert stored["spec"]["passwordGeneration"] == 3 and stored["metadata"]["generation"] == 2


def test_apply_of_an_invalid_order_is_refused(kubectl: Any, cluster: MemoryCluster, tmp_path: Path) -> None:
    """An order the CRD schema rejects fails with the API server's Invalid message, and is not stored."""
    result = apply(kubectl, tmp_path, ORDER.replace("  controlPlaneRef:\n    name: cp\n", "  userName: a\n"))
    assert result.returncode != 0
    assert "spec.controlPlaneRef: Required value" in result.stderr
    assert cluster.list(USERS, "KeystoneUser", "ns").items == []


def test_a_crd_with_a_printer_column_of_an_unknown_type_is_refused(kubectl: Any, cluster: MemoryCluster,
                                                                    tmp_path: Path) -> None:
    """A CRD whose printer column the API server would refuse fails ``kubectl apply`` with its message, and
    the installed CRD stays as it was."""
    crd = next(doc for doc in yaml.safe_load_all(CRD_FILE.read_text()) if doc)
    crd["spec"]["versions"][0]["additionalPrinterColumns"][0]["type"] = "text"
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd))
    result = kubectl("apply", "--server-side", "--force-conflicts", "-f", str(tmp_path / "crd.yaml"))
    assert result.returncode != 0
    assert 'spec.additionalPrinterColumns[0].type: Invalid value: "text": must be one of' in result.stderr
    installed = cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, crd["metadata"]["name"])
    assert installed["spec"]["versions"][0]["additionalPrinterColumns"][0]["type"] != "text"


def test_get_shows_printer_columns(kubectl: Any, cluster: MemoryCluster, clock: SimulatedClock,
                                   tmp_path: Path) -> None:
    """``kubectl get keystoneusers`` prints the reference's five columns, filled from the order and its status;
    ``-o wide`` adds the Shard column (priority 1), empty for an order no sharded leader labelled (a real API
    server sends null, kubectl prints nothing)."""
    apply(kubectl, tmp_path)
    cluster.patch(USERS, "KeystoneUser", "ns", "x", READY, status=True)
    clock.advance(dt.timedelta(hours=2, minutes=5))
    result = kubectl("get", "keystoneusers", "-n", "ns")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "NAME   READY   CONTROLPLANE   GENERATION   NEXTROTATION   AGE",
        "x      True    cp             1                           125m",
    ]
    wide = kubectl("get", "keystoneusers", "-n", "ns", "-o", "wide")
    assert wide.returncode == 0, wide.stderr
    assert wide.stdout.splitlines() == [
        "NAME   READY   CONTROLPLANE   GENERATION   NEXTROTATION   AGE    SHARD",
        "x      True    cp             1                           125m   ",
    ]


def test_get_with_the_shard_label_as_a_column(kubectl: Any, cluster: MemoryCluster, tmp_path: Path) -> None:
    """``kubectl get keystoneusers -L sharding.c5c3.io/shard`` (README, ``--sharded``) adds each order's member
    after the CRD's own columns (the Shard column is ``-o wide``'s only)."""
    apply(kubectl, tmp_path)
    order = json_copy(cluster.get(USERS, "KeystoneUser", "ns", "x"))
    order["metadata"]["labels"] = {"sharding.c5c3.io/shard": "operator-0-a1b2c3"}
    cluster.update(order)
    result = kubectl("get", "keystoneusers", "-n", "ns", "-L", "sharding.c5c3.io/shard")
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()
    assert header.split() == ["NAME", "READY", "CONTROLPLANE", "GENERATION", "NEXTROTATION", "AGE", "SHARD"]
    assert row.split()[0] == "x" and row.split()[-1] == "operator-0-a1b2c3"


def test_wait_for_ready(kubectl: Any, cluster: MemoryCluster, tmp_path: Path) -> None:
    """``kubectl wait --for=condition=Ready`` returns once the status says Ready True."""
    apply(kubectl, tmp_path)
    waiting = kubectl("wait", "--for=condition=Ready", "keystoneuser/x", "-n", "ns", "--timeout=5s", background=True)
    time.sleep(0.3)  # let kubectl start watching, so the change arrives as a watch event
    assert waiting.poll() is None, "kubectl wait returned before the order was Ready"
    cluster.patch(USERS, "KeystoneUser", "ns", "x", READY, status=True)
    out, err = waiting.communicate(timeout=15)
    assert waiting.returncode == 0, err
    assert out.strip() == "keystoneuser.c5c3.io/x condition met"


def test_wait_times_out_while_not_ready(kubectl: Any, tmp_path: Path) -> None:
    """``kubectl wait`` fails when the condition never comes."""
    apply(kubectl, tmp_path)
    result = kubectl("wait", "--for=condition=Ready", "keystoneuser/x", "-n", "ns", "--timeout=1s")
    assert result.returncode != 0 and "timed out" in result.stderr


def test_delete(kubectl: Any, cluster: MemoryCluster, tmp_path: Path) -> None:
    """``kubectl delete`` removes the order."""
    apply(kubectl, tmp_path)
    result = kubectl("delete", "keystoneuser", "x", "-n", "ns")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'keystoneuser.c5c3.io "x" deleted'
    with pytest.raises(NotFound):
        cluster.get(USERS, "KeystoneUser", "ns", "x")


def test_delete_waits_for_finalizers(kubectl: Any, cluster: MemoryCluster, tmp_path: Path) -> None:
    """``kubectl delete`` of an order held by a finalizer returns once the finalizer is gone."""
    apply(kubectl, tmp_path)
    cluster.patch(USERS, "KeystoneUser", "ns", "x", {"metadata": {"finalizers": ["example.io/hold"]}})
    deleting = kubectl("delete", "keystoneuser", "x", "-n", "ns", "--timeout=10s", background=True)
    assert _deletion_marked(cluster)
    assert deleting.poll() is None, "kubectl returned while the finalizer still held the order"
    cluster.patch(USERS, "KeystoneUser", "ns", "x", {"metadata": {"finalizers": None}})
    out, err = deleting.communicate(timeout=15)
    assert deleting.returncode == 0, err
    assert out.strip() == 'keystoneuser.c5c3.io "x" deleted'
    with pytest.raises(NotFound):
        cluster.get(USERS, "KeystoneUser", "ns", "x")


def _deletion_marked(cluster: MemoryCluster) -> bool:
    """Waits (briefly, polling) until the order carries a deletionTimestamp."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if cluster.get(USERS, "KeystoneUser", "ns", "x")["metadata"].get("deletionTimestamp"):
            return True
        time.sleep(0.02)
    return False


def test_typed_create_commands_send_protobuf(kubectl: Any, cluster: MemoryCluster) -> None:
    """``kubectl create namespace|secret|configmap`` send protobuf; the objects arrive as sent."""
    for args in (["namespace", "demo"], ["secret", "generic", "s", "-n", "demo", "--from-literal=a=b"],
                 ["configmap", "c", "-n", "demo", "--from-literal=k=v"]):
        result = kubectl("create", *args)
        assert result.returncode == 0, result.stderr
    assert cluster.get("v1", "Namespace", None, "demo")["metadata"]["name"] == "demo"
    secret = cluster.get("v1", "Secret", "demo", "s")
    assert secret["data"] == {"a": "Yg=="} and "generateName" not in secret["metadata"]
    assert cluster.get("v1", "ConfigMap", "demo", "c")["data"] == {"k": "v"}
