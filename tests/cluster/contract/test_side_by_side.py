"""Several clusters side by side, each its own store."""

from __future__ import annotations

import pytest
from contract_kit import WIDGET, Settled, widget

from engine.cluster.api import Cluster, NotFound


class TestSideBySide:
    def test_names(self, clusters: tuple[Cluster, Cluster]) -> None:
        """The management cluster is named "", a target cluster by its own name."""
        assert [c.name for c in clusters] == ["", "edge-1"]

    def test_separate_stores(self, clusters: tuple[Cluster, Cluster]) -> None:
        """An object written to one cluster does not exist in the other."""
        management, edge = clusters
        edge.create(widget("a"))
        with pytest.raises(NotFound):
            management.get(WIDGET, "Widget", "default", "a")
        management.create(widget("a", spec={"size": 5}))
        assert edge.get(WIDGET, "Widget", "default", "a")["spec"] == {"size": 1}

    def test_separate_watches(self, clusters: tuple[Cluster, Cluster]) -> None:
        """A watch on one cluster sees only that cluster's changes."""
        management, edge = clusters
        edge.create(widget("a"))
        assert list(management.watch(WIDGET, "Widget", timeout=0)) == []

    def test_separate_discovery(self, clusters: tuple[Cluster, Cluster], settled: Settled) -> None:
        """Deleting a CRD in one cluster leaves the kind served in the other."""
        management, edge = clusters
        edge.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "widgets.example.com")
        settled("asynchronous-crd", lambda: not edge.serves(WIDGET, "Widget"), "Widget gone from the edge")
        assert management.serves(WIDGET, "Widget")
