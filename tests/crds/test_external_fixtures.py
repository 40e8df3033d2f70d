"""What the scenarios, the embedded clusters and the demo seed of the external kinds is what upstream
would store: seeding skips admission, so without this a fixture could hold an object no real cluster
admits (a K-ORC User without cloud credentials, a PushSecret without a store) and hide a bug."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.cluster.admission import CrdAdmission, admissions_for
from simulators import demo, embedded

ROOT = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]


def stand_ins() -> dict[tuple[str, str], CrdAdmission]:
    """The admission of every external stand-in kind, by (apiVersion, kind); the c5c3.io ones stay out
    (they are other c5c3 controllers' kinds, permissive on purpose)."""
    found: dict[tuple[str, str], CrdAdmission] = {}
    for path in sorted((ROOT / "deploy" / "crds" / "external").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and doc["spec"]["group"] != "c5c3.io":
                found.update({(api_version, a.kind): a for api_version, a in admissions_for(doc).items()})
    return found


def scenario_objects() -> Iterator[tuple[str, Obj]]:
    """Every object a scenario file seeds inline, and every document of a fixture file."""
    for path in sorted((ROOT / "tests" / "scenarios").rglob("*.y*ml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not isinstance(doc, dict):
                continue
            if "scenario" in doc:
                yield from ((str(path.relative_to(ROOT)), o["object"]) for o in doc.get("objects") or ()
                            if isinstance(o, dict) and isinstance(o.get("object"), dict))
            elif "apiVersion" in doc:
                yield str(path.relative_to(ROOT)), doc


def seeded() -> list[tuple[str, Obj]]:
    worlds = [("embedded management world", o) for o in embedded.management_world()]
    worlds += [("demo world", o) for o in demo.WORLD]
    return [*scenario_objects(), *worlds]


STAND_INS = stand_ins()
EXTERNAL = [(where, obj) for where, obj in seeded() if (obj.get("apiVersion"), obj.get("kind")) in STAND_INS]


def test_the_fixtures_seed_external_kinds() -> None:
    """The check below has something to check: the fixtures seed stores, buses, Users and PushSecrets."""
    kinds = {obj["kind"] for _, obj in EXTERNAL}
    assert {"SecretStore", "RabbitmqCluster", "User", "PushSecret"} <= kinds


@pytest.mark.parametrize(("where", "obj"), EXTERNAL,
                         ids=[f"{where}:{obj['kind']}/{obj['metadata'].get('name')}" for where, obj in EXTERNAL])
def test_a_seeded_external_object_is_one_upstream_admits(where: str, obj: Obj) -> None:
    STAND_INS[(obj["apiVersion"], obj["kind"])].admit(obj)
