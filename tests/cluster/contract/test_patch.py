"""Merge patch (RFC 7386) and JSON patch (RFC 6902), with preconditions and no-op detection."""

from __future__ import annotations

import pytest
from contract_kit import WIDGET, rv, secret, widget

from engine.cluster.api import Cluster, Conflict, Invalid, NotFound

REJECTED = "the server rejected our request due to an error in our request"
"""What the API server says of a JSON patch that cannot apply: no path, no cause."""


class TestMergePatch:
    def test_merges_nested_and_removes_null(self, cluster: Cluster) -> None:
        """Maps merge key by key, null removes a key, lists are replaced whole."""
        cluster.create(widget("a", spec={"size": 1, "mode": "fast", "tags": ["x", "y"], "deep": {"k": 1, "j": 2}}))
        patched = cluster.patch(WIDGET, "Widget", "default", "a",
                                {"spec": {"mode": None, "tags": ["z"], "deep": {"j": 3}}})
        assert patched["spec"] == {"size": 1, "tags": ["z"], "deep": {"k": 1, "j": 3}}
        assert cluster.get(WIDGET, "Widget", "default", "a")["spec"] == patched["spec"]

    def test_spec_patch_bumps_generation(self, cluster: Cluster) -> None:
        """A patch changing spec bumps generation; one changing labels does not."""
        cluster.create(widget("a"))
        assert cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"labels": {"x": "y"}}})[
            "metadata"]["generation"] == 1
        assert cluster.patch(WIDGET, "Widget", "default", "a", {"spec": {"size": 3}})["metadata"]["generation"] == 2

    def test_no_op_keeps_resource_version(self, cluster: Cluster) -> None:
        """A patch that changes nothing keeps the resourceVersion."""
        created = cluster.create(widget("a", labels={"x": "y"}))
        patch = {"metadata": {"labels": {"x": "y"}}, "spec": {"size": 1}}
        patched = cluster.patch(WIDGET, "Widget", "default", "a", patch)
        assert patched["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    def test_stale_resource_version_conflicts(self, cluster: Cluster) -> None:
        """metadata.resourceVersion in a patch is a precondition: stale conflicts, current passes."""
        created = cluster.create(widget("a"))
        stale = created["metadata"]["resourceVersion"]
        current = cluster.patch(WIDGET, "Widget", "default", "a", {"spec": {"size": 2}})["metadata"]["resourceVersion"]
        with pytest.raises(Conflict):
            cluster.patch(WIDGET, "Widget", "default", "a",
                          {"metadata": {"resourceVersion": stale}, "spec": {"size": 3}})
        passed = cluster.patch(WIDGET, "Widget", "default", "a",
                               {"metadata": {"resourceVersion": current}, "spec": {"size": 4}})
        assert passed["spec"] == {"size": 4}

    def test_server_fields_survive(self, cluster: Cluster) -> None:
        """A patch cannot rewrite creationTimestamp or generation (it changes nothing then), nor the uid (Invalid:
        immutable)."""
        created = cluster.create(widget("a"))
        patched = cluster.patch(WIDGET, "Widget", "default", "a",
                                {"metadata": {"creationTimestamp": "2000-01-01T00:00:00Z", "generation": 9}})
        assert patched == created
        with pytest.raises(Invalid) as caught:
            cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"uid": "x"}})
        assert caught.value.message == (
            'Widget.example.com "a" is invalid: metadata.uid: Invalid value: "x": field is immutable')
        assert {c.field for c in caught.value.causes} == {"metadata.uid"}
        assert cluster.get(WIDGET, "Widget", "default", "a") == created

    def test_core_kind(self, cluster: Cluster) -> None:
        """A Secret's data merges like any map."""
        cluster.create(secret("s", data={"a": "YQ==", "b": "Yg=="}))
        patched = cluster.patch("v1", "Secret", "default", "s", {"data": {"a": None, "c": "Yw=="}})
        assert patched["data"] == {"b": "Yg==", "c": "Yw=="}

    def test_missing_is_not_found(self, cluster: Cluster) -> None:
        """Patching an absent object is NotFound."""
        with pytest.raises(NotFound, match=r'^secrets "s" not found$'):
            cluster.patch("v1", "Secret", "default", "s", {"data": {}})


