"""Integration over HTTP: the fixtures and hooks (the world and helpers are ``integration_kit``'s).

Every test that uses the ``world`` runs on each backend (``integration_kit.BACKENDS``): ``[emulator]`` and
``[real]`` (marked ``real_server``), one world per module and backend. A test (or module) marked
``only_on(backend, reason=...)`` runs on that backend alone; the reason says what only that backend has.

Select with ``pytest -m integration`` (or leave out with ``-m "not integration"``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from integration_kit import BACKENDS, CRDS, ServerPool, World

from offline.realkube import KubeBinaries


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: the operator as a subprocess against emulated API servers")
    config.addinivalue_line("markers", "only_on(backend, reason): runs on that world backend alone, for that reason")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "world" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("only_on")
        if only is not None and (len(only.args) != 1 or only.args[0] not in BACKENDS or not only.kwargs.get("reason")):
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: only_on takes one of {BACKENDS} and the reason")
        backends = [only.args[0]] if only is not None else list(BACKENDS)
        metafunc.parametrize("world", backends, indirect=True, scope="module")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
            callspec = getattr(item, "callspec", None)
            if callspec is not None and callspec.params.get("world") == "real":
                item.add_marker(pytest.mark.real_server)


@pytest.fixture(scope="session")
def server_pool(kube_binaries: KubeBinaries) -> Iterator[ServerPool]:
    """The real servers of every real world, started ahead and stopped behind (``ServerPool``)."""
    pool = ServerPool(kube_binaries, CRDS)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="module")
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    backend = request.param
    pool = request.getfixturevalue("server_pool") if backend == "real" else None
    built = World(tmp_path_factory.mktemp(f"world-{backend}"), backend, pool)
    try:
        yield built
    finally:
        built.close()
