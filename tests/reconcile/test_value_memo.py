"""Stable values remembered across an order's passes (decision 52): found by what they read, used only while
the order's spec and the objects they read are the versions they were computed on."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cluster.patches import json_copy
from engine.cluster.registry import ClusterSet
from engine.outcome import Request
from engine.reconcile.memo import ValueMemos, remembering
from engine.reconcile.run import run_pass
from engine.rules.catalog import load_catalog
from engine.rules.model import CompiledKind
from offline.clock import SimulatedClock
from offline.cluster.memory import MemoryCluster
from tests.call_count import calls
from tests.conftest import PART, WIDGET

# A Widget whose part carries a value from the spec, one from a ConfigMap it reads, one from the order's
# annotations, and the time: the first two stay the same between passes, the others may not. A gate reads the
# ConfigMap before any value does, as a ControlPlane is read before the values that read it.
MEMO_WIDGET = WIDGET.swap("""values:
  size: "order.spec.size || `1`"
""", """inputs:
  settings:
    get: {apiVersion: v1, kind: ConfigMap, namespace: "{{ order.metadata.namespace }}", name: settings}
  others:
    list: {apiVersion: v1, kind: ConfigMap, namespace: "{{ order.metadata.namespace }}"}
values:
  size: "order.spec.size || `1`"
  shape: "join('-', [to_string(size), order.metadata.name, settings.data.colour || 'plain'])"
  note: "order.metadata.annotations.note || 'none'"
  noted: "join('/', [shape, note])"
  seen: "now"
  generated: "password()"
  counted: "length(others)"
  labelled: {text: "{{ order.metadata.labels.tier }}"}
  named: {text: "{{ order.metadata.name }}/{{ shape }}"}
  fromStatus: "status.phase || 'new'"
""").swap("steps:\n", """gates:
  - name: blocked
    when: "settings.data.block == 'yes'"
    reason: Broken
    message: the settings block it
    requeue: 1m
steps:
""")

MEMO_PART = PART.swap("  size: {{ size | string | tojson }}\n", """  size: {{ size | string | tojson }}
  shape: {{ shape | tojson }}
  noted: {{ noted | tojson }}
  named: {{ named | tojson }}
