"""An order whose name cannot be a label value (longer than 63 bytes, stored where no rule refused it) still has
its children found, torn down and its finalizer released: no list of its children carries that name in a
selector the API server would refuse."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RuleText
from tests.testing.conftest import GADGET_CRD, GADGET_RULES, PART_TEMPLATE, SECRET_TEMPLATE, Workspace, report

LONG = "gadget-with-a-name-of-sixty-four-characters-which-no-label-holds"
OTHER = "g"


def workspace(root: Path) -> Workspace:
    """The Gadget kind with a patient teardown: an error keeps the finalizer, as while a cleaner runs."""
    ws = Workspace(root)
    rules = RuleText(GADGET_RULES).swap('patientWhile: "`false`"', 'patientWhile: "`true`"')
    ws.write("rules/gadget.yaml", rules)
    ws.write("templates/gadget/part.yaml.j2", PART_TEMPLATE)
    ws.write("templates/gadget/secret.yaml.j2", SECRET_TEMPLATE)
    ws.write("crds/gadgets.yaml", GADGET_CRD)
    return ws


def labels(name: str) -> str:
    return f"{{example.io/name: {name}, example.io/namespace: shop, example.io/cluster: ''}}"


def test_a_long_named_order_tears_down_its_children_and_lets_go(tmp_path: Path) -> None:
    """Its children (stored as an emulator stores them, labels unchecked) go, another order's stay, and it goes."""
    assert len(LONG) == 64
    outcome = workspace(tmp_path).run(f"""\
        scenario: a long-named gadget is torn down
        objects:
          - object: {{apiVersion: v1, kind: Namespace, metadata: {{name: shop}}}}
          - object: {{apiVersion: example.io/v1, kind: Gadget,
                     metadata: {{name: {LONG}, namespace: shop, finalizers: [example.io/teardown]}}, spec: {{}}}}
          - object: {{apiVersion: example.io/v1, kind: Part, metadata: {{name: {LONG}-part, namespace: shop,
                     labels: {labels(LONG)}}}}}
          - object: {{apiVersion: v1, kind: Secret, metadata: {{name: {LONG}-secret, namespace: shop,
                     labels: {labels(LONG)}}}}}
          - object: {{apiVersion: example.io/v1, kind: Part, metadata: {{name: {LONG}-part-of-g, namespace: shop,
                     labels: {labels(OTHER)}}}}}
          - object: {{apiVersion: example.io/v1, kind: Part, metadata: {{name: {LONG}-part-2, namespace: shop,
                     labels: {{example.io/name: {LONG}, example.io/namespace: other, example.io/cluster: ''}}}}}}
        steps:
          - delete: {{apiVersion: example.io/v1, kind: Gadget, namespace: shop, name: {LONG}}}
          - settle: {{}}
          - advance: 1m
          - expect:
              - absent: {{apiVersion: example.io/v1, kind: Gadget, namespace: shop, name: {LONG}}}
              - absent: {{apiVersion: example.io/v1, kind: Part, namespace: shop, name: {LONG}-part}}
              - absent: {{kind: Secret, namespace: shop, name: {LONG}-secret}}
              - present: {{kind: Part, metadata: {{name: {LONG}-part-of-g, namespace: shop}}}}
              - present: {{kind: Part, metadata: {{name: {LONG}-part-2, namespace: shop}}}}
        """)
    assert outcome.status == "PASS", report(outcome)
