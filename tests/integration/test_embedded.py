"""``engine run`` with no kubeconfig: the embedded clusters, used as the README says, with kubectl or the client."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from integration_kit import ROOT, STARTUP_PATIENCE, TENANT, example, free_port, wait_for

from engine.cluster.api import NotFound, Obj
from engine.cluster.kube import KubeCluster, kube_cluster_from_kubeconfig

API = "c5c3.io/v1alpha1"


class Embedded:
    def __init__(self, tmp: Path) -> None:
        self.kubeconfig = tmp / "kubeconfig"
        self.probe_port = free_port()
        self.log_path = tmp / "embedded.log"
        self._log = self.log_path.open("wb")
        private_tmp = tmp / "tmp"  # what a killed operator cannot remove (its discovery cache) stays in the test's
        private_tmp.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST", "KUBECONFIG")}
        env["TMPDIR"] = str(private_tmp)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "engine.cli", "run", "--kubeconfig-out", str(self.kubeconfig),
             "--metrics-bind-address", "0", "--health-probe-bind-address", f"127.0.0.1:{self.probe_port}"],
            cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, env=env,
        )

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.probe_port}/readyz", timeout=2) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def logs(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def cluster(self, context: str) -> KubeCluster:
        return kube_cluster_from_kubeconfig(context, self.kubeconfig, context=context, cache=False)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()  # the test fails, and leaves no process behind
            self.process.wait(10)
            raise
        finally:
            self._log.close()


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Embedded]:
    running = Embedded(tmp_path_factory.mktemp("embedded"))
    try:
        wait_for(lambda: running.ready() or running.process.poll() is not None, timeout=STARTUP_PATIENCE,
                 message="the embedded operator")
        assert running.process.poll() is None, running.logs()
        yield running
    finally:
        running.stop()


def is_ready(cluster: KubeCluster, kind: str, name: str) -> bool:
    try:
        obj: Obj = cluster.get(API, kind, TENANT, name)
    except NotFound:
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or ())


def test_the_banner_says_where_the_kubeconfig_is(embedded: Embedded) -> None:
    """The first lines name both clusters and the kubeconfig, with the kubectl commands to try."""
    text = embedded.logs()
    assert f"export KUBECONFIG={embedded.kubeconfig}" in text
    assert "(context management)" in text
    assert "(context edge-1, registered in c5c3-clusters)" in text
    assert "kubectl apply --server-side -f examples/orders/keystoneuser.yaml" in text
    assert "kubectl --context edge-1 apply --server-side -f examples/orders/keystoneuser-edge-1.yaml" in text


def test_the_example_orders_go_ready_on_both_clusters(embedded: Embedded) -> None:
    """Both example orders, applied on the management cluster and on edge-1, go Ready."""
    for context in ("management", "edge-1"):
        cluster = embedded.cluster(context)
        try:
            for kind in ("KeystoneUser", "RabbitMQVhost"):
                cluster.apply(example(kind, cluster_name(context)), field_manager="integration-test")
            for kind in ("KeystoneUser", "RabbitMQVhost"):
                name = example(kind, cluster_name(context))["metadata"]["name"]
                wait_for(lambda c=cluster, k=kind, n=name: is_ready(c, k, n), message=f"{kind} on {context}")
        finally:
            cluster.stop()


def cluster_name(context: str) -> str:
    return "" if context == "management" else context


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_wait_and_delete_as_the_readme_says(embedded: Embedded, tmp_path: Path) -> None:
    """kubectl against the written kubeconfig: apply, wait for Ready, get with columns, delete through teardown."""
    env = {**os.environ, "KUBECONFIG": str(embedded.kubeconfig), "HOME": str(tmp_path)}

    def kubectl(*args: str) -> str:
        done = subprocess.run(["kubectl", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    order = str(ROOT / "examples" / "orders" / "keystoneuser-edge-1.yaml")
    kubectl("--context", "edge-1", "apply", "--server-side", "-f", order)
    kubectl("--context", "edge-1", "wait", "--for=condition=Ready", "keystoneuser/billing", "-n", TENANT,
            "--timeout=30s")
    assert "True" in kubectl("--context", "edge-1", "get", "keystoneusers", "-n", TENANT)
    kubectl("--context", "edge-1", "delete", "-f", order, "--timeout=30s")
    assert "No resources found" in subprocess.run(
        ["kubectl", "--context", "edge-1", "get", "keystoneusers", "-n", TENANT], env=env, capture_output=True,
        text=True, timeout=30).stderr


def test_sigint_stops_it_gracefully(embedded: Embedded) -> None:
    """Ctrl-C: exit 0 after the operator stopped."""
    assert embedded.stop() == 0
    assert "operator stopped" in embedded.logs()
