"""Create, get, update and delete: identity, resourceVersion, generation and the API server's errors."""

from __future__ import annotations

import pytest
from contract_kit import WIDGET, Clock, gadget, rv, secret, widget

from engine.cluster import readonly
from engine.cluster.api import AlreadyExists, Cluster, Conflict, Invalid, NotFound
from engine.cluster.patches import json_copy


class TestCreate:
    def test_server_fields(self, cluster: Cluster) -> None:
        """Create sets uid, creationTimestamp (the clock, whole seconds, Z), generation 1 and a resourceVersion."""
        created = cluster.create(widget("a"))
        meta = created["metadata"]
        assert meta["uid"]
        assert meta["creationTimestamp"] == "2026-01-01T00:00:00Z"
        assert meta["generation"] == 1
        assert rv(created) > 0
        assert created["spec"] == {"size": 1}

    def test_get_returns_what_create_returned(self, cluster: Cluster) -> None:
        """The stored object reads back exactly as create returned it."""
        created = cluster.create(widget("a", labels={"app": "web"}))
        assert cluster.get(WIDGET, "Widget", "default", "a") == created

    def test_server_fields_in_the_body_are_ignored(self, cluster: Cluster) -> None:
        """uid, resourceVersion, generation and creationTimestamp in a create body do not stick."""
        body = widget("a", uid="mine", resourceVersion="999999", generation=7, creationTimestamp="2000-01-01T00:00:00Z")
        meta = cluster.create(body)["metadata"]
        assert meta["uid"] != "mine"
        assert meta["generation"] == 1
        assert meta["creationTimestamp"] == "2026-01-01T00:00:00Z"
        assert meta["resourceVersion"] != "999999"

    def test_uids_are_unique(self, cluster: Cluster) -> None:
        """Every created object gets its own uid."""
        uids = {cluster.create(widget(name))["metadata"]["uid"] for name in ("a", "b", "c")}
        assert len(uids) == 3

    def test_body_is_not_mutated(self, cluster: Cluster) -> None:
        """The caller's dict stays as it was."""
        body = widget("a")
        cluster.create(body)
        assert body == widget("a")

    def test_already_exists(self, cluster: Cluster) -> None:
        """A taken name is AlreadyExists (409), worded with the resource and name."""
        cluster.create(secret("s"))
        with pytest.raises(AlreadyExists) as caught:
            cluster.create(secret("s"))
        assert caught.value.code == 409
        assert caught.value.message == 'secrets "s" already exists'

    def test_already_exists_names_group(self, cluster: Cluster) -> None:
        """For a custom resource the resource is plural.group."""
        cluster.create(widget("a"))
        with pytest.raises(AlreadyExists, match=r'^widgets\.example\.com "a" already exists$'):
            cluster.create(widget("a"))

    def test_same_name_in_other_namespace(self, cluster: Cluster) -> None:
        """Names are unique per namespace, not per cluster."""
        cluster.create(widget("a", "one"))
        cluster.create(widget("a", "two"))
        assert len(cluster.list(WIDGET, "Widget").items) == 2

    def test_generate_name(self, cluster: Cluster) -> None:
        """generateName gives a fresh name that starts with the prefix."""
        body = secret("")
        del body["metadata"]["name"]
        body["metadata"]["generateName"] = "pw-"
        first, second = cluster.create(body), cluster.create(body)
        assert first["metadata"]["name"].startswith("pw-")
        assert first["metadata"]["name"] != second["metadata"]["name"]
        assert len(first["metadata"]["name"]) == len("pw-") + 5

    def test_name_required(self, cluster: Cluster) -> None:
        """Neither name nor generateName is Invalid (422)."""
        body = secret("")
        del body["metadata"]["name"]
        with pytest.raises(Invalid) as caught:
            cluster.create(body)
        assert caught.value.code == 422
        assert "metadata.name: Required value" in caught.value.message

    def test_bad_name(self, cluster: Cluster) -> None:
        """A name that is not a DNS subdomain is Invalid, naming the field."""
        with pytest.raises(Invalid) as caught:
            cluster.create(secret("Not_Valid"))
        assert caught.value.message.startswith(
            'Secret "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid"')
        assert [c.field for c in caught.value.causes] == ["metadata.name"]

    def test_bad_label_value(self, cluster: Cluster) -> None:
        """A label value over 63 characters is Invalid, as the engine's long names would be."""
        with pytest.raises(Invalid) as caught:
            cluster.create(widget("a", labels={"x": "v" * 64}))
        assert caught.value.message == (
            f'Widget.example.com "a" is invalid: metadata.labels: Invalid value: "{"v" * 64}": '
            "must be no more than 63 bytes"
        )

    def test_cluster_scoped(self, cluster: Cluster) -> None:
        """A cluster-scoped object has no namespace, even if the body gives one."""
        body = gadget("g", spec={"a": 1})
        body["metadata"]["namespace"] = "ignored"
        created = cluster.create(body)
        assert "namespace" not in created["metadata"]
        assert cluster.get(WIDGET, "Gadget", None, "g")["spec"] == {"a": 1}

    def test_namespace_need_not_exist(self, cluster: Cluster) -> None:
        """Objects can be created in a namespace no Namespace object stands for."""
        cluster.create(secret("s", "nowhere"))
        assert cluster.get("v1", "Secret", "nowhere", "s")["metadata"]["namespace"] == "nowhere"

    def test_write_answers_are_copies(self, cluster: Cluster) -> None:
        """Mutating what a write returned never changes the stored object."""
        created = cluster.create(widget("a"))
        created["spec"]["size"] = 99
        assert cluster.get(WIDGET, "Widget", "default", "a")["spec"] == {"size": 1}

    def test_a_reader_that_changes_what_a_read_answered_is_named(self, cluster: Cluster) -> None:
        """What a get or a list answers is read-only (the cache hands out the object it holds): the suite's read
        check names the object a reader changed, for every implementation alike."""
        cluster.create(widget("a"))
        cluster.create(widget("b"))
        readonly.changed()
        cluster.list(WIDGET, "Widget", "default").items[1]["spec"]["size"] = 2
        cluster.get(WIDGET, "Widget", "default", "a")["metadata"]["labels"] = {"x": "y"}
        assert sorted(set(readonly.changed())) == ["Widget default/a", "Widget default/b"]


