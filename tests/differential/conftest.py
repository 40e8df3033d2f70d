"""Fixtures of the differential test: one real kube-apiserver, one HTTP emulator over a MemoryCluster and one
MemoryCluster driven through its interface, shared by the session's cases (each case keeps to namespaces of its
own); ``runner`` sends a case to all three and returns the divergences."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from engine.clock import SystemClock
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator
from offline.realkube import KubeServer
from tests.differential.harness import HttpLeg, Runner
from tests.differential.kept import KEPT
from tests.differential.memory_leg import MemoryLeg

SERVER = "differential"
"""The name of the session's real cluster (``real_cluster``), shared by every differential test."""


@pytest.fixture(scope="session")
def real_server(real_cluster: Callable[[str], KubeServer]) -> KubeServer:
    return real_cluster(SERVER)


@pytest.fixture(scope="session")
def emulator() -> Iterator[Emulator]:
    with Emulator(MemoryCluster("", clock=SystemClock())) as served:
        yield served


@pytest.fixture(scope="session")
def memory() -> MemoryCluster:
    return MemoryCluster("", clock=SystemClock())


@pytest.fixture(scope="session")
def runner(real_server: KubeServer, emulator: Emulator, memory: MemoryCluster) -> Iterator[Runner]:
    """The three legs, the real server first (the reference every other answer is compared with)."""
    legs = [HttpLeg("real", real_server.url, token=real_server.token(), ca_pem=real_server.ca_pem, fresh_cache=True),
            HttpLeg("emulator", emulator.url), MemoryLeg(memory)]
    running = Runner(legs, kept=KEPT)
    yield running
    running.close()


@pytest.fixture(scope="session")
def http_runner(real_server: KubeServer, emulator: Emulator) -> Iterator[Runner]:
    """The real server and the emulator only: for cases about HTTP itself (tables, dry-run, field validation)."""
    legs = [HttpLeg("real", real_server.url, token=real_server.token(), ca_pem=real_server.ca_pem, fresh_cache=True),
            HttpLeg("emulator", emulator.url)]
    running = Runner(legs, prefix="h", kept=KEPT)
    yield running
    running.close()


@pytest.fixture(scope="session")
def bare_runner(real_server: KubeServer, emulator: Emulator, memory: MemoryCluster) -> Iterator[Runner]:
    """The three legs with no difference excused: for showing that each kept difference still happens."""
    legs = [HttpLeg("real", real_server.url, token=real_server.token(), ca_pem=real_server.ca_pem, fresh_cache=True),
            HttpLeg("emulator", emulator.url), MemoryLeg(memory)]
    running = Runner(legs, prefix="k")
    yield running
    running.close()
