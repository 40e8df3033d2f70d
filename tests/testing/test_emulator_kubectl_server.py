"""The real kubectl against the emulator as against an API server: short names and categories,
field validation, ``kubectl explain``, ``--dry-run=server``, Events, the kinds of deploy/."""

from __future__ import annotations

import os
import re
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



SHARD = "sharding.c5c3.io/shard"


def table(text: str) -> dict[str, list[tuple[str, str]]]:
    """kubectl's table by row name: (header, cell) per column, cut at the headers' offsets (an empty cell has no
    text to split on; kubectl's headers are single words)."""
    lines = text.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", lines[0])]
    headers = lines[0].split()
    rows = {}
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        rows[cells[0]] = list(zip(headers, cells, strict=True))
    return rows


@pytest.mark.parametrize(("plural", "kind"), [("keystoneusers", "KeystoneUser"), ("rabbitmqvhosts", "RabbitMQVhost")])
def test_get_orders_shows_each_orders_shard_member(kubectl: Any, cluster: MemoryCluster, plural: str,
                                                   kind: str) -> None:
    """``kubectl get <orders> -o wide`` prints the member an ``engine run --sharded`` leader labelled each order for
    (the CRD's Shard column, priority 1); an order without the label shows an empty cell, as a real API server's
    null cell prints; plain ``kubectl get`` keeps the reference's columns."""
    labelled = order(kind, "mine")
    labelled["metadata"]["labels"] = {SHARD: "c5c3-operator-7d9f8-x2k4p-a1b2c3"}
    cluster.create(labelled)
    cluster.create(order(kind, "new"))
    plain = kubectl("get", plural, "-n", "ns")
    assert plain.returncode == 0, plain.stderr
    assert "SHARD" not in plain.stdout and table(plain.stdout)["mine"][-1][0] == "AGE"
    result = kubectl("get", plural, "-n", "ns", "-o", "wide")
    assert result.returncode == 0, result.stderr
    shown = table(result.stdout)
    assert shown["mine"][-1] == ("SHARD", "c5c3-operator-7d9f8-x2k4p-a1b2c3")
    assert shown["new"][-1] == ("SHARD", "")
    assert shown["new"][-2][0] == "AGE"  # the reference's columns first, as it documents them
    labels = kubectl("get", plural, "-n", "ns", "-L", SHARD)  # -L adds the label's own column after the CRD's
    assert labels.returncode == 0, labels.stderr
    shown = table(labels.stdout)
    assert shown["mine"][-1] == ("SHARD", "c5c3-operator-7d9f8-x2k4p-a1b2c3") and shown["mine"][-2][0] == "AGE"
    assert shown["new"][-1] == ("SHARD", "")

TYPO = """\
apiVersion: c5c3.io/v1alpha1
kind: KeystoneUser
metadata:
  name: typo
  namespace: ns
spec:
  controlPlaneRef:
    name: cp
  rotaton:
    interval: 1h
"""