class TestGet:
    def test_not_found(self, cluster: Cluster) -> None:
        """A missing object is NotFound (404), worded like the API server."""
        with pytest.raises(NotFound) as caught:
            cluster.get("v1", "Secret", "default", "x")
        assert caught.value.code == 404
        assert caught.value.message == 'secrets "x" not found'

    def test_not_found_in_other_namespace(self, cluster: Cluster) -> None:
        """An object is found only in its own namespace."""
        cluster.create(widget("a", "one"))
        with pytest.raises(NotFound, match=r'^widgets\.example\.com "a" not found$'):
            cluster.get(WIDGET, "Widget", "two", "a")


class TestUpdate:
    def test_replaces_and_bumps(self, cluster: Cluster) -> None:
        """An update replaces the body, bumps resourceVersion, and bumps generation on a spec change."""
        created = cluster.create(widget("a"))
        body = widget("a", spec={"size": 2}, resourceVersion=created["metadata"]["resourceVersion"])
        updated = cluster.update(body)
        assert updated["spec"] == {"size": 2}
        assert updated["metadata"]["generation"] == 2
        assert rv(updated) > rv(created)
        assert cluster.get(WIDGET, "Widget", "default", "a") == updated

    def test_stale_resource_version_conflicts(self, cluster: Cluster) -> None:
        """An update carrying an old resourceVersion is a Conflict and changes nothing."""
        created = cluster.create(widget("a"))
        stale = created["metadata"]["resourceVersion"]
        cluster.update(widget("a", spec={"size": 2}))
        with pytest.raises(Conflict) as caught:
            cluster.update(widget("a", spec={"size": 3}, resourceVersion=stale))
        assert caught.value.code == 409
        assert caught.value.message == (
            'Operation cannot be fulfilled on widgets.example.com "a": the object has been modified; '
            "please apply your changes to the latest version and try again"
        )
        assert cluster.get(WIDGET, "Widget", "default", "a")["spec"] == {"size": 2}

    def test_current_resource_version_passes(self, cluster: Cluster) -> None:
        """Read-modify-write with the current resourceVersion succeeds."""
        cluster.create(secret("s"))
        live = json_copy(cluster.get("v1", "Secret", "default", "s"))  # reads are read-only: change a copy
        live["data"] = {"k": "dw=="}
        assert cluster.update(live)["data"] == {"k": "dw=="}

    def test_server_fields_are_preserved(self, cluster: Cluster) -> None:
        """uid, creationTimestamp and generation cannot be changed through an update."""
        clock_moved = cluster.create(widget("a"))["metadata"]
        body = widget("a", spec={"size": 5}, uid="other", creationTimestamp="2000-01-01T00:00:00Z", generation=40)
        meta = cluster.update(body)["metadata"]
        assert meta["uid"] == clock_moved["uid"]
        assert meta["creationTimestamp"] == clock_moved["creationTimestamp"]
        assert meta["generation"] == 2

    def test_metadata_change_keeps_generation(self, cluster: Cluster) -> None:
        """Labels and annotations are metadata: generation stays, resourceVersion moves."""
        created = cluster.create(widget("a"))
        updated = cluster.update(widget("a", labels={"app": "web"}, annotations={"note": "x"}))
        assert updated["metadata"]["generation"] == 1
        assert rv(updated) > rv(created)

    def test_no_op_keeps_resource_version(self, cluster: Cluster) -> None:
        """An update that changes nothing stores nothing: same resourceVersion."""
        created = cluster.create(widget("a", labels={"app": "web"}))
        again = cluster.update(widget("a", labels={"app": "web"}))
        assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        assert again == created

    def test_missing_is_not_found(self, cluster: Cluster) -> None:
        """Updating an object that does not exist is NotFound."""
        with pytest.raises(NotFound):
            cluster.update(secret("nope"))

    def test_status_is_part_of_a_kind_without_subresource(self, cluster: Cluster) -> None:
        """Without a status subresource, an update writes status like any field (and bumps generation)."""
        cluster.create(gadget("g", spec={"a": 1}))
        updated = cluster.update(gadget("g", spec={"a": 1}, status={"phase": "Up"}))
        assert updated["status"] == {"phase": "Up"}
        assert updated["metadata"]["generation"] == 2


