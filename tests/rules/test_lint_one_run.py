"""`engine lint` reports every mistake of a rule file in one run, and says what it checked.

Each test writes a small rules folder (the Widget kind, its template and CRDs), runs ``engine lint``
as a user would (in-process, from the folder above ``rules/``) and compares the exact lines printed:
one mistake must never hide another, whatever stage finds it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine import cli
from tests.conftest import WIDGET
from tests.rules.test_lint_schema_paths import CRD

GEAR_SPEC = next(line for line in CRD.splitlines() if "teeth" in line)
GEAR_STATUS = CRD.replace(GEAR_SPEC, GEAR_SPEC + "\n" + GEAR_SPEC.replace(
    "spec: {type: object, properties: {teeth:", "status: {type: object, properties: {passwordGeneration:"))
TYPO = WIDGET.replace('  size: "order.spec.size || `1`"', '  size: "order.spec.regoin || `1`"')
TYPO_LINE = "rules/widget.yaml:17:21: order.spec has no field 'regoin'; did you mean 'region'?"


@pytest.fixture
def lint(rules_dir: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, list[str], list[str]]]:
    """Write the rule file (and the CRDs beside it), run `engine lint rules`: exit status, stdout and stderr lines."""

    def run(rule: str, crd: str = CRD) -> tuple[int, list[str], list[str]]:
        rules_dir(rule, extra={"crds/example.yaml": crd})
        monkeypatch.chdir(tmp_path)
        code = cli.main(["lint", "rules"])
        out, err = capsys.readouterr()
        return code, out.splitlines(), err.splitlines()

    return run


def test_a_field_typo_alone_says_did_you_mean(lint: Callable[..., tuple[int, list[str], list[str]]]) -> None:
    code, out, _ = lint(TYPO)
    assert (code, out) == (1, [TYPO_LINE])


def test_a_field_typo_is_reported_beside_an_unknown_function(
        lint: Callable[..., tuple[int, list[str], list[str]]]) -> None:
    """An unknown function elsewhere in the file used to hide the field check of the whole file."""
    code, out, _ = lint(TYPO.replace('- wait: "part.status.ready"', '- wait: "nofunc(part)"'))
    assert code == 1
    assert out == [TYPO_LINE, "rules/widget.yaml:25:16: wait: unknown function nofunc()"]


def test_a_field_typo_is_reported_beside_a_bad_duration(
        lint: Callable[..., tuple[int, list[str], list[str]]]) -> None:
    code, out, _ = lint(TYPO.replace("requeue: 10s", "requeue: 10 s"))
    assert code == 1
    assert out == [TYPO_LINE, "rules/widget.yaml:28:18: requeue: '10 s' is neither a Go duration (such as 10s, "
                              "1m30s or 720h: a number and a unit, no space) nor a JMESPath expression giving seconds"]


def test_a_field_typo_is_reported_beside_a_broken_section(
        lint: Callable[..., tuple[int, list[str], list[str]]]) -> None:
    """A section that does not validate (here `conditions`) leaves the rest of the file checked."""
    code, out, _ = lint(TYPO.replace("  types: [BuiltReady]", "  types: BuiltReady"))
    assert code == 1
    assert out == ["rules/widget.yaml:8:3: conditions.types: Input should be a valid list", TYPO_LINE]


def test_a_schema_error_does_not_hide_a_value_that_shadows_a_function(
        lint: Callable[..., tuple[int, list[str], list[str]]]) -> None:
    """An unknown field in a teardown action is reported where it is, and the later stages still run."""
    rule = WIDGET.replace('  size: "order.spec.size || `1`"', '  size: "order.spec.size || `1`"\n  password: "`1`"') \
        .replace("    - delete: {apiVersion: v1, kind: ConfigMap}",
                 "    - delete: {apiVersion: v1, kind: ConfigMap}\n      bogus: 1")
    code, out, _ = lint(rule)
    assert code == 1
    assert out == [
        "rules/widget.yaml:18:3: values.password: value 'password' hides the function password() in every template: "
        "rename it",
        "rules/widget.yaml:35:7: teardown.do.0: unknown field 'bogus'",
    ]


WATCHES = """\
watches:
  - apiVersion: example.io/v1
    kind: Gear
    name: "spec.owner"
    changed: ["status.passwordGeneration", "status.nope"]
  - apiVersion: example.io/v1
    kind: Cog
    name: "metadata.name"
    changed: ["status.whatever"]
"""


def test_a_watch_query_is_checked_against_the_watched_kind_only(
        lint: Callable[..., tuple[int, list[str], list[str]]]) -> None:
    """`status.x` in a watch on a Gear reads the Gear's status, not the order's; a kind without a CRD: unchecked."""
    code, out, _ = lint(WIDGET + WATCHES, GEAR_STATUS)
    assert code == 1
    assert out == [
        "rules/widget.yaml:37:17: watch name: Gear.spec has no field 'owner'",
        "rules/widget.yaml:38:52: watch changed: Gear.status has no field 'nope'",
    ]


def test_every_unknown_function_of_one_expression_is_reported(
        lint: Callable[..., tuple[int, list[str], list[str]]]) -> None:
    code, out, _ = lint(WIDGET.replace('  size: "order.spec.size || `1`"',
                                       '  size: "[nofunc(order), otherfunc(order), lenght(order)]"'))
    assert code == 1
    assert out == [
        "rules/widget.yaml:17:11: size: unknown function nofunc()",
        "rules/widget.yaml:17:26: size: unknown function otherfunc()",
        "rules/widget.yaml:17:44: size: unknown function lenght(); did you mean length()?",
    ]


def test_a_clean_run_ends_with_a_summary(lint: Callable[..., tuple[int, list[str], list[str]]]) -> None:
    """Silence is not an answer: stdout stays the error lines (none), stderr says what was checked."""
    code, out, err = lint(WIDGET + WATCHES.replace("spec.owner", "spec.teeth").replace(', "status.nope"', ""),
                          GEAR_STATUS)
    assert (code, out) == (0, [])
    assert err == ["engine lint: 1 kind, 1 rule file, 1 template, 2 CRDs; 5 rules checked, 0 errors"]


def test_a_failed_run_ends_with_a_count(lint: Callable[..., tuple[int, list[str], list[str]]]) -> None:
    code, out, err = lint(TYPO.replace("requeue: 10s", "requeue: 10 s"))
    assert (code, len(out)) == (1, 2)
    assert err == ["engine lint: 1 kind, 1 rule file, 1 template, 2 CRDs; 3 rules checked, 2 errors in 1 file"]


def test_a_missing_kind_leaves_the_rest_of_the_file_checked(
        lint: Callable[..., tuple[int, list[str], list[str]]]) -> None:
    """Without `kind:` the file's name stands in (its paths cannot be matched to a CRD), so the names are checked."""
    code, out, _ = lint(WIDGET.replace("kind: Widget\n", "", 1).replace("  size:", '  password: "`1`"\n  size:'))
    assert code == 1
    assert out == [
        "rules/widget.yaml:1:1: kind: missing required field 'kind'",
        "rules/widget.yaml:16:3: values.password: value 'password' hides the function password() in every template: "
        "rename it",
    ]
