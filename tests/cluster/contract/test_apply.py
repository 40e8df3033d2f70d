"""Server-Side Apply: field managers own what they apply, and the call returns the object as stored."""

from __future__ import annotations

from typing import Any

import pytest
from contract_kit import WIDGET, rv, secret, widget

from engine.cluster.api import Cluster, Conflict, NotFound


def managers(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(manager, operation, subresource) of every managedFields entry."""
    rows = obj["metadata"].get("managedFields", [])
    return sorted((e["manager"], e["operation"], e.get("subresource", "")) for e in rows)


def config(name: str = "a", **labels: str) -> dict[str, Any]:
    """An applied Widget config holding only the given labels and spec.size 1."""
    body = widget(name, spec={"size": 1})
    if labels:
        body["metadata"]["labels"] = dict(labels)
    return body


class TestApply:
    def test_absent_object_is_created(self, cluster: Cluster) -> None:
        """Applying an absent object creates it, with server fields set and the manager recorded."""
        applied = cluster.apply(config(app="web"), field_manager="engine")
        assert applied["metadata"]["generation"] == 1
        assert applied["metadata"]["uid"]
        assert applied["metadata"]["labels"] == {"app": "web"}
        assert managers(applied) == [("engine", "Apply", "")]
        assert cluster.get(WIDGET, "Widget", "default", "a") == applied

    def test_returns_object_as_stored(self, cluster: Cluster) -> None:
        """The result of an apply onto a live object is what a get reads afterwards."""
        cluster.create(widget("a", spec={"size": 1, "other": "kept"}))
        applied = cluster.apply(widget("a", spec={"size": 2}), field_manager="engine", force=True)
        assert applied == cluster.get(WIDGET, "Widget", "default", "a")
        assert applied["spec"] == {"size": 2, "other": "kept"}
        assert applied["metadata"]["generation"] == 2

    def test_no_op_apply_keeps_resource_version(self, cluster: Cluster) -> None:
        """Applying the same config again changes nothing, not even the resourceVersion."""
        first = cluster.apply(config(app="web"), field_manager="engine")
        again = cluster.apply(config(app="web"), field_manager="engine")
        assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        assert again == first

    def test_dropped_field_is_removed(self, cluster: Cluster) -> None:
        """A field the manager applied before and applies no more leaves the object."""
        cluster.apply(config(app="web", tier="front"), field_manager="engine")
        applied = cluster.apply(config(app="web"), field_manager="engine")
        assert applied["metadata"]["labels"] == {"app": "web"}

    def test_other_managers_keys_stay(self, cluster: Cluster) -> None:
        """Keys another manager set stay when this manager re-applies without them."""
        cluster.apply(config(app="web"), field_manager="engine")
        cluster.apply(config(team="blue"), field_manager="person")
        applied = cluster.apply(config(app="web", tier="front"), field_manager="engine")
        assert applied["metadata"]["labels"] == {"app": "web", "team": "blue", "tier": "front"}
        assert managers(applied) == [("engine", "Apply", ""), ("person", "Apply", "")]

    def test_keys_written_by_update_stay(self, cluster: Cluster) -> None:
        """A key a plain patch added is not removed by an apply that never owned it."""
        cluster.apply(config(app="web"), field_manager="engine")
        cluster.patch(WIDGET, "Widget", "default", "a", {"metadata": {"annotations": {"note": "by hand"}}})
        applied = cluster.apply(config(app="web"), field_manager="engine")
        assert applied["metadata"]["annotations"] == {"note": "by hand"}

    def test_conflict_without_force(self, cluster: Cluster) -> None:
        """Changing a value another manager owns is a Conflict (409) that changes nothing."""
        cluster.apply(config(app="web"), field_manager="engine")
        with pytest.raises(Conflict) as caught:
            cluster.apply(config(app="db"), field_manager="person")
        assert caught.value.code == 409
        assert "engine" in caught.value.message
        assert cluster.get(WIDGET, "Widget", "default", "a")["metadata"]["labels"] == {"app": "web"}

    def test_force_takes_ownership(self, cluster: Cluster) -> None:
        """With force the value changes and ownership moves to the forcing manager."""
        cluster.apply(config(app="web"), field_manager="engine")
        forced = cluster.apply(config(app="db"), field_manager="person", force=True)
        assert forced["metadata"]["labels"] == {"app": "db"}
        dropped = cluster.apply(widget("a", spec={"size": 1}), field_manager="person", force=True)
        assert not dropped["metadata"].get("labels")

    def test_same_value_is_shared_not_conflicting(self, cluster: Cluster) -> None:
        """Two managers applying the same value share it without conflict."""
        cluster.apply(config(app="web"), field_manager="engine")
        shared = cluster.apply(config(app="web"), field_manager="person")
        assert shared["metadata"]["labels"] == {"app": "web"}

    def test_core_kind(self, cluster: Cluster) -> None:
        """Apply works on core kinds: a Secret's data keys are owned one by one."""
        cluster.apply(secret("s", data={"a": "YQ=="}), field_manager="engine")
        cluster.apply(secret("s", data={"b": "Yg=="}), field_manager="person")
        applied = cluster.apply(secret("s", data={"c": "Yw=="}), field_manager="engine")
        assert applied["data"] == {"b": "Yg==", "c": "Yw=="}

    def test_stale_resource_version_conflicts(self, cluster: Cluster) -> None:
        """A resourceVersion in the applied config is a precondition."""
        first = cluster.apply(config(app="web"), field_manager="engine")
        cluster.patch(WIDGET, "Widget", "default", "a", {"spec": {"size": 2}})
        stale = config(app="db")
        stale["metadata"]["resourceVersion"] = first["metadata"]["resourceVersion"]
        with pytest.raises(Conflict):
            cluster.apply(stale, field_manager="engine", force=True)

    def test_spec_change_bumps_generation(self, cluster: Cluster) -> None:
        """An apply that changes spec bumps generation; one that changes labels only does not."""
        cluster.apply(config(), field_manager="engine")
        assert cluster.apply(config(app="web"), field_manager="engine")["metadata"]["generation"] == 1
        changed = cluster.apply(widget("a", spec={"size": 5}, labels={"app": "web"}), field_manager="engine")
        assert changed["metadata"]["generation"] == 2


class TestApplyStatus:
    def test_main_apply_ignores_status(self, cluster: Cluster) -> None:
        """An apply of the main resource does not write status where a subresource owns it."""
        applied = cluster.apply(widget("a", status={"phase": "x"}), field_manager="engine")
        assert "status" not in applied

    def test_status_apply_writes_only_status(self, cluster: Cluster) -> None:
        """apply(status=True) writes status, ignores spec, leaves generation, records the subresource."""
        created = cluster.apply(config(), field_manager="engine")
        written = cluster.apply(widget("a", spec={"size": 9}, status={"phase": "Ready"}), field_manager="engine",
                                status=True)
        assert written["status"] == {"phase": "Ready"}
        assert written["spec"] == {"size": 1}
        assert written["metadata"]["generation"] == 1
        assert rv(written) > rv(created)
        assert ("engine", "Apply", "status") in managers(written)

    def test_status_apply_drops_what_it_stopped_applying(self, cluster: Cluster) -> None:
        """Status fields a manager stops applying are removed, others' stay."""
        cluster.apply(config(), field_manager="engine")
        cluster.apply(widget("a", status={"phase": "Ready", "mine": "x"}), field_manager="engine", status=True)
        cluster.patch(WIDGET, "Widget", "default", "a", {"status": {"theirs": "y"}}, status=True)
        written = cluster.apply(widget("a", status={"phase": "Ready"}), field_manager="engine", status=True)
        assert written["status"] == {"phase": "Ready", "theirs": "y"}

    def test_status_apply_to_absent_object(self, cluster: Cluster) -> None:
        """A status apply cannot create the object: NotFound."""
        with pytest.raises(NotFound):
            cluster.apply(widget("a", status={"phase": "x"}), field_manager="engine", status=True)
