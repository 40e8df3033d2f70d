"""ownerReferences: when an owner is gone for good, its dependents are garbage-collected.

On a real server the garbage collector acts moments after the owner goes; the memory cluster in the write itself
(``asynchronous-garbage-collection`` in the conftest): ``settled`` holds each test to its implementation's timing.
"""

from __future__ import annotations

from contract_kit import GADGET, WIDGET, Settled, exists, gadget, owner_ref, secret, widget

from engine.cluster.api import Cluster

GC = "asynchronous-garbage-collection"


class TestGarbageCollection:
    def test_dependent_goes_with_owner(self, cluster: Cluster, settled: Settled) -> None:
        """Deleting an owner deletes the Secret it owns."""
        owner = cluster.create(widget("a"))
        cluster.create(secret("s", ownerReferences=[owner_ref(owner)]))
        cluster.create(secret("unrelated"))
        cluster.delete(WIDGET, "Widget", "default", "a")
        settled(GC, lambda: not exists(cluster, "v1", "Secret", "default", "s"), "the owned Secret collected")
        assert exists(cluster, "v1", "Secret", "default", "unrelated")

    def test_transitive(self, cluster: Cluster, settled: Settled) -> None:
        """Collection follows chains: owner, dependent, dependent's dependent."""
        top = cluster.create(gadget("top"))
        middle = cluster.create(widget("m", ownerReferences=[owner_ref(top)]))
        cluster.create(secret("leaf", ownerReferences=[owner_ref(middle)]))
        cluster.delete(GADGET, "Gadget", None, "top")
        settled(GC, lambda: not exists(cluster, WIDGET, "Widget", "default", "m")
                and not exists(cluster, "v1", "Secret", "default", "leaf"), "the chain collected")

    def test_other_live_owner_keeps_dependent(self, cluster: Cluster, settled: Settled) -> None:
        """A dependent with another live owner stays, losing only the reference to the one gone."""
        first, second = cluster.create(widget("a")), cluster.create(widget("b"))
        cluster.create(secret("s", ownerReferences=[owner_ref(first), owner_ref(second)]))
        cluster.delete(WIDGET, "Widget", "default", "a")

        def owners() -> list[str]:
            return [r["name"] for r in cluster.get("v1", "Secret", "default", "s")["metadata"]["ownerReferences"]]

        settled(GC, lambda: owners() == ["b"], "the reference to the deleted owner dropped")

    def test_dependent_finalizers_are_respected(self, cluster: Cluster, settled: Settled) -> None:
        """A dependent with a finalizer is marked for deletion, not removed."""
        owner = cluster.create(widget("a"))
        cluster.create(secret("s", ownerReferences=[owner_ref(owner)], finalizers=["example.com/hold"]))
        cluster.delete(WIDGET, "Widget", "default", "a")
        settled(GC, lambda: bool(cluster.get("v1", "Secret", "default", "s")["metadata"].get("deletionTimestamp")),
                "the owned Secret marked for deletion")
        cluster.patch("v1", "Secret", "default", "s", {"metadata": {"finalizers": None}})
        assert not exists(cluster, "v1", "Secret", "default", "s")

    def test_owner_held_by_finalizer_keeps_dependents(self, cluster: Cluster, settled: Settled) -> None:
        """While a finalizer holds the owner, dependents stay; they go once the owner is really gone."""
        owner = cluster.create(widget("a", finalizers=["example.com/hold"]))
        cluster.create(secret("s", ownerReferences=[owner_ref(owner)]))
        cluster.delete(WIDGET, "Widget", "default", "a")
        assert exists(cluster, "v1", "Secret", "default", "s")
        cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"finalizers": None}})
        settled(GC, lambda: not exists(cluster, "v1", "Secret", "default", "s"), "the owned Secret collected")
