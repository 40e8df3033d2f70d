"""The README's install, done twice, with the pinned kubectl against a real API server and against the emulator:
`kubectl apply -k deploy/`, then `kubectl apply -k .` (the same install plus the rules ConfigMap mounted into the
Deployment). Both servers must store the same Deployment, and applying again must say `unchanged` for every object
on both (kubectl sends strategic merge patches for built-in kinds: the emulator has to merge them as the server
does, or the Deployment loses its image, ports and probes and never settles) but one: the PodDisruptionBudget.

kubectl calls an object `configured` whenever the patch it computes is not empty, whatever the server then does
with it. A PodDisruptionBudget's spec.selector has the patch strategy `replace`, so kubectl's three-way diff always
sends the whole selector: a real v1.37 server is told `{"spec":{"selector":...}}` on every apply, stores nothing new,
and kubectl still says `configured`. The emulator says the same, as it should."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.clock import SystemClock
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator, write_kubeconfig
from offline.realkube import KubeBinaries, KubeServer
from tests.differential.harness import differences, normalised

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"

ALWAYS_CONFIGURED = {"poddisruptionbudget.policy/c5c3-operator": "configured"}
"""What kubectl reports as configured on every apply, against a real server too (see above)."""


class Kubectl:
    """The pinned kubectl against one server, in a HOME of its own."""

    def __init__(self, binaries: KubeBinaries, kubeconfig: Path, home: Path) -> None:
        self.binary = str(binaries.kubectl)
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "KUBECONFIG": str(kubeconfig)}

    def __call__(self, *args: str) -> str:
        done = subprocess.run([self.binary, *args], env=self.env, capture_output=True, text=True, timeout=120,
                              cwd=ROOT)
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def get(self, *args: str) -> Any:
        return json.loads(self("get", *args, "-o", "json"))


@pytest.fixture(scope="module")
def kubectls(kube_binaries: KubeBinaries, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Kubectl]]:
    """kubectl for a real server of its own (the install's cluster-scoped objects stay out of the shared one) and
    for an emulator."""
    folder = tmp_path_factory.mktemp("kubectl-apply")
    with KubeServer("apply-k", binaries=kube_binaries) as real, \
            Emulator(MemoryCluster("", clock=SystemClock())) as emulated:
        (folder / "real").write_text(yaml.safe_dump(real.kubeconfig("real")))
        write_kubeconfig(folder / "emulator", {"emulator": emulated}, "emulator")
        yield {name: Kubectl(kube_binaries, folder / name, folder) for name in ("real", "emulator")}


def applied(kubectl: Kubectl, where: Path) -> dict[str, str]:
    """`kubectl apply -k where`: what it said of each object (``created``, ``configured``, ``unchanged``)."""
    said = {}
    for line in kubectl("apply", "-k", str(where)).splitlines():
        name, _, verdict = line.rpartition(" ")
        said[name] = verdict
    return said


def changed(said: dict[str, str]) -> dict[str, str]:
    return {name: verdict for name, verdict in said.items() if verdict != "unchanged"}


def stored(kubectl: Kubectl, *what: str) -> Any:
    """The stored object as the harness compares it (uids, resourceVersions and times numbered, not valued)."""
    return normalised(kubectl.get(*what))


def test_apply_k_deploy_then_the_rules_configmap_stores_the_same_deployment(kubectls: dict[str, Kubectl]) -> None:
    said: dict[str, list[dict[str, str]]] = {}
    deployments = {}
    for name, kubectl in kubectls.items():
        said[name] = [applied(kubectl, DEPLOY), applied(kubectl, DEPLOY)]
        said[name] += [applied(kubectl, ROOT), applied(kubectl, ROOT)]
        deployments[name] = stored(kubectl, "deployment", "-n", "c5c3-system", "c5c3-operator")
    for name in kubectls:
        first, again, rules, rules_again = said[name]
        assert set(first.values()) == {"created"}, (name, first)
        assert changed(again) == ALWAYS_CONFIGURED, name
        assert rules["configmap/c5c3-rules"] == "created" and rules["deployment.apps/c5c3-operator"] == "configured"
        assert changed(rules_again) == ALWAYS_CONFIGURED, name
    assert said["emulator"] == said["real"]
    assert differences(deployments["real"], deployments["emulator"]) == []
    container = deployments["emulator"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "c5c3/order-engine:0.1.0" and container["livenessProbe"]["httpGet"]["port"] == "probes"
    assert not any(key.startswith("$") for key in json.dumps(deployments["emulator"]).split('"'))


PRINTED = ("deployments", "configmaps", "serviceaccounts", "poddisruptionbudgets", "roles", "rolebindings",
           "networkpolicies", "services")


def printed(kubectl: Kubectl, kind: str) -> list[list[str]]:
    """`kubectl get KIND -n c5c3-system` as rows of columns, times (AGE, CREATED AT) and cluster IPs left out."""
    rows = [re.split(r"\s{2,}", line.strip()) for line in kubectl("get", kind, "-n", "c5c3-system").splitlines()]
    header = rows[0]
    dropped = {header.index(name) for name in ("AGE", "CREATED AT", "CLUSTER-IP") if name in header}
    return [[cell for at, cell in enumerate(row) if at not in dropped] for row in rows]


def test_kubectl_get_prints_the_same_columns(kubectls: dict[str, Kubectl]) -> None:
    """After the install, `kubectl get` prints the same columns and cells on both servers (a Deployment's
    READY/UP-TO-DATE/AVAILABLE, a PodDisruptionBudget's MIN AVAILABLE...), ages and cluster IPs aside."""
    for kubectl in kubectls.values():
        applied(kubectl, DEPLOY)
    for kind in PRINTED:
        assert printed(kubectls["emulator"], kind) == printed(kubectls["real"], kind), kind
    assert printed(kubectls["emulator"], "deployments")[0][:4] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE"]
