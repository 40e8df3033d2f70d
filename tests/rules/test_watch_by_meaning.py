"""Watches an author declares by meaning: `referencedBy` (the orders naming the object, an index the engine keeps),
`mapBy: labels` (the order's ownership labels) and a watch `id` that a later file's watch replaces."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.outcome import Request
from engine.rules.catalog import load_catalog
from engine.rules.lint import lint_paths
from engine.rules.model import CompiledKind, CompiledWatch
from engine.runtime.kinds import shard_scoped_kinds
from tests.conftest import WIDGET

KEY = "example.io/v1/Widget"


def kind_with(rules_dir: Callable[..., Path], watches: str, extra: str = "") -> CompiledKind:
    return next(iter(load_catalog(rules_dir(WIDGET + extra + "watches:\n" + watches)).values()))


def declared(kind: CompiledKind, of: str) -> list[CompiledWatch]:
    return [w for w in kind.watches if w.kind == of]


def lint(rules_dir: Callable[..., Path], rule: str, extra: dict[str, str] | None = None) -> list[str]:
    return [str(e) for e in lint_paths([rules_dir(rule, extra=extra)])]


def index_of(kind: CompiledKind, orders: dict[tuple[str, str, str], dict[str, object]]) -> Callable[[str], list[
        tuple[str, str, str]]]:
    """The index the runtime keeps, built from the orders given by (cluster, namespace, name)."""
    keys: dict[str, list[tuple[str, str, str]]] = {}
    for member, order in orders.items():
        meta = {"namespace": member[1], "name": member[2]}
        for key in kind.index_keys({"metadata": meta, **order}, member[0]):
            keys.setdefault(key, []).append(member)
    return lambda key: sorted(keys.get(key, []))


def test_referenced_by_wakes_the_orders_naming_the_object_on_its_cluster_in_its_namespace(
        rules_dir: Callable[..., Path]) -> None:
    kind = kind_with(rules_dir, "  - {apiVersion: example.io/v1, kind: Hub, clusters: all, "
                                "referencedBy: order.spec.hubRef.name}\n")
    (watch,) = declared(kind, "Hub")
    index = index_of(kind, {("", "ns", "a"): {"spec": {"hubRef": {"name": "h1"}}},
                            ("edge", "ns", "b"): {"spec": {"hubRef": {"name": "h1"}}},
                            ("", "other", "c"): {"spec": {"hubRef": {"name": "h1"}}},
                            ("", "ns", "d"): {"spec": {"hubRef": {"name": "h2"}}}})
    hub = {"metadata": {"name": "h1", "namespace": "ns"}}
    assert watch.requests(hub, "", index) == [Request(KEY, "", "ns", "a")]
    assert watch.requests(hub, "edge", index) == [Request(KEY, "edge", "ns", "b")]
    # A kind without namespaces: the name alone is compared, on the event's cluster.
    assert watch.requests({"metadata": {"name": "h1"}}, "", index) == [
        Request(KEY, "", "ns", "a"), Request(KEY, "", "other", "c")]


def test_referenced_by_with_a_namespace_the_order_names(rules_dir: Callable[..., Path]) -> None:
    kind = kind_with(rules_dir, "  - apiVersion: example.io/v1\n    kind: Hub\n    referencedBy:\n"
                                "      name: order.spec.hubRef.name\n      namespace: order.spec.hubRef.namespace\n")
    (watch,) = declared(kind, "Hub")
    index = index_of(kind, {("", "ns", "a"): {"spec": {"hubRef": {"name": "h", "namespace": "infra"}}},
                            ("", "infra", "b"): {"spec": {"hubRef": {"name": "h"}}},
                            ("", "ns", "c"): {"spec": {"hubRef": {"name": "h"}}}})
    assert watch.requests({"metadata": {"name": "h", "namespace": "infra"}}, "", index) == [
        Request(KEY, "", "infra", "b"), Request(KEY, "", "ns", "a")]
    assert watch.requests({"metadata": {"name": "h", "namespace": "ns"}}, "", index) == [Request(KEY, "", "ns", "c")]


def test_two_references_to_one_kind_and_an_index_key_do_not_collide(rules_dir: Callable[..., Path]) -> None:
    """The engine builds each reference's keys: a user's indexKey equal to a name, or a second reference path to
    the same kind, wakes only what it says."""
    kind = kind_with(rules_dir, "  - {apiVersion: example.io/v1, kind: Hub, referencedBy: order.spec.primary}\n"
                                "  - {apiVersion: example.io/v1, kind: Hub, referencedBy: order.spec.backup}\n"
                                "  - {apiVersion: example.io/v1, kind: Pool, index: metadata.name}\n",
                     'indexKey: "order.spec.pool"\n')
    primary, backup = declared(kind, "Hub")
    (pool,) = declared(kind, "Pool")
    index = index_of(kind, {("", "ns", "a"): {"spec": {"primary": "x", "pool": "x"}},
                            ("", "ns", "b"): {"spec": {"backup": "x"}}})
    x = {"metadata": {"name": "x", "namespace": "ns"}}
    assert primary.requests(x, "", index) == [Request(KEY, "", "ns", "a")]
    assert backup.requests(x, "", index) == [Request(KEY, "", "ns", "b")]
    assert pool.requests(x, "", index) == [Request(KEY, "", "ns", "a")]


def test_a_status_write_keeps_the_reference_keys_and_maps_once(rules_dir: Callable[..., Path]) -> None:
    """What the index and the mapping read is known: an order's status write computes no keys again, and a
    referenced object's status write is mapped through one object, not both."""
    kind = kind_with(rules_dir, "  - {apiVersion: example.io/v1, kind: Hub, referencedBy: order.spec.hubRef.name}\n")
    (watch,) = declared(kind, "Hub")
    order = {"metadata": {"name": "a", "namespace": "ns"}, "spec": {"hubRef": {"name": "h"}}}
    assert kind.index_alike(order, {**order, "status": {"x": 1}})
    assert not kind.index_alike(order, {**order, "spec": {"hubRef": {"name": "g"}}})
    hub = {"metadata": {"name": "h", "namespace": "ns"}}
    assert watch.maps_alike(hub, {**hub, "status": {"ready": True}})


