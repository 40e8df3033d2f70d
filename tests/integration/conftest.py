"""Integration over HTTP: the fixtures and hooks (the world and helpers are ``integration_kit``'s).

Select with ``pytest -m integration`` (or leave out with ``-m "not integration"``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from integration_kit import World


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: the operator as a subprocess against emulated API servers")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    built = World(tmp_path_factory.mktemp("world"))
    try:
        yield built
    finally:
        built.close()
