"""Live rule reload under ``engine run --sharded``: three members run from one rule folder (as replicas mounting one
ConfigMap do); a clean edit is reloaded by every member and serves the next orders whichever member owns them, and
each member's membership Lease says which rules it serves; a broken edit is refused by every member, which keeps
serving the rules before, and new orders are still placed and served."""

from __future__ import annotations

import itertools
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from integration_kit import API, ROOT, TENANT, OperatorProcess, World, condition, get, order, wait_for
from test_sharding_http import three_replicas

from engine.cluster.api import Obj
from engine.runtime.sharding import ring
from tests.conftest import RuleText

RELOADED = "c5c3.io/reloaded-template"
TEMPLATE = Path("templates") / "keystoneuser" / "delivered-secret.yaml.j2"
KIND_KEY = f"{API}/KeystoneUser"
RULES_ANNOTATION = "sharding.c5c3.io/rules"
PATIENCE = 60.0


@pytest.fixture(scope="module")
def folder(world: World) -> Path:
    """The rules, templates and CRDs every member runs from (``engine run --rules <folder>/rules``)."""
    copy = world.tmp / "shared-rules"
    for part in ("rules", "templates", "deploy/crds"):
        shutil.copytree(ROOT / part, copy / part)
    return copy


@pytest.fixture
def members(world: World, folder: Path) -> Iterator[dict[str, OperatorProcess]]:
    with three_replicas(world, "reloading", "--rules", str(folder / "rules"), "--rules-reload-interval", "200ms",
                        "--clusters-namespace", "") as started:
        yield started


def scraped(process: OperatorProcess) -> str:
    answer = process._get(process.metrics_port, "/metrics")
    return answer[1] if answer is not None else ""


def reloads(process: OperatorProcess, result: str) -> float:
    found = re.search(rf'^c5c3_operator_rules_reload_total{{result="{result}"}} (\S+)$', scraped(process), re.M)
    return float(found.group(1)) if found else 0.0


def served_hash(process: OperatorProcess) -> str:
    found = re.search(r'^c5c3_operator_rules_info{hash="([0-9a-f]+)"} 1\.0$', scraped(process), re.M)
    return found.group(1) if found else ""


def lease_hash(world: World, member: str) -> str:
    lease = get(world.management, "coordination.k8s.io/v1", "Lease", "c5c3-system", member) or {}
    return str(((lease.get("metadata") or {}).get("annotations") or {}).get(RULES_ANNOTATION) or "")


def one_per_member(members: list[str], prefix: str) -> list[str]:
    """Order names the ring gives to each member once (so every member serves one)."""
    names: dict[str, str] = {}
    for n in itertools.count():
        name = f"{prefix}-{n}"
        names.setdefault(str(ring.owner(ring.order_key("", KIND_KEY, TENANT, name), members)), name)
        if len(names) == len(members):
            return sorted(names.values())
    raise AssertionError("unreachable")


def delivered(world: World, name: str) -> Obj | None:
    if condition(get(world.management, API, "KeystoneUser", TENANT, name), "Ready") != "True":
        return None
    return get(world.management, "v1", "Secret", TENANT, f"{name}-credentials")


def labels(obj: Obj | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def serve(world: World, members: list[str], prefix: str) -> dict[str, Obj]:
    """Create one order for each member; their delivered Secrets, by the member that served the order."""
    names = one_per_member(members, prefix)
    for name in names:
        world.management.create(order("KeystoneUser", name))
    secrets = {name: wait_for(lambda name=name: delivered(world, name), timeout=PATIENCE,  # type: ignore[misc]
                              message=f"{name} delivered") for name in names}
    return {labels(get(world.management, API, "KeystoneUser", TENANT, name))["sharding.c5c3.io/shard"]: secret
            for name, secret in secrets.items()}


def test_every_member_reloads_a_clean_edit_and_refuses_a_broken_one(
        world: World, folder: Path, members: dict[str, OperatorProcess]) -> None:
    names, processes = sorted(members), list(members.values())
    first = {served_hash(p) for p in processes}
    assert len(first) == 1 and "" not in first, first
    before = serve(world, names, "before")
    assert sorted(before) == names and all(RELOADED not in labels(s) for s in before.values())

    template = folder / TEMPLATE
    template.write_text(RuleText(template.read_text()).add_after(
        "    c5c3.io/keystoneuser-namespace: {{ order.metadata.namespace | tojson }}\n", f'    {RELOADED}: "yes"\n'))
    wait_for(lambda: all(reloads(p, "loaded") == 1 for p in processes), timeout=PATIENCE,
             message="every member reloaded the edited template")
    edited = {served_hash(p) for p in processes}
    assert len(edited) == 1 and edited != first, (first, edited)
    (new_hash,) = edited
    wait_for(lambda: all(lease_hash(world, m) == new_hash for m in names), timeout=PATIENCE,
             message="every membership Lease names the reloaded rules")
    after = serve(world, names, "after")
    assert sorted(after) == names, after
    assert all(labels(s).get(RELOADED) == "yes" for s in after.values()), after

    rule = folder / "rules" / "keystoneuser.yaml"
    rule.write_text(rule.read_text() + "\nnot a rule key: [\n")
    wait_for(lambda: all(reloads(p, "refused") == 1 for p in processes), timeout=PATIENCE,
             message="every member refused the broken rule file")
    assert {served_hash(p) for p in processes} == edited
    assert all(lease_hash(world, m) == new_hash for m in names)
    broken = serve(world, names, "broken")
    assert sorted(broken) == names, broken
    assert all(labels(s).get(RELOADED) == "yes" for s in broken.values()), broken
    assert all(reloads(p, "loaded") == 1 for p in processes)
    assert all(p.process.poll() is None for p in processes)
    assert set(members) == set(names)

