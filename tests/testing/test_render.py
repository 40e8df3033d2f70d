"""`engine render`: an order and its world in files -> what a pass writes and why it stopped, offline."""

from __future__ import annotations

import base64
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import offline.render as render_command
from engine import cli
from offline.scenario.runner import load_setup

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "render_fixtures"
ORDER = FIXTURES / "order.yaml"
PROBE = FIXTURES / "korc-probe-found-nothing.yaml"
WORLD = ROOT / "tests/scenarios/keystoneuser/fixtures/world.yml"
NOW = "2026-01-01T00:00:00Z"


@pytest.fixture(autouse=True, scope="module")
def setups_loaded_once() -> Iterator[None]:
    """The rules compile and the CRDs are read once per folder for this module (``load_setup``, about 1.5 s each
    time), as tests/test_scenarios.py shares one Setup between scenarios: a render does not change its Setup."""
    patch = pytest.MonkeyPatch()
    patch.setattr(render_command, "load_setup", functools.cache(load_setup))
    yield
    patch.undo()


def render(capsys: pytest.CaptureFixture[str], *args: Path | str) -> tuple[int, list[dict[str, Any]], str]:
    code = cli.main(["render", *map(str, args), "--now", NOW, "--rules", str(ROOT / "rules"),
                     "--crds", str(ROOT / "deploy/crds")])
    out, err = capsys.readouterr()
    docs = [d for d in yaml.safe_load_all(out) if d is not None] if code == 0 else []
    return code, docs, err


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def line_of(text: str, path: Path) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_keystoneuser_order_renders_its_children_and_the_wait_that_stopped_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """With the world and K-ORC's probe answer, the passes install the finalizer, drop the probe, create the
    password Secret and apply the managed User, and stop at the wait for K-ORC, named by its rule-file line
    among three waits sharing the reason."""
    code, docs, err = render(capsys, ORDER, WORLD, PROBE)
    assert code == 0, err
    order, *children, result = docs
    assert order["kind"] == "KeystoneUser" and order["metadata"]["finalizers"] == ["c5c3.io/keystoneuser-teardown"]
    assert order["spec"]["rotation"] == {"interval": "720h"}  # admitted: the CRD's default
    conditions = {c["type"]: (c["status"], c["reason"]) for c in order["status"]["conditions"]}
    assert conditions == {"UserReady": ("False", "WaitingForServiceAccounts"),
                          "DeliveryReady": ("False", "WaitingForServiceAccounts"), "Ready": ("False", "NotAllReady")}
    assert [(c["kind"], c["metadata"]["name"]) for c in children] == [
        ("Secret", "billing-19a340bf-user-password-v1"), ("User", "billing-19a340bf-user-user")]
    secret, user = children
    assert secret["data"] == {"password": "(redacted)"}
    assert user["spec"]["resource"]["passwordRef"] == "billing-19a340bf-user-password-v1"
    assert result["apiVersion"] == "render.c5c3.io/v1alpha1" and result["kind"] == "Result"
    assert result["outcome"] == "Stopped" and result["passes"] == 2 and result["requeueAfter"] == "10s"
    wait = line_of("""- wait: "condition_true(user, 'Available')\"""", ROOT / "rules/keystoneuser.yaml")
    assert result["stoppedBy"] == {
        "by": "step provision", "action": "wait", "at": f"rules/keystoneuser.yaml:{wait}:9",
        "condition": "UserReady", "status": "False", "reason": "WaitingForServiceAccounts",
        "message": "the user is registered but not yet Available"}
    writes = [(w["pass"], w["verb"], w["kind"], w.get("subresource")) for w in result["writes"]]
    assert writes == [(1, "patch", "KeystoneUser", None), (1, "update", "KeystoneUser", "status"),
                      (2, "apply", "User", None), (2, "delete", "User", None), (2, "create", "Secret", None),
                      (2, "apply", "User", None), (2, "update", "KeystoneUser", "status")]
    assert "event" not in result  # a wait records no Event


def test_secret_values_show_only_when_asked_and_never_in_the_log(capsys: pytest.CaptureFixture[str]) -> None:
    """Redacted by default (the first test); with --show-secrets the generated password is in the Secret's
    data and nowhere else, and never in the log lines --log prints."""
    code = cli.main(["render", str(ORDER), str(WORLD), str(PROBE), "--now", NOW, "--show-secrets", "--log"])
    out, err = capsys.readouterr()
    assert code == 0, err
    docs = [d for d in yaml.safe_load_all(out) if d is not None]
    encoded = by_kind(docs, "Secret")[0]["data"]["password"]
    password = base64.b64decode(encoded).decode()
    assert len(password) >= 32
    assert out.count(encoded) == 1 and password not in out
    assert password not in err and encoded not in err


