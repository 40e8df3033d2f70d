"""The contract suite runs against every Cluster implementation through the interface only.

Only ``memory`` exists today; an implementation over HTTP joins by adding a parameter to
``make_cluster``. Tests never reach into an implementation: CRDs are installed through
``cluster.create``, and nothing is seeded.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from contract_kit import GADGET_CRD, WIDGET_CRD, Clock

from engine.cluster.api import Cluster
from engine.cluster.memory import MemoryCluster

MakeCluster = Callable[[str], Cluster]


@pytest.fixture
def clock() -> Clock:
    """The clock every cluster of a test reads; it moves only when a test advances it."""
    return Clock()


@pytest.fixture(params=["memory"])
def make_cluster(request: pytest.FixtureRequest, clock: Clock) -> MakeCluster:
    """Builds an empty cluster of the implementation under test, named as asked."""

    def make(name: str) -> Cluster:
        if request.param == "memory":
            return MemoryCluster(name, clock=clock)
        raise AssertionError(f"unknown implementation {request.param}")

    return make


@pytest.fixture
def bare(make_cluster: MakeCluster) -> Cluster:
    """The management cluster with no CRD installed."""
    return make_cluster("")


@pytest.fixture
def cluster(bare: Cluster) -> Cluster:
    """The management cluster with the Widget and Gadget CRDs installed."""
    bare.create(WIDGET_CRD)
    bare.create(GADGET_CRD)
    return bare


@pytest.fixture
def clusters(make_cluster: MakeCluster) -> tuple[Cluster, Cluster]:
    """The management cluster and a target cluster "edge-1", each with the CRDs installed."""
    pair = (make_cluster(""), make_cluster("edge-1"))
    for one in pair:
        one.create(WIDGET_CRD)
        one.create(GADGET_CRD)
    return pair
