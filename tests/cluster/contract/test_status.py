"""The status subresource: the main resource ignores status, a status write changes only status."""

from __future__ import annotations

import pytest
from contract_kit import GADGET, WIDGET, gadget, rv, widget

from engine.cluster.api import Cluster, Conflict, Invalid, NotFound

READY = {"conditions": [{"type": "Ready", "status": "True"}]}


def version(obj: dict) -> str:  # type: ignore[type-arg]
    """The resourceVersion an update of a custom resource must name."""
    return str(obj["metadata"]["resourceVersion"])


class TestMainResourceIgnoresStatus:
    def test_create_drops_status(self, cluster: Cluster) -> None:
        """Create cannot set status on a kind with a status subresource."""
        created = cluster.create(widget("a", status=READY))
        assert "status" not in created

    def test_update_keeps_status(self, cluster: Cluster) -> None:
        """An update's status is ignored; the stored status stays."""
        created = cluster.create(widget("a"))
        written = cluster.update_status(widget("a", status=READY, resourceVersion=version(created)))
        updated = cluster.update(widget("a", spec={"size": 2}, status={"phase": "ignored"},
                                        resourceVersion=version(written)))
        assert updated["status"] == READY
        assert updated["spec"] == {"size": 2}

    def test_merge_patch_ignores_status(self, cluster: Cluster) -> None:
        """A merge patch of the main resource leaves status alone; with only status in it, nothing changes."""
        created = cluster.create(widget("a"))
        patched = cluster.patch(WIDGET, "Widget", "default", "a", {"status": READY})
        assert "status" not in patched
        assert patched["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


class TestStatusWrites:
    def test_update_status_changes_only_status(self, cluster: Cluster) -> None:
        """update_status writes status; spec and label changes in the body are ignored."""
        created = cluster.create(widget("a"))
        written = cluster.update_status(widget("a", spec={"size": 9}, status=READY, labels={"x": "y"},
                                               resourceVersion=version(created)))
        assert written["status"] == READY
        assert written["spec"] == {"size": 1}
        assert "labels" not in written["metadata"]

    def test_generation_does_not_move(self, cluster: Cluster) -> None:
        """A status write bumps resourceVersion but never generation."""
        created = cluster.create(widget("a"))
        written = cluster.update_status(widget("a", status=READY, resourceVersion=version(created)))
        assert written["metadata"]["generation"] == 1
        assert rv(written) > rv(created)

    def test_stale_status_update_conflicts(self, cluster: Cluster) -> None:
        """update_status honours the resourceVersion precondition."""
        created = cluster.create(widget("a"))
        cluster.update(widget("a", spec={"size": 2}, resourceVersion=version(created)))
        with pytest.raises(Conflict):
            cluster.update_status(widget("a", status=READY, resourceVersion=created["metadata"]["resourceVersion"]))

    def test_status_patch(self, cluster: Cluster) -> None:
        """patch(status=True) merges into status only, whatever else the patch says."""
        created = cluster.create(widget("a"))
        cluster.update_status(widget("a", status={"phase": "Pending", "observedGeneration": 1},
                                     resourceVersion=version(created)))
        patched = cluster.patch(WIDGET, "Widget", "default", "a", {"status": {"phase": "Ready"}, "spec": {"size": 5}},
                                status=True)
        assert patched["status"] == {"phase": "Ready", "observedGeneration": 1}
        assert patched["spec"] == {"size": 1}
        assert patched["metadata"]["generation"] == 1

    def test_status_json_patch(self, cluster: Cluster) -> None:
        """A JSON patch works on the status subresource too."""
        cluster.create(widget("a"))
        patched = cluster.patch(WIDGET, "Widget", "default", "a", [{"op": "add", "path": "/status", "value": READY}],
                                patch_type="json", status=True)
        assert patched["status"] == READY

    def test_status_update_needs_a_resource_version(self, cluster: Cluster) -> None:
        """A status update of a custom resource, as any update of one, must name a resourceVersion."""
        created = cluster.create(widget("a"))
        with pytest.raises(Invalid, match=r'^widgets\.example\.com "a" is invalid: metadata\.resourceVersion: Invalid'
                                          " value: 0: must be specified for an update$"):
            cluster.update_status(widget("a", status=READY))
        assert cluster.get(WIDGET, "Widget", "default", "a") == created

    def test_status_of_missing_object(self, cluster: Cluster) -> None:
        """A status write to an object that does not exist is NotFound."""
        with pytest.raises(NotFound):
            cluster.update_status(widget("nope", status=READY))

    def test_no_status_subresource(self, cluster: Cluster) -> None:
        """A kind without a status subresource has no status endpoint: NotFound."""
        cluster.create(gadget("g"))
        with pytest.raises(NotFound):
            cluster.update_status(gadget("g", status={"phase": "Up"}))
        with pytest.raises(NotFound):
            cluster.patch(GADGET, "Gadget", None, "g", {"status": {"phase": "Up"}}, status=True)
