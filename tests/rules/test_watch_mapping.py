"""Watches by expression (issue 10 item 2): a declared watch maps an event to the orders it names,
by name (one or a list), by `orders` (names or {name, namespace, cluster} maps, across clusters),
or through the index (one key or a list, orders on every cluster)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.outcome import Request
from engine.rules.catalog import load_catalog
from engine.rules.model import CompiledKind, CompiledWatch
from tests.conftest import WIDGET

KEY = "example.io/v1/Widget"


def kind_with(rules_dir: Callable[..., Path], watches: str, index_key: str = "") -> CompiledKind:
    rule = WIDGET + index_key + "watches:\n" + watches
    return next(iter(load_catalog(rules_dir(rule)).values()))


def declared(kind: CompiledKind, of: str) -> CompiledWatch:
    (watch,) = [w for w in kind.watches if w.kind == of]
    return watch


def test_orders_named_by_an_object_on_any_cluster(rules_dir: Callable[..., Path]) -> None:
    kind = kind_with(rules_dir, "  - {apiVersion: example.io/v1, kind: Server, clusters: all, orders: spec.tenants}\n")
    watch = declared(kind, "Server")
    server = {"metadata": {"name": "s", "namespace": "infra"},
              "spec": {"tenants": ["local", {"name": "far", "namespace": "team-b", "cluster": "edge-1"},
                                   {"name": "mgmt", "namespace": "team-a", "cluster": ""},
                                   {"name": ""}, 7, {"namespace": "x"}, "local"]}}
    assert watch.requests(server, "edge-2", lambda key: []) == [
        Request(KEY, "edge-2", "infra", "local"), Request(KEY, "edge-1", "team-b", "far"),
        Request(KEY, "", "team-a", "mgmt")]
    assert watch.requests({"metadata": {"name": "s"}, "spec": {"tenants": "nope"}}, "", lambda key: []) == []


def test_a_name_query_may_name_several_orders(rules_dir: Callable[..., Path]) -> None:
    kind = kind_with(rules_dir, "  - {apiVersion: example.io/v1, kind: Grant, name: spec.widgets}\n")
    grant = {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"widgets": ["a", "b", "a", None]}}
    assert declared(kind, "Grant").requests(grant, "", lambda key: []) == [
        Request(KEY, "", "ns", "a"), Request(KEY, "", "ns", "b")]


def test_index_keys_may_be_lists_on_both_sides(rules_dir: Callable[..., Path]) -> None:
    kind = kind_with(rules_dir, "  - {apiVersion: example.io/v1, kind: Hub, index: spec.keys}\n",
                     'indexKey: "order.spec.hubs"\n')
    assert kind.index_keys({"spec": {"hubs": ["h1", "h2", 3]}}, "edge-1") == ["h1", "h2"]
    index = {"h1": [("edge-1", "ns", "a")], "h2": [("", "ns", "b"), ("edge-1", "ns", "a")]}
    hub = {"metadata": {"name": "h"}, "spec": {"keys": ["h1", "h2"]}}
    assert declared(kind, "Hub").requests(hub, "", lambda key: index.get(key, [])) == [
        Request(KEY, "edge-1", "ns", "a"), Request(KEY, "", "ns", "b")]


def test_a_watch_with_two_mappings_is_a_lint_error(rules_dir: Callable[..., Path]) -> None:
    from engine.rules.lint import lint_paths
    rule = WIDGET + "watches:\n  - {apiVersion: example.io/v1, kind: Hub, index: spec.k, orders: spec.o}\n"
    found = [str(e) for e in lint_paths([rules_dir(rule)])]
    assert any("widget.yaml:" in line and "a watch maps its events one way" in line for line in found), found
