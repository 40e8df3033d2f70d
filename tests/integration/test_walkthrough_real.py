"""The Getting started page's kubectl walkthrough ("In another shell:") on real API servers, as a user runs it by hand:
``scripts/kube-cluster --world`` (``python -m offline.realkube --world``: real management and edge-1 clusters
with our CRDs, the embedded world and the simulated K-ORC, ESO and topology operator), ``engine run --kubeconfig``
with the kubeconfig it wrote, then each kubectl command of the page's block with the pinned kubectl, asserting
what the user sees.

The commands are read from docs/getting-started.md (the README's short walkthrough is a part of it,
tests/test_front_door.py): a command added there fails this test until it says what to expect.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from integration_kit import ROOT, STARTUP_PATIENCE, TENANT, free_port, probe_ready, wait_for

from engine.cluster.api import NotFound
from engine.cluster.kube import kube_cluster_from_kubeconfig
from offline.realkube import KubeBinaries

WAIT_PATIENCE = "120s"
"""Added to the walkthrough's ``kubectl wait`` commands (kubectl's default is 30 s): a loaded machine is not tested."""


def readme_commands() -> list[str]:
    """The kubectl commands of the Getting started page's walkthrough block, comments dropped."""
    text = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    block = re.search(r"In another shell:\n\n```sh\n(.*?)```", text, re.S)
    assert block, "docs/getting-started.md has no walkthrough block after 'In another shell:'"
    return [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines() if line.startswith("kubectl ")]


@dataclass
class Walk:
    """The servers with their world (the launcher), the operator on them, and kubectl for the user."""

    kubeconfig: Path
    kubectl: Path
    home: Path
    operator_log: Path

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        """A command of the walkthrough as a user types it in the checkout, with the pinned kubectl."""
        words = shlex.split(command)
        assert words[0] == "kubectl"
        if "wait" in words:
            words.append(f"--timeout={WAIT_PATIENCE}")
        env = {"PATH": f"{self.kubectl.parent}:{os.environ.get('PATH', '')}", "HOME": str(self.home),
               "KUBECONFIG": str(self.kubeconfig)}
        return subprocess.run([str(self.kubectl), *words[1:]], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=180, check=False)


def _stop(process: subprocess.Popen[bytes], how: int) -> None:
    if process.poll() is None:
        process.send_signal(how)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@pytest.fixture(scope="module")
def walk(kube_binaries: KubeBinaries, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walk]:
    tmp = tmp_path_factory.mktemp("walkthrough")
    kubeconfig = tmp / "kubeconfig"
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["TMPDIR"] = str(tmp)
    with (tmp / "kube-cluster.log").open("wb") as launcher_log, (tmp / "operator.log").open("wb") as operator_log:
        launcher = subprocess.Popen([sys.executable, "-m", "offline.realkube", "--world", "--kubeconfig",
                                     str(kubeconfig)], cwd=ROOT, env=env, stdout=launcher_log,
                                    stderr=subprocess.STDOUT)
        operator: subprocess.Popen[bytes] | None = None
        try:
            wait_for(lambda: kubeconfig.exists() or launcher.poll() is not None, timeout=STARTUP_PATIENCE,
                     message="the launcher to write the kubeconfig of the servers with their world")
            assert launcher.poll() is None, (tmp / "kube-cluster.log").read_text()
            banner = (tmp / "kube-cluster.log").read_text()
            assert f"export KUBECONFIG={kubeconfig}" in banner
            assert "./scripts/engine run --kubeconfig $KUBECONFIG" in banner
            probe = free_port()
            operator = subprocess.Popen(
                [sys.executable, "-m", "engine.cli", "run", "--kubeconfig", str(kubeconfig),
                 "--metrics-bind-address", "0", "--health-probe-bind-address", f"127.0.0.1:{probe}"],
                cwd=ROOT, env=env, stdout=operator_log, stderr=subprocess.STDOUT)
            wait_for(lambda: probe_ready(probe) or operator.poll() is not None, timeout=STARTUP_PATIENCE,
                     message="engine run --kubeconfig to be ready")
            assert operator.poll() is None, (tmp / "operator.log").read_text()[-3000:]
            yield Walk(kubeconfig, kube_binaries.kubectl, tmp, tmp / "operator.log")
        finally:
            if operator is not None:
                _stop(operator, signal.SIGTERM)
            _stop(launcher, signal.SIGINT)
    assert operator is not None and operator.returncode == 0, (tmp / "operator.log").read_text()[-3000:]
    assert launcher.returncode == 0, (tmp / "kube-cluster.log").read_text()[-3000:]


