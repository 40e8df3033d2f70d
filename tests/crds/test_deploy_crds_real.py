"""Every CRD the project ships (deploy/crds/) and every stand-in of another controller's kinds
(deploy/crds/external/) installs on a real API server: created (as kubectl does, strict field validation), its
names accepted and Established, its kinds served; and our own checks accept each as well."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.cluster.crd_check import crd_refusal
from offline.realkube import KubeServer
from tests.crds.corpus_kit import CRDS_PATH, RealServer

Obj = dict[str, Any]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "crds"
FILES = sorted([*DEPLOY.glob("*.yaml"), *(DEPLOY / "external").glob("*.yaml")])
ESTABLISH_PATIENCE = 30.0
"""Seconds the real server has to accept a created CRD's names and establish it (well under one when idle)."""


def shipped() -> list[tuple[str, Obj]]:
    """(file, CRD) for every CRD document of every shipped file."""
    found = []
    for path in FILES:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                found.append((str(path.relative_to(DEPLOY.parent.parent)), doc))
    return found


CRDS = shipped()


def test_every_shipped_file_holds_crds() -> None:
    """The lists below are not empty by accident: every file of deploy/crds holds at least one CRD."""
    assert {file for file, _ in CRDS} == {str(p.relative_to(DEPLOY.parent.parent)) for p in FILES}
    assert len(CRDS) >= 13


@pytest.mark.parametrize(("file", "crd"), CRDS, ids=[crd["metadata"]["name"] for _, crd in CRDS])
def test_our_checks_accept_each_shipped_crd(file: str, crd: Obj) -> None:
    """engine lint and the memory cluster accept each (a refusal here would be a false one: the test below)."""
    assert crd_refusal(crd) is None, file


def test_a_real_server_installs_every_shipped_crd(real_cluster: Callable[[str], KubeServer]) -> None:
    """All of them together, as ``kubectl apply -f deploy/crds -f deploy/crds/external`` would create them: each
    created, then NamesAccepted and Established (no two claim a name), and each served version listed."""
    server = real_cluster("deploy-crds")
    real = RealServer(server.url, server.token(), server.ca_pem)
    for file, crd in CRDS:
        code, body = real.request("POST", CRDS_PATH + "?fieldValidation=Strict", crd)
        assert code == 201, f"{file}: {crd['metadata']['name']}: {code} {body.get('message')}"
    deadline = time.monotonic() + ESTABLISH_PATIENCE
    pending = {crd["metadata"]["name"] for _, crd in CRDS}
    while pending and time.monotonic() < deadline:
        for name in sorted(pending):
            _, stored = real.request("GET", f"{CRDS_PATH}/{name}")
            conditions = {c["type"]: c["status"] for c in (stored.get("status") or {}).get("conditions") or []}
            if conditions.get("NamesAccepted") == "True" and conditions.get("Established") == "True":
                pending.discard(name)
        time.sleep(0.2)
    assert pending == set(), "not established in time"
    for _, crd in CRDS:
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served"):
                continue
            scope = "namespaces/default/" if spec["scope"] == "Namespaced" else ""
            path = f"/apis/{spec['group']}/{version['name']}/{scope}{spec['names']['plural']}"
            code, body = real.request("GET", path)
            while code == 429 and time.monotonic() < deadline:  # established, its storage still starting
                time.sleep(0.2)
                code, body = real.request("GET", path)
            assert code == 200, f"{crd['metadata']['name']} {version['name']}: {code} {body.get('message')}"
