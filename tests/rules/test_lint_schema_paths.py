"""`engine lint` checks every path read from the order and from inputs against their CRD schemas."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.rules.folder import RuleFolder
from engine.rules.lint import lint_paths
from tests.conftest import PART, WIDGET

CRD = textwrap.dedent("""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: widgets.example.io}
    spec:
      group: example.io
      names: {kind: Widget, plural: widgets}
      scope: Namespaced
      versions:
        - name: v1
          served: true
          storage: true
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec:
                  type: object
                  properties:
                    size: {type: integer}
                    region: {type: string}
                    hosts:
                      type: array
                      items: {type: object, properties: {name: {type: string}}}
                    settings: {type: object, additionalProperties: {type: string}}
                    extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
                status:
                  type: object
                  properties:
                    ready: {type: boolean}
    ---
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: gears.example.io}
    spec:
      group: example.io
      names: {kind: Gear, plural: gears}
      scope: Namespaced
      versions:
        - name: v1
          served: true
          storage: true
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec: {type: object, properties: {teeth: {type: integer}}}
    """)

GEARS = 'inputs:\n  gear: {get: {apiVersion: example.io/v1, kind: Gear, name: g}}\n' \
        '  gears: {list: {apiVersion: example.io/v1, kind: Gear}}\n' \
        '  config: {get: {apiVersion: v1, kind: ConfigMap, name: c}}\nvalues:\n'


def lint(rules_dir: Callable[..., Path], size: str, template: str = PART) -> list[str]:
    """Lint the Widget kind with the CRDs beside its rules folder and the `size` value set to ``size``."""
    rule = WIDGET.replace('  size: "order.spec.size || `1`"', f"  size: {size}").replace("values:\n", GEARS)
    return [str(e) for e in lint_paths([rules_dir(rule, template, extra={"crds/example.yaml": CRD})])]


def test_known_paths_lint_clean(rules_dir: Callable[..., Path]) -> None:
    """Declared fields, array elements, maps, preserved subtrees, metadata and kinds without a CRD pass."""
    size = ('"[order.spec.size, order.spec.hosts[0].name, order.spec.hosts[*].name, order.spec.settings.anything,'
            ' order.spec.extra.whatever.deep, order.metadata.labels.\\"app.x\\", order.metadata.ownerReferences[0].uid,'
            ' status.ready, gear.spec.teeth, gears[0].spec.teeth, config.data.anything, order.kind]"')
    assert lint(rules_dir, size) == []


def test_misspelt_order_field_is_an_error_at_its_token(rules_dir: Callable[..., Path]) -> None:
    """`order.spec.regoin` is an unknown field of the order's CRD, with the closest declared field."""
    found = lint(rules_dir, '"order.spec.regoin || `1`"')
    assert len(found) == 1, found
    assert found[0].endswith("widget.yaml:21:21: order.spec has no field 'regoin'; did you mean 'region'?"), found


@pytest.mark.parametrize(
    ("size", "message"),
    [
        ('"order.spec.hosts[0].nmae"', "order.spec.hosts.[] has no field 'nmae'; did you mean 'name'?"),
        ('"order.metadata.lables"', "order.metadata has no field 'lables'; did you mean 'labels'?"),
        ('"status.redy"', "order.status has no field 'redy'; did you mean 'ready'?"),
        ('"gear.spec.teth"', "gear.spec has no field 'teth'; did you mean 'teeth'?"),
        ('"gears[?spec.teth > `1`]"', "gears[].spec has no field 'teth'; did you mean 'teeth'?"),
        ('"order.sepc.size"', "order has no field 'sepc'; did you mean 'spec'?"),
    ],
)
def test_unknown_fields_of_order_metadata_status_and_inputs(rules_dir: Callable[..., Path], size: str,
                                                           message: str) -> None:
    """Unknown fields below arrays, in metadata (ObjectMeta), in status and in inputs with a CRD are errors."""
    found = lint(rules_dir, size)
    assert any(line.endswith(message) for line in found), found


def test_template_paths_are_checked(rules_dir: Callable[..., Path]) -> None:
    """A template reading an unknown order field is an error on the template's line."""
    template = PART.replace("{{ size | string | tojson }}", "{{ order.spec.regoin | string | tojson }}")
    found = lint(rules_dir, '"`1`"', template)
    assert any("part.yaml.j2:8:" in line and "order.spec has no field 'regoin'" in line for line in found), found


def test_without_crds_nothing_is_checked(rules_dir: Callable[..., Path]) -> None:
    """A kind without a CRD in the CRD folder is not checked."""
    rule = WIDGET.replace("order.spec.size", "order.spec.regoin")
    assert [str(e) for e in lint_paths([rules_dir(rule)])] == []


