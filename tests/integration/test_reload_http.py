"""Live rule reload in ``engine run`` over HTTP: a platform team edits a template in the rule folder the operator
runs from, and the next pass uses it; a rule file broken by an edit is refused (logged), and the rules that
served before keep serving until the folder is fixed."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from integration_kit import API, ROOT, TENANT, OperatorProcess, World, condition, get, order, wait_for

from engine.cluster.api import Obj
from tests.conftest import RuleText

RELOADED = "c5c3.io/reloaded-template"
TEMPLATE = Path("templates") / "keystoneuser" / "delivered-secret.yaml.j2"


@pytest.fixture(scope="module")
def folder(world: World) -> Path:
    """A platform team's copy of the rules, templates and CRDs (``engine run --rules <folder>/rules``)."""
    copy = world.tmp / "platform"
    for part in ("rules", "templates", "deploy/crds"):
        shutil.copytree(ROOT / part, copy / part)
    return copy


@pytest.fixture(scope="module")
def operator(world: World, folder: Path) -> Iterator[OperatorProcess]:
    process = OperatorProcess(world, "--rules", str(folder / "rules"), "--rules-reload-interval", "200ms",
                              "--clusters-namespace", "", name="reloading-operator")
    process.wait_ready()
    yield process
    assert process.stop() == 0, process.logs()[-3000:]


def delivered(world: World, name: str) -> Obj | None:
    """The order's delivered Secret once the order is Ready."""
    if condition(get(world.management, API, "KeystoneUser", TENANT, name), "Ready") != "True":
        return None
    return get(world.management, "v1", "Secret", TENANT, f"{name}-credentials")


def labels(secret: Obj | None) -> dict[str, str]:
    return dict(((secret or {}).get("metadata") or {}).get("labels") or {})


def test_an_edited_template_serves_the_next_orders_and_a_broken_edit_is_refused(
        world: World, folder: Path, operator: OperatorProcess) -> None:
    world.management.create(order("KeystoneUser", "before-edit"))
    assert RELOADED not in labels(wait_for(lambda: delivered(world, "before-edit"), message="before-edit delivered"))

    template = folder / TEMPLATE
    template.write_text(RuleText(template.read_text()).add_after(
        "    c5c3.io/keystoneuser-namespace: {{ order.metadata.namespace | tojson }}\n",
        f'    {RELOADED}: "yes"\n'))
    wait_for(lambda: "rules reloaded" in operator.logs(), message="the edited template reloaded")
    world.management.create(order("KeystoneUser", "after-edit"))
    secret = wait_for(lambda: delivered(world, "after-edit"), message="after-edit delivered")
    assert labels(secret)[RELOADED] == "yes"

    rule = folder / "rules" / "keystoneuser.yaml"
    rule.write_text(rule.read_text() + "\nnot a rule key: [\n")
    wait_for(lambda: "changed rule files refused" in operator.logs(), message="the broken rule file refused")
    world.management.create(order("KeystoneUser", "while-broken"))
    secret = wait_for(lambda: delivered(world, "while-broken"), message="while-broken delivered by the rules before")
    assert labels(secret)[RELOADED] == "yes"
    assert operator.process.poll() is None
