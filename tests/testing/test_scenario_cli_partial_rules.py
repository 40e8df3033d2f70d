"""`engine test` with one rule file that does not compile runs the other kinds' scenarios; `--crds` repeats."""

from __future__ import annotations

import contextlib
import io
import re

from engine import cli
from tests.testing.conftest import GADGET_CRD, Workspace
from tests.testing.test_scenario_cli import PASSING

BROKEN = """\
    kind: Widget
    order: {apiVersion: example.io/v1, plural: widgets, finalizer: example.io/teardown, fieldManager: m}
    conditions:
      types: [Built]
      ready: {type: Ready, trueReason: A, trueMessage: a, falseReason: B, falseMessage: b}
      reasons: [A, B]
    children:
      namespace: "{{ order.metadata.namespace }}"
      prefix: "{{ order.metadata.name }}-"
      labels: {name: example.io/name, namespace: example.io/namespace, cluster: example.io/cluster}
    values:
      size: "nofunc(order)"
    teardown: {patientWhile: "`false`", do: [{delete: {apiVersion: v1, kind: ConfigMap}}]}
    """

GADGET_ORDER = """\
    scenario: a gadget is served while the widget's rule file is broken
    rules: [gadget]
    objects:
      - object: {apiVersion: v1, kind: Namespace, metadata: {name: shop}}
    steps:
      - create: {apiVersion: example.io/v1, kind: Gadget, metadata: {name: g, namespace: shop}, spec: {size: 1}}
      - settle: {}
      - expect:
          - conditions: {ref: {kind: Gadget, namespace: shop, name: g}, PartReady: False/WaitingForPart}
    """


def test_a_broken_rule_file_is_reported_and_the_other_kinds_scenarios_still_run(gadget: Workspace) -> None:
    """The broken file's errors come first; a scenario of another kind runs and passes; one naming the broken
    kind says its rule file did not compile; the broken file counts as failed and the exit status is 2."""
    gadget.write("rules/widget.yaml", BROKEN)
    ok = gadget.write("sc/gadget.yaml", GADGET_ORDER)
    widget = gadget.write("sc/widget.yaml", "scenario: x\nrules: [widget]\nsteps: []\n")
    code, out = gadget.cli(str(gadget.root / "sc"))
    lines = out.splitlines()
    assert code == 2, out
    assert lines[0] == f"{gadget.rules / 'widget.yaml'}:12:10: size: unknown function nofunc()", out
    assert re.fullmatch(rf"PASS {re.escape(str(ok))} \(\d+\.\d\ds\)", lines[1]), out
    assert lines[2] == f"{widget}:2:9: rule file 'widget' did not compile (its errors are above)", out
    assert lines[3:] == ["1 passed, 2 failed"], out


def test_every_rule_file_passing_but_one_broken_still_exits_2(gadget: Workspace) -> None:
    """Even when every scenario passes, a rule file that did not compile is a failure the summary counts."""
    gadget.write("rules/widget.yaml", BROKEN)
    code, out = gadget.cli(str(gadget.write("a.yaml", PASSING)))
    assert code == 2
    assert out.splitlines()[-1] == "1 passed, 1 failed"


def test_crds_takes_several_folders(gadget: Workspace) -> None:
    """`--crds A --crds B` installs the CRDs of both folders, as `engine lint --crds` reads both: the Gadget's
    (first folder) defaults the order's `spec.size`, the Thing's (second) the Thing's."""
    thing = GADGET_CRD.replace("gadgets", "things").replace("Gadget", "Thing").replace("gadget", "thing")
    gadget.write("more/things.yaml", thing)
    created = GADGET_ORDER.replace("spec: {size: 1}}", "spec: {}}").replace(
        "      - settle: {}\n",
        "      - create: {apiVersion: example.io/v1, kind: Thing, metadata: {name: t, namespace: shop}, spec: {}}\n"
        "      - settle: {}\n").rstrip(" ")
    scenario = gadget.write("a.yaml", created + "".join(
        f"          - present: {{apiVersion: example.io/v1, kind: {kind}, metadata: {{name: {name}, namespace: shop}},"
        " spec: {size: 1}}\n" for kind, name in (("Thing", "t"), ("Gadget", "g"))))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["test", str(scenario), "--rules", str(gadget.rules), "--crds", str(gadget.crds),
                         "--crds", str(gadget.root / "more")])
    assert (code, out.getvalue().splitlines()[-1]) == (0, "1 passed, 0 failed"), out.getvalue()
