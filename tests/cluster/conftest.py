"""Fixtures shared by the KubeCluster tests: an in-memory cluster served over HTTP by the emulator, and
KubeClusters against it (each with its own discovery cache), stopped after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.clock import SystemClock
from engine.cluster.kube import KubeCluster, api_client_from_kubeconfig
from engine.cluster.memory import MemoryCluster
from engine.testing.emulator import Emulator


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
