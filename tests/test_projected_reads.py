"""Decision 0040: a list answered from a projected cache (only the paths the rules read of each item) gives the
same rule result as a list of whole objects. Every scenario of the project (both kinds) runs with the in-memory
cluster answering each list that names its reads with items cut to those reads, and passes unchanged."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from engine.cluster.api import ObjectList
from engine.cluster.projection import project, tree
from offline.cluster.memory import MemoryCluster
from tests.test_scenarios import ROOT, check_scenario, folders_for, scenario_files

USER = ("openstack.k-orc.cloud/v1alpha1", "User")


@pytest.fixture
def projected_lists(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, str], int]:
    """MemoryCluster.list answers a list that names its reads as a projected cache would: each item cut to them.
    Returns how many lists of each kind were answered so."""
    whole = MemoryCluster.list
    counted: dict[tuple[str, str], int] = {}

    def cut(self: MemoryCluster, api_version: str, kind: str, namespace: str | None = None, *,
            reads: Collection[tuple[str, ...]] | None = None, **kwargs: Any) -> ObjectList:
        answer = whole(self, api_version, kind, namespace, **kwargs)
        if reads is None:
            return answer
        counted[(api_version, kind)] = counted.get((api_version, kind), 0) + len(answer.items)
        shape = tree(reads)
        return ObjectList([project(item, shape) for item in answer.items], answer.resource_version)

    monkeypatch.setattr(MemoryCluster, "list", cut)
    return counted


@pytest.mark.parametrize("path", scenario_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_scenario_passes_with_projected_lists(path: Path, projected_lists: dict[tuple[str, str], int]) -> None:
    rules, crds = folders_for(path)
    check_scenario(path, rules, crds, str(path.relative_to(ROOT)))
    if path.stem in CLAIMED:  # a rival's User was there to be ranked: it was read cut to the claims' paths
        assert projected_lists.get(USER, 0) > 0, projected_lists


CLAIMED = {"keystoneuser-name-held", "keystoneuser-probe-collision"}
"""Scenarios where two orders claim one Keystone name: the other order's Users are listed."""
