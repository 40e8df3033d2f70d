"""`engine test`: one line per scenario, a summary line, and the exit status the contract gives."""

from __future__ import annotations

import re

from tests.testing.conftest import GADGET_CRD, Workspace

PASSING = """\
    scenario: a namespace exists
    objects:
      - object: {apiVersion: v1, kind: Namespace, metadata: {name: shop}}
    steps:
      - expect:
          - present: {kind: Namespace, metadata: {name: shop}}
    """

FAILING = """\
    scenario: a namespace that is not there
    steps:
      - expect:
          - present: {kind: Namespace, metadata: {name: nowhere}}
    """


def test_all_passing_exits_0_with_one_line_each_and_a_summary(gadget: Workspace) -> None:
    """Folders are searched recursively; fixtures are skipped; the summary stands alone."""
    gadget.write("sc/a.yaml", PASSING)
    gadget.write("sc/deeper/b.yaml", PASSING)
    gadget.write("sc/fixtures/world.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
    code, out = gadget.cli(str(gadget.root / "sc"))
    lines = out.splitlines()
    assert code == 0
    assert len(lines) == 3
    assert re.fullmatch(r"PASS \S+/sc/a\.yaml \(\d+\.\d\ds\)", lines[0])
    assert re.fullmatch(r"PASS \S+/sc/deeper/b\.yaml \(\d+\.\d\ds\)", lines[1])
    assert lines[2] == "2 passed, 0 failed"


def test_any_failure_exits_1(gadget: Workspace) -> None:
    """A failed scenario prints FAIL with its details and makes the exit status 1."""
    ok = gadget.write("a.yaml", PASSING)
    bad = gadget.write("b.yaml", FAILING)
    code, out = gadget.cli(str(ok), str(bad))
    assert code == 1
    assert f"FAIL {bad} (" in out
    assert "v1/Namespace nowhere does not exist" in out
    assert out.splitlines()[-1] == "1 passed, 1 failed"


def test_an_invalid_file_exits_2_with_its_position(gadget: Workspace) -> None:
    """An invalid file prints file:line:col: what, counts as failed, and makes the exit status 2."""
    ok = gadget.write("a.yaml", PASSING)
    bad = gadget.write("b.yaml", "scenario: x\nsteps:\n  - advance: soon\n")
    failing = gadget.write("c.yaml", FAILING)
    code, out = gadget.cli(str(ok), str(bad), str(failing))
    assert code == 2
    assert f"{bad}:3:14: invalid duration" in out
    assert out.splitlines()[-1] == "1 passed, 2 failed"


def test_an_unknown_rule_name_is_invalid(gadget: Workspace) -> None:
    """`rules:` names rule files by kind name; an unknown one is reported where it is written."""
    bad = gadget.write("a.yaml", "scenario: x\nrules: [gadget, widget]\nsteps: []\n")
    code, out = gadget.cli(str(bad))
    assert code == 2
    assert f"{bad}:2:17: no rule file named 'widget' (rule files: gadget)" in out


def test_a_reference_without_apiversion_must_be_unambiguous(gadget: Workspace) -> None:
    """A kind known in two apiVersions needs one written; an unknown kind too."""
    bad = gadget.write("a.yaml", """\
        scenario: ambiguous
        objects:
          - object: {apiVersion: a.io/v1, kind: Thing, metadata: {name: t}}
          - object: {apiVersion: b.io/v1, kind: Thing, metadata: {name: t}}
        steps:
          - delete: {kind: Thing, name: t}
          - delete: {kind: Nothing, name: t}
          - reconcile: {kind: Secret, namespace: a, name: b}
        """)
    code, out = gadget.cli(str(bad))
    assert code == 2
    assert f"{bad}:6:13: kind 'Thing' is ambiguous (a.io/v1 or b.io/v1); write `apiVersion`" in out
    assert f"{bad}:7:13: cannot tell the apiVersion of kind 'Nothing'" in out
    assert f"{bad}:8:16: v1/Secret is not an order kind of the loaded rules (loaded: example.io/v1/Gadget)" in out


def test_rules_that_do_not_compile_exit_2(gadget: Workspace) -> None:
    """A broken rule file is reported with the compiler's errors and counted as failed; the scenarios that do not
    need it still run (tests/testing/test_scenario_cli_partial_rules.py)."""
    (gadget.rules / "gadget.yaml").write_text("kind: Gadget\nsteps: 3\n")
    scenario = gadget.write("a.yaml", PASSING)
    code, out = gadget.cli(str(scenario))
    assert code == 2
    assert f"{gadget.rules / 'gadget.yaml'}:2:1: steps: Input should be a valid list" in out
    assert out.splitlines()[-1] == "1 passed, 1 failed"


def test_a_crd_the_api_server_would_refuse_exits_2_at_its_field(gadget: Workspace) -> None:
    """A CRD `kubectl apply` would fail on stops the run before any scenario: one line at the offending field,
    with the API server's words, no traceback."""
    bad = GADGET_CRD.replace(
        "      storage: true\n",
        "      storage: true\n      additionalPrinterColumns: [{name: Size, type: size, jsonPath: .x}]\n", 1)
    assert bad != GADGET_CRD
    (gadget.crds / "gadgets.yaml").write_text(bad)
    code, out = gadget.cli(str(gadget.write("a.yaml", PASSING)))
    assert code == 2
    assert out.splitlines() == [
        f"{gadget.crds / 'gadgets.yaml'}:12:47: the API server refuses CustomResourceDefinition 'gadgets.example.io':"
        ' spec.additionalPrinterColumns[0].type: Invalid value: "size": must be one of'
        " boolean,date,integer,number,string"], out


def test_a_path_that_does_not_exist_exits_2(gadget: Workspace) -> None:
    """A missing path is named; the others still run."""
    ok = gadget.write("a.yaml", PASSING)
    code, out = gadget.cli(str(ok), str(gadget.root / "missing"))
    assert code == 2
    assert f"{gadget.root / 'missing'}: no such file or folder" in out
    assert out.splitlines()[-1] == "1 passed, 0 failed"
