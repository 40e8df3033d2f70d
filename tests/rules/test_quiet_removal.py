"""`children.quietRemoval` (decision 38): a query on a child saying its removal, after a step of its order
deleted it, wakes nothing. It compiles to `CompiledKind.quiet_removal`; a mistake in it is a lint error at
its token, with file:line:col."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.rules.catalog import load_catalog
from engine.rules.lint import lint_paths
from tests.conftest import WIDGET

LABELS = "  labels: {name: example.io/name, namespace: example.io/namespace, cluster: example.io/cluster}\n"


def with_quiet(query: str) -> str:
    assert LABELS in WIDGET
    return WIDGET.replace(LABELS, LABELS + f'  quietRemoval: "{query}"\n')


def child(name: str) -> dict[str, object]:
    return {"apiVersion": "example.io/v1", "kind": "Gear", "metadata": {"name": name, "namespace": "ns"}}


def test_the_query_says_which_children_are_quiet(rules_dir: Callable[..., Path]) -> None:
    kind = next(iter(load_catalog(rules_dir(with_quiet("ends_with(metadata.name, '-probe')"))).values()))
    assert kind.quiet_removal(child("a-probe"))
    assert not kind.quiet_removal(child("a-part"))
    assert not kind.quiet_removal({"metadata": {"name": 5}}), "a query failing on the data: not quiet"


def test_without_it_no_removal_is_quiet(rules_dir: Callable[..., Path]) -> None:
    kind = next(iter(load_catalog(rules_dir()).values()))
    assert not kind.quiet_removal(child("a-probe"))


def test_a_mistake_is_named_at_its_token(rules_dir: Callable[..., Path]) -> None:
    rule = with_quiet("ends_wiht(metadata.name, '-probe')")
    line = rule.splitlines().index(next(x for x in rule.splitlines() if "quietRemoval" in x)) + 1
    found = [str(e).rpartition("/")[2] for e in lint_paths([rules_dir(rule)])]
    assert any(f.startswith(f"widget.yaml:{line}:18: quietRemoval: unknown function ends_wiht()") for f in found), found