def test_lint_command_takes_a_crd_folder(rules_dir: Callable[..., Path], tmp_path: Path) -> None:
    """`engine lint --crds DIR` checks against that folder's CRDs."""
    rules = rules_dir(WIDGET.replace("order.spec.size", "order.spec.regoin"))
    crds = tmp_path / "elsewhere"
    crds.mkdir()
    (crds / "widget.yaml").write_text(CRD)
    run = subprocess.run([sys.executable, "-m", "engine.cli", "lint", str(rules), "--crds", str(crds)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 1, run.stderr
    assert "order.spec has no field 'regoin'" in run.stdout


@pytest.mark.parametrize("rules", ["rules", "examples/webhookreceiver/rules", "examples/tenantspace/rules"])
def test_project_rule_files_read_only_declared_fields(rules: str) -> None:
    """The shipped kinds and the example lint clean with their CRDs (deploy/crds/; the example's crds/ and the
    project's stand-ins for external kinds, deploy/crds/external/)."""
    root = Path(__file__).resolve().parents[2]
    crds = None if rules == "rules" else [(root / rules).parent / "crds", root / "deploy" / "crds" / "external"]
    assert [str(e) for e in lint_paths([root / rules], crds=crds)] == []


def test_a_crd_the_api_server_would_refuse_is_an_error_at_its_field(rules_dir: Callable[..., Path],
                                                                     tmp_path: Path) -> None:
    """A CRD beside the rules that `kubectl apply` would fail on (here a printer column of type `str` and a
    jsonPath without its leading dot) is an error at the offending field's line and column, naming it as the API
    server does (a version's printer columns that are the same in every version are spec.additionalPrinterColumns
    to it)."""
    bad = CRD.replace("      served: true\n", "      served: true\n      additionalPrinterColumns:\n"
                      "        - {name: Size, type: str, jsonPath: spec.size}\n", 1)
    assert bad != CRD
    found = [str(e) for e in lint_paths([rules_dir(WIDGET, extra={"crds/example.yaml": bad})], check_crds=True)]
    refusal = "the API server refuses CustomResourceDefinition 'widgets.example.io': "
    column = "spec.additionalPrinterColumns[0]"
    assert found == [
        f"{tmp_path}/crds/example.yaml:12:24: {refusal}{column}.type: Invalid value: \"str\": must be one of"
        " boolean,date,integer,number,string",
        f"{tmp_path}/crds/example.yaml:12:35: {refusal}{column}.JSONPath: Invalid value: \"spec.size\":"
        " must be a simple json path starting with .",
    ], found


def test_a_crd_file_that_does_not_parse_is_an_error_at_its_line(rules_dir: Callable[..., Path]) -> None:
    """A CRD file beside the rules that is not YAML is one error at the place the parser stopped."""
    found = [str(e) for e in lint_paths([rules_dir(WIDGET, extra={"crds/example.yaml": "kind: [unclosed\n"})],
                                        check_crds=True)]
    assert len(found) == 1 and "crds/example.yaml:2:1: cannot read this CRD file:" in found[0], found


def test_a_schema_field_without_a_type_is_an_error_at_its_name(rules_dir: Callable[..., Path], tmp_path: Path) -> None:
    """A CRD property without a `type` (not structural: the API server refuses the CRD) is reported at the
    property's name in the CRD file (named as the API server names it: a schema every version shares is
    spec.validation to it)."""
    bad = CRD.replace("size: {type: integer}", "size: {minimum: 1}", 1)
    assert bad != CRD
    found = [str(e) for e in lint_paths([rules_dir(WIDGET, extra={"crds/example.yaml": bad})], check_crds=True)]
    line = next(n for n, text in enumerate(bad.splitlines(), 1) if "size: {minimum: 1}" in text)
    column = bad.splitlines()[line - 1].index("size") + 1
    assert found == [f"{tmp_path}/crds/example.yaml:{line}:{column}: the API server refuses CustomResourceDefinition"
                     " 'widgets.example.io': spec.validation.openAPIV3Schema.properties[spec].properties[size]"
                     ".type: Required value: must not be empty for specified object fields"], found


def test_the_operators_own_lint_leaves_the_crds_to_the_cluster(rules_dir: Callable[..., Path], tmp_path: Path) -> None:
    """`engine lint` refuses a CRD a cluster would refuse; the operator's lint at start and reload does not (the
    cluster it serves already admitted its CRDs), so such a file beside the rules never stops the operator."""
    bad = CRD.replace("size: {type: integer}", "size: {minimum: 1}", 1)
    rules = rules_dir(WIDGET, extra={"crds/example.yaml": bad})
    assert RuleFolder(rules).lint() == []
    run = subprocess.run([sys.executable, "-m", "engine.cli", "lint", str(rules)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 1, run.stderr
    assert "properties[size].type: Required value: must not be empty for specified object fields" in run.stdout
