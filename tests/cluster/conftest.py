"""Fixtures shared by the KubeCluster tests: an in-memory cluster served over HTTP by the emulator,
KubeClusters against it (each with its own discovery cache), stopped after the test, and a CRD to install.
Their helpers are in tests/cluster/kube_kit.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.clock import SystemClock
from engine.cluster.api import Obj
from engine.cluster.kube import KubeCluster, api_client_from_kubeconfig
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator
from tests.cluster import kube_kit
from tests.cluster.kube_kit import MakeKube


@pytest.fixture
def widget_crd() -> Obj:
    """The CRD of Widget (example.com/v1, namespaced, any fields, a status subresource), the caller's own copy:
    to install in ``memory`` or write through a cluster."""
    return kube_kit.widget_crd()


@pytest.fixture
def memory() -> MemoryCluster:
    return MemoryCluster("", clock=SystemClock())


@pytest.fixture
def emulator(memory: MemoryCluster) -> Iterator[Any]:
    server = Emulator(memory)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def make_kube(emulator: Any, tmp_path: Path) -> Iterator[Callable[..., KubeCluster]]:
    made: list[KubeCluster] = []

    def make(**options: Any) -> KubeCluster:
        cluster = KubeCluster("", api_client_from_kubeconfig(emulator.kubeconfig("test")),
                              discovery_cache_dir=tmp_path / f"discovery-{len(made)}", **options)
        made.append(cluster)
        return cluster

    yield make
    for cluster in made:
        cluster.stop()


@pytest.fixture
def kube(make_kube: MakeKube) -> KubeCluster:
    """A KubeCluster with the default options against the emulated cluster."""
    return make_kube()