def tables(text: str) -> list[tuple[list[str], list[dict[str, str]]]]:
    """kubectl's table output (one table per kind, a blank line between): each table's header and its rows by
    column name (every cell here is one word)."""
    found = []
    for block in text.strip().split("\n\n"):
        header, *rows = block.splitlines()
        names = header.split()
        found.append((names, [dict(zip(names, row.split(), strict=True)) for row in rows]))
    return found


def applied(*names: str) -> Callable[[subprocess.CompletedProcess[str]], None]:
    def check(done: subprocess.CompletedProcess[str]) -> None:
        assert done.stdout.split("\n")[:-1] == [f"{name} serverside-applied" for name in names]
    return check


def condition_met(*names: str) -> Callable[[subprocess.CompletedProcess[str]], None]:
    def check(done: subprocess.CompletedProcess[str]) -> None:
        assert done.stdout.split("\n")[:-1] == [f"{name} condition met" for name in names]
    return check


def orders_listed(done: subprocess.CompletedProcess[str]) -> None:
    """Both kinds' tables with their printer columns: each order Ready on ControlPlane cp, at generation 1."""
    (users, user_rows), (vhosts, vhost_rows) = tables(done.stdout)
    assert users == ["NAMESPACE", "NAME", "READY", "CONTROLPLANE", "GENERATION", "NEXTROTATION", "AGE"], users
    assert vhosts == ["NAMESPACE", "NAME", "READY", "CONTROLPLANE", "VHOST", "GENERATION", "NEXTROTATION", "AGE"]
    rows = {(row["NAMESPACE"], row["NAME"]): row for row in user_rows + vhost_rows}
    assert set(rows) == {(TENANT, "keystoneuser.c5c3.io/workflow"), (TENANT, "rabbitmqvhost.c5c3.io/messaging")}
    for row in rows.values():
        assert (row["READY"], row["CONTROLPLANE"], row["GENERATION"]) == ("True", "cp", "1"), row


def every_order(done: subprocess.CompletedProcess[str]) -> None:
    """The c5c3 category: every order of both kinds."""
    names = {row["NAME"] for _, rows in tables(done.stdout) for row in rows}
    assert names == {"keystoneuser.c5c3.io/workflow", "rabbitmqvhost.c5c3.io/messaging"}, done.stdout


def explained(done: subprocess.CompletedProcess[str]) -> None:
    assert "KIND:       KeystoneUser" in done.stdout and "FIELD: rotation <Object>" in done.stdout, done.stdout
    assert re.search(r"^\s+interval\s+<string>", done.stdout, re.M), done.stdout


def dry_run(done: subprocess.CompletedProcess[str]) -> None:
    """Every object of the install checked by the server; nothing written (the Deployment is not there after)."""
    lines = done.stdout.splitlines()
    assert lines and all(line.endswith("(server dry run)") for line in lines), done.stdout
    assert "deployment.apps/c5c3-operator created (server dry run)" in lines, done.stdout


def events(done: subprocess.CompletedProcess[str]) -> None:
    # Nothing was refused or failed: a user sees no Warning (kubectl says so when there is no Event at all).
    assert "Warning" not in done.stdout
    assert done.stdout.startswith("LAST SEEN") or "No resources found in tenant-a namespace." in done.stderr


