"""A registered cluster is registered AND reachable only while its API server answers: the runtime
learns it from the calls it makes anyway (informers, passes), and a registration whose kubeconfig
cannot be used is registered but never reachable. Rules ask through cluster_registered() and
cluster_reachable()."""

from __future__ import annotations

import pytest
from runtime_kit import START
from test_clusters import World, secret

from engine.cluster.api import NotFound, ServerError
from engine.cluster.registry import ClusterSet
from engine.expr.cluster_state import clusters_in_view
from engine.expr.errors import ExprError
from engine.expr.jinja import compile_text
from engine.expr.jmes import compile_query
from offline.clock import SimulatedClock
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster


def _set() -> tuple[ClusterSet, FaultyCluster]:
    clock = SimulatedClock(START)
    clusters = ClusterSet(MemoryCluster("", clock=clock))
    edge = FaultyCluster(MemoryCluster("edge-1", clock=clock), cluster_name="edge-1")
    clusters.engage("edge-1", edge)
    return clusters, edge


def test_a_call_without_answer_makes_the_cluster_unreachable_until_the_next_answer() -> None:
    clusters, edge = _set()
    tracked = clusters.resolve("edge-1")
    assert clusters.reachable("edge-1") and clusters.registered("edge-1")
    edge.unreachable = True
    with pytest.raises(ServerError):
        tracked.list("v1", "ConfigMap", "default")
    assert clusters.registered("edge-1") and not clusters.reachable("edge-1")
    assert clusters.reachable_names() == [""]
    edge.unreachable = False
    with pytest.raises(NotFound):  # an error the server answered: it is reachable again
        tracked.get("v1", "ConfigMap", "default", "absent")
    assert clusters.reachable("edge-1") and clusters.reachable_names() == ["", "edge-1"]


def test_a_failing_watch_stream_counts_and_a_replaced_clients_late_call_does_not() -> None:
    clusters, edge = _set()
    old = clusters.resolve("edge-1")
    clusters.engage("edge-1", edge)  # engaged afresh: a new client
    edge.unreachable = True
    with pytest.raises(ServerError):
        old.list("v1", "ConfigMap")
    assert clusters.reachable("edge-1"), "the replaced client's failure must not mark the new one"
    with pytest.raises(ServerError):
        clusters.resolve("edge-1").watch("v1", "ConfigMap", timeout=0)
    assert not clusters.reachable("edge-1")
    clusters.disengage("edge-1")
    assert not clusters.registered("edge-1")


def test_an_unusable_kubeconfig_is_registered_but_not_reachable_until_its_secret_goes() -> None:
    world = World()
    world.management.create(secret("edge-9", "nowhere"))  # the factory cannot reach it
    world.registrations.sync()
    clusters = world.manager.clusters
    assert clusters.registered("edge-9") and not clusters.reachable("edge-9")
    world.management.delete("v1", "Secret", "c5c3-clusters", "edge-9")
    world.registrations.sync()
    assert not clusters.registered("edge-9")


def test_the_functions_answer_from_the_pass_clusters_in_expressions_and_templates() -> None:
    clusters, edge = _set()
    edge.unreachable = True
    with pytest.raises(ServerError):
        clusters.resolve("edge-1").list("v1", "ConfigMap")
    query = compile_query("[cluster_registered('edge-1'), cluster_reachable('edge-1'), cluster_registered('db-9'),"
                          " cluster_reachable('')]")
    text = compile_text("{{ cluster_reachable(name) }}/{{ name | cluster_registered }}")
    with clusters_in_view(clusters):
        assert query.evaluate({}) == [True, False, False, True]
        assert text.render({"name": "edge-1"}) == "false/true"  # booleans render as JSON
    with pytest.raises(ExprError, match="only during a pass"):
        compile_query("cluster_reachable('edge-1')").evaluate({})