def write(tmp_path: Path, text: str, name: str = "order.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def stored_names(cluster: MemoryCluster, kind: str = "KeystoneUser") -> list[str]:
    return [o["metadata"]["name"] for o in cluster.list(API, kind, "ns").items]


@pytest.mark.parametrize(("command", "said"), [
    (["apply", "--server-side"], ".spec.rotaton: field not declared in schema"),
    (["create"], 'unknown field "spec.rotaton"'),
    (["apply"], 'unknown field "spec.rotaton"'),
])
def test_strict_field_validation_refuses_an_unknown_field_by_its_path(
        kubectl: Any, cluster: MemoryCluster, tmp_path: Path, command: list[str], said: str) -> None:
    """kubectl asks for fieldValidation=Strict: a misspelt field is refused, naming it, and nothing is stored."""
    result = kubectl(*command, "-f", write(tmp_path, TYPO))
    assert result.returncode != 0
    assert said in result.stderr
    assert stored_names(cluster) == []


def test_warn_field_validation_stores_without_the_field_and_warns(kubectl: Any, cluster: MemoryCluster,
                                                                 tmp_path: Path) -> None:
    result = kubectl("create", "--validate=warn", "-f", write(tmp_path, TYPO))
    assert result.returncode == 0, result.stderr
    assert 'Warning: unknown field "spec.rotaton"' in result.stderr
    assert "rotaton" not in cluster.get(API, "KeystoneUser", "ns", "typo")["spec"]


def test_ignore_field_validation_drops_the_field_silently(kubectl: Any, cluster: MemoryCluster,
                                                          tmp_path: Path) -> None:
    result = kubectl("create", "--validate=false", "-f", write(tmp_path, TYPO))
    assert result.returncode == 0, result.stderr
    assert "rotaton" not in result.stderr
    assert "rotaton" not in cluster.get(API, "KeystoneUser", "ns", "typo")["spec"]


def test_explain_reads_the_crd_schema(kubectl: Any) -> None:
    """``kubectl explain`` finds the kind's schema in the OpenAPI v3 document of its group version."""
    result = kubectl("explain", "keystoneuser.spec.rotation")
    assert result.returncode == 0, result.stderr
    assert "KIND:       KeystoneUser" in result.stdout
    assert "interval\t<string>" in result.stdout
    assert "at least 1m" in result.stdout  # the field's description, from the CRD


def test_dry_run_server_writes_nothing(kubectl: Any, cluster: MemoryCluster, tmp_path: Path) -> None:
    """--dry-run=server on create, apply, patch, replace and delete: the server's answer, nothing stored or
    changed."""
    path = write(tmp_path, TYPO.replace("rotaton", "rotation"))
    result = kubectl("apply", "--server-side", "--dry-run=server", "-f", path)
    assert result.returncode == 0, result.stderr
    assert "(server dry run)" in result.stdout
    assert kubectl("create", "--dry-run=server", "-f", path).returncode == 0
    assert stored_names(cluster) == []
    cluster.create(order("KeystoneUser", "typo"))
    before = cluster.get(API, "KeystoneUser", "ns", "typo")
    patched = kubectl("patch", "ksu", "typo", "-n", "ns", "--type=merge", "--dry-run=server", "-o", "json",
                      "-p", '{"spec":{"passwordGeneration":5}}')
    assert patched.returncode == 0, patched.stderr
    assert '"passwordGeneration": 5' in patched.stdout  # the answer is the patched object ...
    live = kubectl("get", "ksu", "typo", "-n", "ns", "-o", "yaml").stdout
    replaced = kubectl("replace", "--dry-run=server", "-f", "-",
                       stdin=live.replace("passwordGeneration: 1", "passwordGeneration: 7"))
    assert replaced.returncode == 0, replaced.stderr
    assert kubectl("delete", "ksu", "typo", "-n", "ns", "--dry-run=server").returncode == 0
    assert cluster.get(API, "KeystoneUser", "ns", "typo") == before  # ... and the stored one is unchanged


def test_dry_run_server_still_refuses_what_admission_refuses(kubectl: Any, cluster: MemoryCluster,
                                                             tmp_path: Path) -> None:
    bad = TYPO.replace("rotaton:\n    interval: 1h", "rotation:\n    interval: 5s")
    result = kubectl("apply", "--server-side", "--dry-run=server", "-f", write(tmp_path, bad))
    assert result.returncode != 0
    assert "spec.rotation.interval" in result.stderr


def warning_event(regarding: dict[str, Any], name: str = "u.1") -> dict[str, Any]:
    """An Event as a controller records it through events.k8s.io/v1 (a series of two)."""
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name, "namespace": "ns"},
        "regarding": regarding, "type": "Warning", "reason": "ControlPlaneNotFound",
        "note": "ControlPlane ns/cp does not exist", "action": "Reconcile",
        "reportingController": "c5c3.io/operator", "reportingInstance": "operator-0",
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"},
    }