def test_a_refused_order_prints_the_refusal_and_its_event(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    admin = tmp_path / "admin.yaml"
    admin.write_text(ORDER.read_text().replace("name: billing", "name: admin"))
    code, docs, err = render(capsys, admin, WORLD)
    assert code == 0, err
    result = by_kind(docs, "Result")[0]
    assert result["outcome"] == "Stopped"
    stopped = result["stoppedBy"]
    assert (stopped["by"], stopped["action"], stopped["reason"]) == ("step provision", "refuse",
                                                                      "ServiceAccountCollision")
    assert "reserves for its admin identity" in stopped["message"]
    assert result["event"]["type"] == "Warning" and result["event"]["reason"] == "ServiceAccountCollision"
    assert by_kind(docs, "User") == [] and by_kind(docs, "Secret") == []  # refused: nothing written but the order


def test_an_order_without_its_controlplane_stops_at_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = render(capsys, ORDER)
    assert code == 0
    result = by_kind(docs, "Result")[0]
    assert result["passes"] == 1
    assert result["stoppedBy"]["by"] == "gate controlplane-exists"
    assert result["stoppedBy"]["reason"] == "ControlPlaneNotFound"
    assert result["stoppedBy"]["message"] == ("ControlPlane openstack/cp not found; the order is deferred until "
                                              "it exists")


def test_one_pass_only_installs_the_finalizer(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = render(capsys, ORDER, WORLD, "--passes", "1")
    assert code == 0
    result = by_kind(docs, "Result")[0]
    assert result["outcome"] == "FinalizerInstalled" and result["requeueAfter"] == "1s"
    assert {w["kind"] for w in result["writes"]} == {"KeystoneUser"}


@pytest.mark.parametrize(("text", "where", "says"), [
    ("apiVersion: v1\nkind: Namespace\nmetadata: {name: x\n", ":4:1:", "invalid YAML"),
    ("apiVersion: v1\nkind: Namespace\nmetadata: {nme: x}\n", ":3:11:", "needs `metadata.name`"),
    ("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n", ":1:1:", "no order in this file"),
    ("apiVersion: c5c3.io/v1alpha1\nkind: KeystoneUser\nmetadata: {name: x, namespace: y}\nspec:\n"
     "  controlPlaneRef: {name: cp}\n  rotaton: {interval: 1h}\n", ":6:3:", "unknown field 'spec.rotaton'"),
    ("apiVersion: c5c3.io/v1alpha1\nkind: KeystoneUser\nmetadata: {name: x, namespace: y}\nspec:\n"
     "  controlPlaneRef: {name: cp}\n  passwordGeneration: 0\n", ":1:1:", "would refuse this order"),
])
def test_a_bad_input_file_is_one_line_naming_file_line_and_column(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, where: str, says: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    code, _, err = render(capsys, bad)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{bad}{where}") and says in lines[0], err
    assert "Traceback" not in err


def test_a_missing_world_file_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = render(capsys, ORDER, tmp_path / "nowhere.yaml")
    assert code == 1
    assert err.strip() == f"{tmp_path / 'nowhere.yaml'}:1:1: no such file"


@pytest.mark.parametrize(("message", "matches"), [
    ("user \"a\" is provisioned at generation 2", True),
    ("user \"a\" is provisioned at generation 2; the rotation waits for \"c1\" to be deleted", True),
    ("user \"a\" is provisioned", False),
    ("the user is not provisioned yet", False),
])
def test_a_message_template_matches_what_it_renders(message: str, matches: bool) -> None:
    """Literal text must appear, `{{ }}` matches anything, text inside `{% if %}` may be absent: how render tells
    apart elements sharing a reason."""
    from offline.render.verdict import _pattern

    template = ("user {{ go_quote(name) }} is provisioned at generation\n  {{ gen }}{% if held %}; the rotation "
                "waits for {{ go_quote_list(held) }} to be deleted{% endif %}")
    assert (_pattern(template).fullmatch(message) is not None) is matches


def test_an_order_on_a_target_cluster_and_an_ambiguous_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    """--cluster puts the order on that target cluster. Two gates write NamespaceNotAssigned with the same message
    template: render lists both as candidates rather than guess."""
    code, docs, err = render(capsys, ORDER, WORLD, "--cluster", "edge-1")
    assert code == 0, err
    result = by_kind(docs, "Result")[0]
    assert result["order"]["cluster"] == "edge-1"
    assert {w.get("cluster") for w in result["writes"]} == {"edge-1"}
    stopped = result["stoppedBy"]
    assert stopped["reason"] == "NamespaceNotAssigned" and 'target cluster "edge-1"' in stopped["message"]
    assert [c["by"] for c in stopped["candidates"]] == ["gate controlplane-hidden-on-target-clusters",
                                                        "gate namespace-assignment"]