def test_a_malformed_reference_fails_so_the_order_is_logged_and_left_out(rules_dir: Callable[..., Path]) -> None:
    from engine.expr.errors import ExprError
    kind = kind_with(rules_dir, "  - {apiVersion: example.io/v1, kind: Hub, referencedBy: order.spec.hubRef.name}\n")
    for spec in ({"hubRef": "h"}, {"hubRef": {"name": 42}}):
        try:
            kind.index_keys({"metadata": {"name": "a", "namespace": "ns"}, "spec": spec}, "")
        except ExprError as err:
            assert "42" not in str(err)
        else:
            raise AssertionError(f"no error for {spec}")
    assert kind.index_keys({"metadata": {"name": "a", "namespace": "ns"}, "spec": {}}, "") == []


def test_referenced_by_reads_the_order_only(rules_dir: Callable[..., Path]) -> None:
    found = lint(rules_dir, WIDGET + "watches:\n  - {apiVersion: example.io/v1, kind: Hub, "
                                     "referencedBy: \"size || order.spec.hub\"}\n")
    assert any("widget.yaml:" in line and "watch referencedBy: unknown name 'size'" in line for line in found), found


def test_referenced_by_paths_are_checked_against_the_order_s_crd(rules_dir: Callable[..., Path]) -> None:
    crd = """\
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
                hubRef: {type: object, properties: {name: {type: string}}}
"""
    rule = WIDGET + "watches:\n  - {apiVersion: example.io/v1, kind: Hub, referencedBy: order.spec.hubRf.name}\n"
    found = lint(rules_dir, rule, extra={"crds/widget.yaml": crd})
    assert any("widget.yaml:" in line and "order.spec has no field 'hubRf'; did you mean 'hubRef'?" in line
               for line in found), found


