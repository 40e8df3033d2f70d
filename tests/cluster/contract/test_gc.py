"""ownerReferences: when an owner is gone for good, its dependents are garbage-collected."""

from __future__ import annotations

from contract_kit import GADGET, WIDGET, gadget, owner_ref, secret, widget

from engine.cluster.api import Cluster, NotFound


def exists(cluster: Cluster, api_version: str, kind: str, namespace: str | None, name: str) -> bool:
    try:
        cluster.get(api_version, kind, namespace, name)
    except NotFound:
        return False
    return True


class TestGarbageCollection:
    def test_dependent_goes_with_owner(self, cluster: Cluster) -> None:
        """Deleting an owner deletes the Secret it owns."""
        owner = cluster.create(widget("a"))
        cluster.create(secret("s", ownerReferences=[owner_ref(owner)]))
        cluster.create(secret("unrelated"))
        cluster.delete(WIDGET, "Widget", "default", "a")
        assert not exists(cluster, "v1", "Secret", "default", "s")
        assert exists(cluster, "v1", "Secret", "default", "unrelated")

    def test_transitive(self, cluster: Cluster) -> None:
        """Collection follows chains: owner, dependent, dependent's dependent."""
        top = cluster.create(gadget("top"))
        middle = cluster.create(widget("m", ownerReferences=[owner_ref(top)]))
        cluster.create(secret("leaf", ownerReferences=[owner_ref(middle)]))
        cluster.delete(GADGET, "Gadget", None, "top")
        assert not exists(cluster, WIDGET, "Widget", "default", "m")
        assert not exists(cluster, "v1", "Secret", "default", "leaf")

    def test_other_live_owner_keeps_dependent(self, cluster: Cluster) -> None:
        """A dependent with another live owner stays, losing only the reference to the one gone."""
        first, second = cluster.create(widget("a")), cluster.create(widget("b"))
        cluster.create(secret("s", ownerReferences=[owner_ref(first), owner_ref(second)]))
        cluster.delete(WIDGET, "Widget", "default", "a")
        left = cluster.get("v1", "Secret", "default", "s")
        assert [r["name"] for r in left["metadata"]["ownerReferences"]] == ["b"]

    def test_dependent_finalizers_are_respected(self, cluster: Cluster) -> None:
        """A dependent with a finalizer is marked for deletion, not removed."""
        owner = cluster.create(widget("a"))
        cluster.create(secret("s", ownerReferences=[owner_ref(owner)], finalizers=["example.com/hold"]))
        cluster.delete(WIDGET, "Widget", "default", "a")
        held = cluster.get("v1", "Secret", "default", "s")
        assert held["metadata"]["deletionTimestamp"]
        cluster.patch("v1", "Secret", "default", "s", {"metadata": {"finalizers": None}})
        assert not exists(cluster, "v1", "Secret", "default", "s")

    def test_owner_held_by_finalizer_keeps_dependents(self, cluster: Cluster) -> None:
        """While a finalizer holds the owner, dependents stay; they go once the owner is really gone."""
        owner = cluster.create(widget("a", finalizers=["example.com/hold"]))
        cluster.create(secret("s", ownerReferences=[owner_ref(owner)]))
        cluster.delete(WIDGET, "Widget", "default", "a")
        assert exists(cluster, "v1", "Secret", "default", "s")
        cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"finalizers": None}})
        assert not exists(cluster, "v1", "Secret", "default", "s")