""")


def test_stable_values_are_found_by_what_they_read(rules_dir: Callable[..., Path]) -> None:
    """Values of the spec, the order's fixed metadata and get inputs are stable (with the inputs they read);
    those of its annotations, labels, status, the clock, an impure function or a list are not."""
    kind = _kind(rules_dir)
    stable = kind.stable_values
    assert stable["size"] == ()
    assert stable["shape"] == ("settings",)
    assert stable["named"] == ("settings",)
    assert stable["prefix"] == () and stable["childNamespace"] == ()
    for name in ("note", "noted", "seen", "generated", "counted", "labelled", "fromStatus"):
        assert name not in stable, name


class World:
    """One Widget order on the in-memory cluster, its passes remembering in one table."""

    def __init__(self, kind: CompiledKind) -> None:
        self.clock = SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
        self.cluster = MemoryCluster("", clock=self.clock, permissive=True)
        self.kind = kind
        self.memos = ValueMemos()
        self.cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "settings", "namespace": "ns"}, "data": {"colour": "red"}})
        self.cluster.create({"apiVersion": "example.io/v1", "kind": "Widget",
                             "metadata": {"name": "w", "namespace": "ns", "annotations": {"note": "a"}},
                             "spec": {"size": 2}})

    def run(self, kind: CompiledKind | None = None) -> None:
        with remembering(self.memos):
            run_pass(kind or self.kind, Request(self.kind.key, "", "ns", "w"), clusters=ClusterSet(self.cluster),
                     clock=self.clock)

    def part(self) -> dict[str, str]:
        return dict(self.cluster.get("v1", "ConfigMap", "ns", "w-part")["data"])

    def edit(self, kind: str, name: str, change: Callable[[dict], None]) -> None:  # type: ignore[type-arg]
        api_version = "v1" if kind == "ConfigMap" else "example.io/v1"
        obj = json_copy(self.cluster.get(api_version, kind, "ns", name))  # what a read hands out stays unchanged
        change(obj)
        self.cluster.update(obj)


def _kind(rules_dir: Callable[..., Path]) -> CompiledKind:
    return next(iter(load_catalog(rules_dir(MEMO_WIDGET, MEMO_PART)).values()))


@pytest.fixture
def world(rules_dir: Callable[..., Path]) -> World:
    return World(_kind(rules_dir))


def test_remembered_values_follow_the_spec(world: World) -> None:
    """A spec change (a new generation) computes every value again."""
    world.run()
    world.run()
    assert world.part() == {"size": "2", "shape": "2-w-red", "noted": "2-w-red/a", "named": "w/2-w-red"}
    world.edit("Widget", "w", lambda w: w["spec"].update(size=3))
    world.run()
    assert world.part()["shape"] == "3-w-red" and world.part()["named"] == "w/3-w-red"


def test_remembered_values_follow_the_objects_they_read(world: World) -> None:
    """A new version of an object a stable value read computes it again; a value that reads the order's
    annotations (not stable) follows them at the same generation."""
    world.run()
    world.run()
    world.edit("ConfigMap", "settings", lambda c: c["data"].update(colour="blue"))
    world.run()
    assert world.part()["shape"] == "2-w-blue"
    world.edit("Widget", "w", lambda w: w["metadata"]["annotations"].update(note="b"))
    world.run()
    assert world.part()["noted"] == "2-w-blue/b"
    world.cluster.delete("v1", "ConfigMap", "ns", "settings")
    world.run()
    assert world.part()["shape"] == "2-w-plain"


def test_a_recreated_order_starts_afresh(world: World) -> None:
    """The order deleted and created again (another uid, the same generation) finds nothing remembered."""
    world.run()
    world.run()
    world.cluster.delete("example.io/v1", "Widget", "ns", "w")
    world.cluster.create({"apiVersion": "example.io/v1", "kind": "Widget",
                          "metadata": {"name": "w", "namespace": "ns"}, "spec": {"size": 5}})
    world.run()
    world.run()
    assert world.part()["shape"] == "5-w-red"


def test_replaced_rules_start_afresh() -> None:
    """Another compiled kind (a rule reload) finds nothing its predecessor remembered."""
    memos = ValueMemos()
    key, version = ("K", "", "ns", "w"), ("uid", 1)
    old, new = object(), object()
    memos.of(old, key, version)[("x",)] = ((), {"v": 1})
    assert memos.of(new, key, version) == {}


def test_a_remembered_pass_makes_fewer_calls(world: World) -> None:
    """The reason for it all (issue 11): a pass that finds its stable values remembered computes none of them.
    A pass without the table computes every one."""
    world.run()
    world.run()
    request = Request(world.kind.key, "", "ns", "w")
    cold = calls(lambda: run_pass(world.kind, request, clusters=ClusterSet(world.cluster), clock=world.clock))
    warm = calls(world.run)
    assert warm < cold - 40, (warm, cold)


def test_the_table_keeps_the_most_recently_used_orders() -> None:
    """Bounded: the order least recently used leaves first."""
    memos = ValueMemos(orders=2)
    kind = object()
    for name in ("a", "b"):
        memos.of(kind, ("K", "", "ns", name), ("uid-" + name, 1))[("x",)] = ((), {"v": name})
    memos.of(kind, ("K", "", "ns", "a"), ("uid-a", 1))  # a used again: b is the oldest
    memos.of(kind, ("K", "", "ns", "c"), ("uid-c", 1))
    assert len(memos) == 2
    assert memos.of(kind, ("K", "", "ns", "a"), ("uid-a", 1)) != {}
    assert memos.of(kind, ("K", "", "ns", "b"), ("uid-b", 1)) == {}