def test_map_by_labels_uses_the_ownership_labels(rules_dir: Callable[..., Path]) -> None:
    kind = kind_with(rules_dir, "  - {apiVersion: v1, kind: Secret, clusters: all, mapBy: labels}\n")
    (watch,) = declared(kind, "Secret")
    assert (watch.mapping, watch.clusters) == ("labelled", "all")
    secret = {"metadata": {"name": "s", "namespace": "apps", "labels": {
        "example.io/name": "a", "example.io/namespace": "ns", "example.io/cluster": "edge-1"}}}
    assert watch.requests(secret, "edge-1", lambda key: []) == [Request(KEY, "edge-1", "ns", "a")]
    assert watch.requests({"metadata": {"name": "t", "namespace": "apps"}}, "", lambda key: []) == []
    assert watch.maps_alike(secret, {**secret, "data": {"k": "dg=="}})
    # Another controller's objects carry no shard stamp: a shard member caches the kind whole, not by its stamp.
    assert ("v1", "Secret") not in shard_scoped_kinds({kind.key: kind})


COMMON = ("watches:\n  - {id: hub, apiVersion: example.io/v1, kind: Hub, referencedBy: order.spec.hub, "
          "changed: [metadata.generation]}\n  - {apiVersion: example.io/v1, kind: Pool, name: spec.widget}\n")


def with_common(rules_dir: Callable[..., Path], watches: str) -> Path:
    rule = WIDGET.replace("kind: Widget\n", "kind: Widget\ninclude: [common/watches.yaml]\n", 1) + watches
    return rules_dir(rule, extra={"rules/common/watches.yaml": COMMON})


def test_a_watch_id_changes_the_fields_it_gives_of_the_included_watch(rules_dir: Callable[..., Path]) -> None:
    rules = with_common(rules_dir, "watches:\n  - {id: hub, changed: [metadata.generation, status.ready]}\n")
    kind = next(iter(load_catalog(rules).values()))
    (hub,) = declared(kind, "Hub")
    assert [q.source for q in hub.changed] == ["metadata.generation", "status.ready"]
    assert hub.mapping == "referenced" and hub.ref_name_query is not None
    assert hub.ref_name_query.source == "order.spec.hub"
    assert str(hub.origin).startswith(str(rules / "common" / "watches.yaml"))  # where the watch is declared
    assert len(declared(kind, "Pool")) == 1
    assert [w.kind for w in kind.watches if w.mapping in ("referenced", "reference")] == ["Hub", "Pool"]


def test_a_watch_id_that_gives_a_mapping_replaces_the_included_mapping(rules_dir: Callable[..., Path]) -> None:
    rules = with_common(rules_dir, "watches:\n  - {id: hub, clusters: all, orders: spec.widgets}\n")
    (hub,) = declared(next(iter(load_catalog(rules).values())), "Hub")
    assert (hub.mapping, hub.clusters, hub.ref_name_query) == ("orders", "all", None)
    assert [q.source for q in hub.changed] == ["metadata.generation"]


def test_a_watch_id_naming_no_included_watch_needs_its_kind(rules_dir: Callable[..., Path]) -> None:
    found = [str(e) for e in lint_paths([with_common(rules_dir, "watches:\n  - {id: hubb, changed: [x]}\n")])]
    assert any("widget.yaml:" in line and "a watch needs `apiVersion` and `kind` (`id: hubb` names no watch of an "
               "included file)" in line for line in found), found


def test_a_watch_id_twice_in_one_file_is_a_lint_error(rules_dir: Callable[..., Path]) -> None:
    rule = WIDGET + ("watches:\n  - {id: hub, apiVersion: example.io/v1, kind: Hub, referencedBy: order.spec.hub}\n"
                     "  - {id: hub, apiVersion: example.io/v1, kind: Hub, referencedBy: order.spec.other}\n")
    found = lint(rules_dir, rule)
    assert any("widget.yaml:" in line and "watch id 'hub' is used twice in this file" in line for line in found), found


def test_a_watch_with_two_mappings_names_the_new_ones(rules_dir: Callable[..., Path]) -> None:
    rule = WIDGET + "watches:\n  - {apiVersion: v1, kind: Secret, mapBy: labels, referencedBy: order.spec.x}\n"
    found = lint(rules_dir, rule)
    assert any("`referencedBy` or `mapBy`" in line for line in found), found
