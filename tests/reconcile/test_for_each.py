"""An apply with `forEach:` renders its template once per element of a list (the element is `item`): children that
follow a list in the spec, one per entry; an entry taken off the list leaves a child the rules delete."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from engine.cluster.patches import json_copy
from engine.cluster.registry import ClusterSet
from engine.outcome import Request
from engine.reconcile.run import run_pass
from engine.rules.catalog import load_catalog
from engine.rules.lint import lint_paths
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster
from tests.cluster.kube_kit import widget_crd
from tests.conftest import PART, WIDGET

RULE = WIDGET.add_after("""  size: "order.spec.size || `1`"
""", """  colors: "order.spec.colors || `[]`"
  wantedParts: "map(&join('', ['part-', @]), colors)"
inputs:
  stale:
    list: {apiVersion: v1, kind: ConfigMap, namespace: "{{ childNamespace }}"}
    children: true
    where: "!contains(wantedParts, replace(item.metadata.name, prefix, ''))"
""").swap("""      - apply: part.yaml.j2
        as: part
""", """      - apply: part.yaml.j2
        forEach: colors
        as: parts
      - delete: stale
""").swap('''      - wait: "part.status.ready"''', '''      - wait: "length(parts) == length(colors)"''').swap(
    "waiting for part {{ part.metadata.name }}", "waiting for {{ parts | length }} parts")
EACH = PART.swap("{{ (prefix ~ 'part') | tojson }}", "{{ (prefix ~ 'part-' ~ item) | tojson }}").swap(
    "{{ size | string | tojson }}", "{{ item | tojson }}")


def test_one_child_per_entry_and_the_removed_entry_deleted(rules_dir: Callable[..., Path]) -> None:
    clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    memory = MemoryCluster("", clock=clock)
    memory.create(widget_crd("example.io"))
    kind = next(iter(load_catalog(rules_dir(RULE, EACH)).values()))
    clusters = ClusterSet(memory)
    memory.create({"apiVersion": "example.io/v1", "kind": "Widget",
                           "metadata": {"name": "w", "namespace": "ns"}, "spec": {"colors": ["red", "blue"]}})

    def parts() -> dict[str, str]:
        items = memory.list("v1", "ConfigMap", "ns").items
        return {item["metadata"]["name"]: item["data"]["size"] for item in items}

    def settle() -> None:
        for _ in range(3):
            assert run_pass(kind, Request(kind.key, "", "ns", "w"), clusters=clusters, clock=clock).error is None

    settle()
    assert parts() == {"w-part-red": "red", "w-part-blue": "blue"}
    ready = [c for c in memory.get("example.io/v1", "Widget", "ns", "w")["status"]["conditions"]
             if c["type"] == "BuiltReady"]
    assert ready[0]["status"] == "True", ready
    order = json_copy(memory.get("example.io/v1", "Widget", "ns", "w"))
    order["spec"]["colors"] = ["blue", "green"]
    memory.update(order)
    settle()
    assert parts() == {"w-part-blue": "blue", "w-part-green": "green"}


def test_item_is_read_only_by_a_template_applied_for_each(rules_dir: Callable[..., Path]) -> None:
    """A template that reads `item` applied without forEach is a lint error at the apply; with it, none; forEach
    reads only names the step has."""
    assert [str(e) for e in lint_paths([rules_dir(RULE, EACH)])] == []
    without = RULE.replace("        forEach: colors\n", "")
    found = [str(e) for e in lint_paths([rules_dir(without, EACH)])]
    assert any("apply action template: unknown name 'item'" in e for e in found), found
    typo = RULE.replace("forEach: colors", "forEach: colours")
    found = [str(e) for e in lint_paths([rules_dir(typo, EACH)])]
    assert any("unknown name 'colours'; did you mean 'colors'?" in e for e in found), found