class TestDelete:
    def test_delete_removes(self, cluster: Cluster) -> None:
        """Delete without finalizers removes the object and returns None."""
        cluster.create(secret("s"))
        assert cluster.delete("v1", "Secret", "default", "s") is None
        with pytest.raises(NotFound):
            cluster.get("v1", "Secret", "default", "s")

    def test_delete_missing(self, cluster: Cluster) -> None:
        """Deleting what is not there is NotFound."""
        with pytest.raises(NotFound, match=r'^secrets "s" not found$'):
            cluster.delete("v1", "Secret", "default", "s")

    def test_name_is_free_again(self, cluster: Cluster) -> None:
        """After a delete the name can be created again, with a new uid."""
        first = cluster.create(secret("s"))
        cluster.delete("v1", "Secret", "default", "s")
        second = cluster.create(secret("s"))
        assert second["metadata"]["uid"] != first["metadata"]["uid"]


class TestResourceVersion:
    def test_grows_across_kinds(self, cluster: Cluster) -> None:
        """Every write gets a larger resourceVersion than the one before, whatever the kind."""
        versions = [
            rv(cluster.create(secret("s"))),
            rv(cluster.create(widget("a"))),
            rv(cluster.update(secret("s", data={"k": "eA=="}))),
            rv(cluster.create(gadget("g"))),
        ]
        assert versions == sorted(versions)
        assert len(set(versions)) == 4

    def test_timestamps_follow_the_clock(self, cluster: Cluster, clock: Clock) -> None:
        """creationTimestamp is the clock's time when the object is created."""
        clock.advance(90)
        assert cluster.create(secret("s"))["metadata"]["creationTimestamp"] == "2026-01-01T00:01:30Z"