def test_events_recorded_through_events_k8s_io_show_in_get_events_and_describe(
        kubectl: Any, cluster: MemoryCluster) -> None:
    """One store, two versions: an events.k8s.io/v1 Event is listed by ``kubectl get events`` (core v1)
    and shown by ``kubectl describe`` of the object it regards, found by involvedObject field selectors."""
    user = cluster.create(order("KeystoneUser", "u"))
    cluster.create(warning_event({"apiVersion": API, "kind": "KeystoneUser", "namespace": "ns", "name": "u",
                                  "uid": user["metadata"]["uid"]}))
    cluster.create(warning_event({"apiVersion": API, "kind": "KeystoneUser", "namespace": "ns", "name": "other"},
                                 name="other.1"))
    listed = kubectl("get", "events", "-n", "ns")
    assert listed.returncode == 0, listed.stderr
    assert "ControlPlaneNotFound" in listed.stdout and "keystoneuser/u" in listed.stdout
    assert "ControlPlane ns/cp does not exist" in listed.stdout
    described = kubectl("describe", "ksu", "u", "-n", "ns")
    assert described.returncode == 0, described.stderr
    events = described.stdout.split("Events:", 1)[1]
    assert "Warning  ControlPlaneNotFound" in events and "ControlPlane ns/cp does not exist" in events
    selected = kubectl("get", "events", "-n", "ns", "-o", "name", "--field-selector", "involvedObject.name=u")
    assert selected.stdout.split() == ["event/u.1"]


def test_a_core_v1_event_is_stored_as_events_k8s_io(kubectl: Any, cluster: MemoryCluster, tmp_path: Path) -> None:
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"kind": "KeystoneUser", "namespace": "ns", "name": "u"},
            "type": "Normal", "reason": "Tested", "message": "written as core v1", "count": 1}
    result = kubectl("create", "-f", write(tmp_path, yaml.safe_dump(core), "event.yaml"))
    assert result.returncode == 0, result.stderr
    stored = cluster.get("events.k8s.io/v1", "Event", "ns", "e")
    assert (stored["note"], stored["regarding"]["name"], stored["deprecatedCount"]) == ("written as core v1", "u", 1)


def test_a_core_v1_event_is_patched_as_client_go_patches_a_series(kubectl: Any, cluster: MemoryCluster,
                                                                  tmp_path: Path) -> None:
    """kubectl patch (strategic merge, merge, JSON patch) of a core v1 Event updates the one stored Event,
    as client-go's recorder patches count and lastTimestamp of a repeated Event."""
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"kind": "KeystoneUser", "namespace": "ns", "name": "u"},
            "type": "Warning", "reason": "Tested", "message": "first", "count": 1}
    assert kubectl("create", "-f", write(tmp_path, yaml.safe_dump(core), "event.yaml")).returncode == 0
    for kind, patch in (("strategic", '{"count": 2}'), ("merge", '{"message": "again"}'),
                        ("json", '[{"op": "replace", "path": "/count", "value": 3}]')):
        result = kubectl("patch", "event", "e", "-n", "ns", "--type", kind, "-p", patch)
        assert result.returncode == 0, result.stderr
    stored = cluster.get("events.k8s.io/v1", "Event", "ns", "e")
    assert (stored["deprecatedCount"], stored["note"], stored["regarding"]["name"]) == (3, "again", "u")


def test_the_install_applies_with_server_dry_run(kubectl: Any, cluster: MemoryCluster) -> None:
    """``kubectl apply --dry-run=server`` of the operator's install: every kind of deploy/ is served."""
    result = kubectl("apply", "--server-side", "--dry-run=server", "-f", str(ROOT / "deploy" / "operator"))
    assert result.returncode == 0, result.stderr
    assert "deployment.apps/c5c3-operator serverside-applied (server dry run)" in result.stdout
    assert cluster.list("apps/v1", "Deployment", None).items == []
    result = kubectl("apply", "--server-side", "-f", str(ROOT / "deploy" / "operator"))
    assert result.returncode == 0, result.stderr
    assert [d["metadata"]["name"] for d in cluster.list("apps/v1", "Deployment", None).items] == ["c5c3-operator"]
