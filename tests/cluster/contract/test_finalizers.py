"""Finalizers hold a deleted object until the last one is removed; a deleting object takes no new one."""

from __future__ import annotations

import pytest
from contract_kit import WIDGET, Clock, rv, secret, widget

from engine.cluster.api import Cluster, Invalid, NotFound

FIN = "example.com/cleanup"


def get(cluster: Cluster, name: str = "a") -> dict:  # type: ignore[type-arg]
    return cluster.get(WIDGET, "Widget", "default", name)


class TestDeleteWithFinalizers:
    def test_delete_marks_and_returns(self, cluster: Cluster, clock: Clock) -> None:
        """Delete sets deletionTimestamp (now) and grace 0, returns the object, and the object stays."""
        cluster.create(widget("a", finalizers=[FIN]))
        clock.advance(30)
        with clock.span() as span:
            returned = cluster.delete(WIDGET, "Widget", "default", "a")
        assert returned is not None
        assert span.holds(returned["metadata"]["deletionTimestamp"])
        assert returned["metadata"]["deletionGracePeriodSeconds"] == 0
        assert get(cluster) == returned

    def test_second_delete_changes_nothing(self, cluster: Cluster, clock: Clock) -> None:
        """Deleting again keeps the first deletionTimestamp and resourceVersion."""
        cluster.create(widget("a", finalizers=[FIN]))
        first = cluster.delete(WIDGET, "Widget", "default", "a")
        clock.advance(60)
        second = cluster.delete(WIDGET, "Widget", "default", "a")
        assert second == first

    def test_removing_last_finalizer_removes_object(self, cluster: Cluster) -> None:
        """The write that removes the last finalizer of a deleting object makes it disappear."""
        cluster.create(widget("a", finalizers=[FIN]))
        cluster.delete(WIDGET, "Widget", "default", "a")
        cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"finalizers": None}})
        with pytest.raises(NotFound):
            get(cluster)

    def test_one_of_two_finalizers(self, cluster: Cluster) -> None:
        """With a finalizer left, the object stays."""
        cluster.create(widget("a", finalizers=[FIN, "other/x"]))
        cluster.delete(WIDGET, "Widget", "default", "a")
        left = cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"finalizers": ["other/x"]}})
        assert left["metadata"]["finalizers"] == ["other/x"]
        assert get(cluster)["metadata"]["deletionTimestamp"]

    def test_update_removing_finalizer(self, cluster: Cluster) -> None:
        """An update that drops the last finalizer removes the object as well (a core kind here)."""
        cluster.create(secret("s", finalizers=[FIN]))
        held = cluster.delete("v1", "Secret", "default", "s")
        assert held is not None
        held["metadata"]["finalizers"] = []
        cluster.update(held)
        with pytest.raises(NotFound):
            cluster.get("v1", "Secret", "default", "s")

    def test_apply_dropping_its_finalizer(self, cluster: Cluster) -> None:
        """An apply that stops applying the manager's last finalizer lets the deleting object go."""
        cluster.apply(widget("a", finalizers=[FIN]), field_manager="engine")
        cluster.delete(WIDGET, "Widget", "default", "a")
        cluster.apply(widget("a"), field_manager="engine")
        with pytest.raises(NotFound):
            get(cluster)

    def test_finalizer_removed_before_delete(self, cluster: Cluster) -> None:
        """Removing finalizers from a live object just updates it."""
        cluster.create(widget("a", finalizers=[FIN]))
        cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"finalizers": None}})
        assert "finalizers" not in get(cluster)["metadata"]

    def test_deleting_object_still_accepts_changes(self, cluster: Cluster) -> None:
        """A deleting object can still be written (spec, status), keeping its deletionTimestamp."""
        cluster.create(widget("a", finalizers=[FIN]))
        marked = cluster.delete(WIDGET, "Widget", "default", "a")
        assert marked is not None
        patched = cluster.patch(WIDGET, "Widget", "default", "a", {"spec": {"size": 7}})
        assert patched["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
        assert rv(patched) > rv(marked)


class TestNoNewFinalizers:
    def test_patch_adding_finalizer(self, cluster: Cluster) -> None:
        """A deleting object rejects a new finalizer with the API server's Invalid message."""
        cluster.create(widget("a", finalizers=[FIN]))
        cluster.delete(WIDGET, "Widget", "default", "a")
        with pytest.raises(Invalid) as caught:
            cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"finalizers": [FIN, "x/new"]}})
        assert caught.value.code == 422
        assert caught.value.message == (
            'Widget.example.com "a" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added '
            'if the object is being deleted, found new finalizers []string{"x/new"}'
        )
        # A custom resource's strategy checks metadata twice: the cause comes twice (the message names it once).
        assert [c.field for c in caught.value.causes] == ["metadata.finalizers"] * 2
        assert get(cluster)["metadata"]["finalizers"] == [FIN]

    def test_apply_adding_finalizer(self, cluster: Cluster) -> None:
        """Apply cannot add a finalizer to a deleting object either."""
        cluster.create(widget("a", finalizers=[FIN]))
        cluster.delete(WIDGET, "Widget", "default", "a")
        with pytest.raises(Invalid):
            cluster.apply(widget("a", finalizers=["x/new"]), field_manager="m")