def described(done: subprocess.CompletedProcess[str]) -> None:
    assert re.search(r"^Name:\s+workflow$", done.stdout, re.M), done.stdout
    conditions = done.stdout[done.stdout.index("Conditions:"):]
    assert re.search(r"Type:\s+Ready", conditions) and re.search(r"Status:\s+True", conditions), conditions
    assert re.search(r"^Events:", done.stdout, re.M), done.stdout


def credential(done: subprocess.CompletedProcess[str]) -> None:
    [(header, [row])] = tables(done.stdout)
    assert header == ["NAME", "TYPE", "DATA", "AGE"]
    assert (row["NAME"], row["TYPE"], row["DATA"]) == ("workflow-credentials", "Opaque", "2"), done.stdout


def deleted(done: subprocess.CompletedProcess[str]) -> None:
    assert done.stdout.strip() == f'keystoneuser.c5c3.io "workflow" deleted from {TENANT} namespace', done.stdout


ORDERS = "examples/orders"
WALKTHROUGH: list[tuple[str, Callable[[subprocess.CompletedProcess[str]], None]]] = [
    (f"kubectl apply --server-side -f {ORDERS}/keystoneuser.yaml -f {ORDERS}/rabbitmqvhost.yaml",
     applied("keystoneuser.c5c3.io/workflow", "rabbitmqvhost.c5c3.io/messaging")),
    (f"kubectl wait --for=condition=Ready keystoneuser/workflow rabbitmqvhost/messaging -n {TENANT}",
     condition_met("keystoneuser.c5c3.io/workflow", "rabbitmqvhost.c5c3.io/messaging")),
    (f"kubectl --context edge-1 apply --server-side -f {ORDERS}/keystoneuser-edge-1.yaml",
     applied("keystoneuser.c5c3.io/billing")),
    (f"kubectl --context edge-1 wait --for=condition=Ready keystoneuser/billing -n {TENANT}",
     condition_met("keystoneuser.c5c3.io/billing")),
    ("kubectl get keystoneusers,rabbitmqvhosts -A", orders_listed),
    ("kubectl get c5c3 -A", every_order),
    ("kubectl explain keystoneuser.spec.rotation", explained),
    ("kubectl apply -k deploy/ --dry-run=server", dry_run),
    (f"kubectl get events -n {TENANT}", events),
    (f"kubectl describe keystoneuser workflow -n {TENANT}", described),
    (f"kubectl get secret workflow-credentials -n {TENANT}", credential),
    (f"kubectl delete -f {ORDERS}/keystoneuser.yaml", deleted),
]
"""Each command of the Getting started walkthrough, and what the user sees."""


def test_the_walkthrough_is_the_getting_started_pages() -> None:
    assert [command for command, _ in WALKTHROUGH] == readme_commands()


def test_the_getting_started_walkthrough_on_real_servers(walk: Walk) -> None:
    for command, check in WALKTHROUGH:
        done = walk.run(command)
        assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stderr}"
        check(done)
    # The delete returned once the order was gone (kubectl waits for its finalizers): its children are gone too.
    management = kube_cluster_from_kubeconfig("", walk.kubeconfig, context="management", cache=False)
    try:
        with pytest.raises(NotFound):  # the dry run wrote nothing
            management.get("apps/v1", "Deployment", "c5c3-system", "c5c3-operator")
        for api_version, kind in (("v1", "Secret"), ("openstack.k-orc.cloud/v1alpha1", "User"),
                                  ("external-secrets.io/v1alpha1", "PushSecret")):
            left = management.list(api_version, kind, "openstack", labels={"c5c3.io/keystoneuser-name": "workflow"})
            assert left.items == [], (kind, [item["metadata"]["name"] for item in left.items])
        with pytest.raises(NotFound):
            management.get("v1", "Secret", TENANT, "workflow-credentials")
    finally:
        management.stop()
