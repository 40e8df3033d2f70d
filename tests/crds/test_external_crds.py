"""The stand-in CRDs of the kinds other controllers serve (deploy/crds/external/) default what the reference does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cluster.admission import admissions_for

EXTERNAL = Path(__file__).resolve().parents[2] / "deploy" / "crds" / "external"
Obj = dict[str, Any]


def admission(name: str) -> Any:
    """The CrdAdmission of one external CRD, by its metadata.name."""
    for path in sorted(EXTERNAL.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and doc["metadata"]["name"] == name:
                return next(iter(admissions_for(doc).values()))
    raise AssertionError(f"no CRD {name} in {EXTERNAL}")


def control_plane(spec: Obj) -> Obj:
    return {"apiVersion": "c5c3.io/v1alpha1", "kind": "ControlPlane", "metadata": {"name": "cp", "namespace": "os"},
            "spec": spec}


@pytest.mark.parametrize("credential", [{}, {"userName": "admin", "cloudCredentialsRef": {}}])
def test_controlplane_defaults_the_k_orc_cloud_credentials_as_the_reference(credential: Obj) -> None:
    """An admin credential without a cloud name or Secret gets `admin` and `k-orc-clouds-yaml`, the reference's."""
    stored = admission("controlplanes.c5c3.io").admit(control_plane({"korc": {"adminCredential": credential}}))
    assert stored["spec"]["korc"]["adminCredential"]["cloudCredentialsRef"] == {
        "cloudName": "admin", "secretName": "k-orc-clouds-yaml"}


def test_controlplane_keeps_what_it_is_given_and_everything_else() -> None:
    """Given values stay; fields the stand-in does not describe are kept, not pruned."""
    spec = {"region": "RegionTwo", "korc": {"adminCredential": {"cloudCredentialsRef": {"cloudName": "ops"}}},
            "services": {"keystone": {"mode": "External"}}}
    stored = admission("controlplanes.c5c3.io").admit(control_plane(spec))
    assert stored["spec"]["korc"]["adminCredential"]["cloudCredentialsRef"] == {
        "cloudName": "ops", "secretName": "k-orc-clouds-yaml"}
    assert stored["spec"]["region"] == "RegionTwo"
    assert stored["spec"]["services"] == {"keystone": {"mode": "External"}}
