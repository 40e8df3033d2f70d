"""A name the engine gives every expression (clusters, order, item, ...) cannot be taken by the rules:
lint refuses it at the name, naming the field, instead of letting one meaning silently win."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.rules.lint import lint_paths
from tests.conftest import WIDGET


def lines(rules: Path) -> list[str]:
    return [str(e) for e in lint_paths([rules])]


def test_value_named_clusters_is_refused_at_its_name(rules_dir: Callable[..., Path]) -> None:
    found = lines(rules_dir(WIDGET.replace('  size: "order.spec.size || `1`"\n',
                                           '  size: "order.spec.size || `1`"\n  clusters: "[\'db-1\']"\n')))
    hits = [line for line in found if "takes the reserved name 'clusters'" in line]
    assert [line.rpartition("/")[2] for line in hits] == [
        "widget.yaml:18:3: values.clusters: value 'clusters' takes the reserved name 'clusters', which the engine "
        "gives every expression and template (the engine's would win): rename it"], found


def test_input_named_order_is_refused(rules_dir: Callable[..., Path]) -> None:
    rule = WIDGET.replace("values:\n", "inputs:\n  order: {get: {apiVersion: v1, kind: ConfigMap, name: x}}\n"
                          "values:\n")
    found = lines(rules_dir(rule))
    assert any("widget.yaml:17:3: inputs.order: input 'order' takes the reserved name 'order'" in line
               for line in found), found


def test_set_named_item_is_refused(rules_dir: Callable[..., Path]) -> None:
    rule = WIDGET.replace("      - wait:", "      - set: {item: \"`2`\"}\n      - wait:")
    found = lines(rules_dir(rule))
    assert any("set.item: the name set in step build 'item' takes the reserved name 'item'" in line
               for line in found), found


def test_function_shadow_names_its_field(rules_dir: Callable[..., Path]) -> None:
    """The function check names its field too: a value named like the cluster question is refused."""
    found = lines(rules_dir(WIDGET.replace('  size: "order.spec.size || `1`"\n',
                                           '  size: "order.spec.size || `1`"\n  cluster_reachable: "`true`"\n')))
    assert any("widget.yaml:18:3: values.cluster_reachable: value 'cluster_reachable' hides the function "
               "cluster_reachable() in every template" in line for line in found), found