class TestJsonPatch:
    def test_operations(self, cluster: Cluster) -> None:
        """add, replace, remove, copy, move and test apply in order."""
        cluster.create(widget("a", spec={"size": 1, "tags": ["x"], "old": "o"}))
        ops = [
            {"op": "test", "path": "/spec/size", "value": 1},
            {"op": "replace", "path": "/spec/size", "value": 2},
            {"op": "add", "path": "/spec/tags/-", "value": "y"},
            {"op": "add", "path": "/spec/tags/0", "value": "w"},
            {"op": "remove", "path": "/spec/old"},
            {"op": "copy", "from": "/spec/size", "path": "/spec/copied"},
            {"op": "move", "from": "/spec/copied", "path": "/spec/moved"},
            {"op": "add", "path": "/metadata/labels", "value": {"a~b/c": "v"}},
        ]
        with pytest.raises(Invalid):  # the label key a~b/c is fine for the pointer but not for the API
            cluster.patch(WIDGET, "Widget", "default", "a", ops, patch_type="json")
        ops[-1] = {"op": "add", "path": "/metadata/labels", "value": {"example.com/k": "v"}}
        ops.append({"op": "add", "path": "/metadata/labels/example.com~1j", "value": "w"})
        patched = cluster.patch(WIDGET, "Widget", "default", "a", ops, patch_type="json")
        assert patched["spec"] == {"size": 2, "tags": ["w", "x", "y"], "moved": 2}
        assert patched["metadata"]["labels"] == {"example.com/k": "v", "example.com/j": "w"}
        assert patched["metadata"]["generation"] == 2

    def test_failed_test_changes_nothing(self, cluster: Cluster) -> None:
        """A failing test op rejects the whole patch (422) and the object stays as it was."""
        created = cluster.create(widget("a"))
        ops = [{"op": "replace", "path": "/spec/size", "value": 5}, {"op": "test", "path": "/spec/size", "value": 1}]
        with pytest.raises(Invalid) as caught:
            cluster.patch(WIDGET, "Widget", "default", "a", ops, patch_type="json")
        assert caught.value.code == 422
        assert caught.value.message == REJECTED
        assert cluster.get(WIDGET, "Widget", "default", "a") == created

    def test_missing_path(self, cluster: Cluster) -> None:
        """Removing a path that is not there is rejected, in the API server's words (which name no path)."""
        cluster.create(widget("a"))
        with pytest.raises(Invalid) as caught:
            cluster.patch(WIDGET, "Widget", "default", "a", [{"op": "remove", "path": "/spec/nope"}], patch_type="json")
        assert (caught.value.message, caught.value.causes) == (REJECTED, [])

    def test_removing_the_resource_version_of_a_custom_resource(self, cluster: Cluster) -> None:
        """A JSON patch that removes metadata.resourceVersion makes an unconditional update: refused for a custom
        resource, as a PUT without one is; a Secret takes it."""
        created = cluster.create(widget("a"))
        unversioned = {"op": "remove", "path": "/metadata/resourceVersion"}
        ops = [unversioned, {"op": "replace", "path": "/spec/size", "value": 3}]
        with pytest.raises(Invalid, match=r"metadata\.resourceVersion: Invalid value: 0: must be specified for an"):
            cluster.patch(WIDGET, "Widget", "default", "a", ops, patch_type="json")
        assert cluster.get(WIDGET, "Widget", "default", "a") == created
        cluster.create(secret("s"))
        ops = [unversioned, {"op": "add", "path": "/data/x", "value": "eA=="}]
        patched = cluster.patch("v1", "Secret", "default", "s", ops, patch_type="json")
        assert patched["data"] == {"k": "dg==", "x": "eA=="}

    def test_resource_version_test_is_a_precondition(self, cluster: Cluster) -> None:
        """Replacing metadata.resourceVersion with a stale value conflicts."""
        created = cluster.create(widget("a"))
        cluster.patch(WIDGET, "Widget", "default", "a", {"spec": {"size": 2}})
        ops = [{"op": "replace", "path": "/metadata/resourceVersion", "value": created["metadata"]["resourceVersion"]},
               {"op": "replace", "path": "/spec/size", "value": 3}]
        with pytest.raises(Conflict):
            cluster.patch(WIDGET, "Widget", "default", "a", ops, patch_type="json")
        assert rv(cluster.get(WIDGET, "Widget", "default", "a")) > rv(created)
