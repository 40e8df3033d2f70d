"""A small synthetic world for scenario-runner tests: the Gadget kind, its templates and its CRD.

A Gadget owns a Part (an external kind without a CRD, made ready by ``patchStatus``) and a
Secret holding a generated password; it is Ready once its Part reports ``status.ready``.
"""

from __future__ import annotations

import contextlib
import io
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engine import cli
from offline.scenario import Outcome, Runner, Setup, load_setup

GADGET_RULES = textwrap.dedent("""\
    kind: Gadget
    order:
      apiVersion: example.io/v1
      plural: gadgets
      finalizer: example.io/teardown
      fieldManager: rule-engine
    conditions:
      types: [PartReady]
      ready:
        {type: Ready, trueReason: AllReady, trueMessage: all ready, falseReason: NotAllReady, falseMessage: not ready}
      reasons: [AllReady, NotAllReady, Built, WaitingForPart, PartError]
    children:
      namespace: "{{ order.metadata.namespace }}"
      prefix: "{{ order.metadata.name }}-"
      labels: {name: example.io/name, namespace: example.io/namespace, cluster: example.io/cluster}
    values:
      size: "order.spec.size || `1`"
    gates:
      - finalizer: true
        requeue: 1s
    steps:
      - name: build
        condition: PartReady
        metric: GadgetBuild
        error: {reason: PartError}
        do:
          - ensure: secret.yaml.j2
            as: secret
          - apply: part.yaml.j2
            as: part
          - wait: "part.status.ready"
            reason: WaitingForPart
            message: "waiting for part {{ part.metadata.name }}"
            requeue: 10s
          - status: {partName: "part.metadata.name"}
        done: {reason: Built, message: "built", requeue: 1h}
    teardown:
      patientWhile: "`false`"
      do:
        - delete: {apiVersion: example.io/v1, kind: Part}
        - delete: {apiVersion: v1, kind: Secret}
    """)

PART_TEMPLATE = textwrap.dedent("""\
    apiVersion: example.io/v1
    kind: Part
    metadata:
      name: {{ (prefix ~ 'part') | tojson }}
      namespace: {{ childNamespace | tojson }}
      labels: {{ childLabels | tojson }}
    spec:
      size: {{ size | tojson }}
    """)

SECRET_TEMPLATE = textwrap.dedent("""\
    apiVersion: v1
    kind: Secret
    metadata:
      name: {{ (prefix ~ 'secret') | tojson }}
      namespace: {{ childNamespace | tojson }}
      labels: {{ childLabels | tojson }}
    data:
      password: {{ b64enc(password()) | tojson }}
    """)

GADGET_CRD = textwrap.dedent("""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: gadgets.example.io}
    spec:
      group: example.io
      names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
      scope: Namespaced
      versions:
        - name: v1
          served: true
          storage: true
          subresources: {status: {}}
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec:
                  type: object
                  properties:
                    size: {type: integer, default: 1}
                  x-kubernetes-validations:
                    - {rule: "self.size <= 10", message: "size is at most 10"}
                status:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
    """)


@dataclass
class Workspace:
    """A folder with rules/, templates/, crds/ and scenario files; runs them as `engine test` would."""

    root: Path

    @property
    def rules(self) -> Path:
        return self.root / "rules"

    @property
    def crds(self) -> Path:
        return self.root / "crds"

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def setup(self, run_pass: Any = None) -> Setup:
        setup = load_setup(self.rules, self.crds)
        return Setup(catalog=setup.catalog, crds=setup.crds, run_pass=run_pass)

    def run(self, text: str, name: str = "scenarios/s.yaml", run_pass: Any = None) -> Outcome:
        """Run one scenario file through the runner; the outcome carries the report lines."""
        path = self.write(name, text)
        outcome = Runner(self.setup(run_pass)).run_file(path)
        assert outcome is not None, "the file was taken for a fixture"
        return outcome

    def cli(self, *args: str) -> tuple[int, str]:
        """`engine test ARGS --rules ... --crds ...`: exit status and standard output."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = cli.main(["test", *args, "--rules", str(self.rules), "--crds", str(self.crds)])
        return code, out.getvalue()


def report(outcome: Outcome) -> str:
    return "\n".join(outcome.report())


@pytest.fixture
def gadget(tmp_path: Path) -> Workspace:
    """The Gadget rules, templates and CRD in a fresh folder."""
    ws = Workspace(tmp_path)
    ws.write("rules/gadget.yaml", GADGET_RULES)
    ws.write("templates/gadget/part.yaml.j2", PART_TEMPLATE)
    ws.write("templates/gadget/secret.yaml.j2", SECRET_TEMPLATE)
    ws.write("crds/gadgets.yaml", GADGET_CRD)
    return ws
