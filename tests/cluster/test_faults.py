"""FaultyCluster records every call and fails the chosen ones before they reach the cluster."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "contract"))
from contract_kit import WIDGET, WIDGET_CRD, Clock, secret, widget

from engine.cluster.api import ERRORS_BY_NAME, Call, Conflict, NotFound, ServerError, Timeout
from offline.cluster.faults import FaultyCluster
from offline.cluster.memory import MemoryCluster


@pytest.fixture
def inner() -> MemoryCluster:
    cluster = MemoryCluster("edge-1", clock=Clock())
    cluster.create(WIDGET_CRD)
    return cluster


@pytest.fixture
def faulty(inner: MemoryCluster) -> FaultyCluster:
    return FaultyCluster(inner, cluster_name="edge-1")


def verbs(faulty: FaultyCluster) -> list[tuple[str, str | None, bool]]:
    return [(c.verb, c.name, c.failed) for c in faulty.calls]


class TestRecording:
    def test_every_verb_is_recorded(self, faulty: FaultyCluster) -> None:
        """Each call through the wrapper is one Call with its cluster, verb and target."""
        created = faulty.create(widget("a"))
        faulty.get(WIDGET, "Widget", "default", "a")
        faulty.list(WIDGET, "Widget", "default")
        faulty.update(widget("a", spec={"size": 2}, resourceVersion=created["metadata"]["resourceVersion"]))
        faulty.patch(WIDGET, "Widget", "default", "a", {"spec": {"size": 3}})
        faulty.apply(widget("a"), field_manager="m", force=True)
        list(faulty.watch(WIDGET, "Widget", timeout=0))
        faulty.delete(WIDGET, "Widget", "default", "a")
        assert [c.verb for c in faulty.calls] == [
            "create", "get", "list", "update", "patch", "apply", "watch", "delete",
        ]
        assert faulty.calls[0] == Call("edge-1", "create", WIDGET, "Widget", "default", "a")
        assert faulty.calls[2].name is None

    def test_status_writes_count_as_their_verb(self, faulty: FaultyCluster) -> None:
        """update_status is an update, a status patch a patch, a status apply an apply; the subresource is noted."""
        created = faulty.create(widget("a"))
        faulty.update_status(widget("a", status={"x": 1}, resourceVersion=created["metadata"]["resourceVersion"]))
        faulty.patch(WIDGET, "Widget", "default", "a", {"status": {"x": 2}}, status=True)
        faulty.apply(widget("a", status={"x": 3}), field_manager="m", force=True, status=True)
        assert [(c.verb, c.extra.get("subresource")) for c in faulty.calls[1:]] == [
            ("update", "status"), ("patch", "status"), ("apply", "status"),
        ]
        assert faulty.inner.get(WIDGET, "Widget", "default", "a")["status"] == {"x": 3}

    def test_discovery_is_not_a_call(self, faulty: FaultyCluster) -> None:
        """resource_info and serves pass through unrecorded."""
        assert faulty.serves(WIDGET, "Widget")
        assert faulty.resource_info(WIDGET, "Widget").plural == "widgets"
        assert faulty.calls == []

    def test_calls_can_be_cleared(self, faulty: FaultyCluster) -> None:
        """The caller reads and clears the list between steps."""
        faulty.list("v1", "Secret")
        assert len(faulty.calls) == 1
        faulty.calls.clear()
        assert faulty.calls == []

    def test_errors_of_the_cluster_mark_the_call_failed(self, faulty: FaultyCluster) -> None:
        """A call the wrapped cluster rejects is recorded as failed."""
        with pytest.raises(NotFound):
            faulty.get("v1", "Secret", "default", "missing")
        assert verbs(faulty) == [("get", "missing", True)]


class TestInjection:
    def test_next_matching_call_fails(self, faulty: FaultyCluster) -> None:
        """An injected error fails the next matching call, which never reaches the cluster."""
        faulty.inject(verb="create", kind="Secret", error="Conflict")
        with pytest.raises(Conflict):
            faulty.create(secret("s"))
        with pytest.raises(NotFound):
            faulty.inner.get("v1", "Secret", "default", "s")
        faulty.create(secret("s"))
        assert verbs(faulty) == [("create", "s", True), ("create", "s", False)]

    def test_times(self, faulty: FaultyCluster) -> None:
        """times=N fails exactly the next N matching calls."""
        faulty.inject(verb="list", error="ServerError", times=2)
        for _ in range(2):
            with pytest.raises(ServerError) as caught:
                faulty.list("v1", "Secret")
            assert caught.value.code == 500
        assert faulty.list("v1", "Secret").items == []

    def test_only_matching_calls_fail(self, faulty: FaultyCluster) -> None:
        """Calls differing in any given field pass; omitted fields match anything."""
        faulty.create(widget("a"))
        faulty.create(widget("b"))
        faulty.inject(verb="patch", api_version=WIDGET, kind="Widget", namespace="default", name="b")
        faulty.patch(WIDGET, "Widget", "default", "a", {"spec": {"size": 2}})
        faulty.get(WIDGET, "Widget", "default", "b")
        with pytest.raises(ServerError):
            faulty.patch(WIDGET, "Widget", "default", "b", {"spec": {"size": 2}})

    def test_timeout(self, faulty: FaultyCluster) -> None:
        """Timeout is a 504."""
        faulty.inject(error="Timeout")
        with pytest.raises(Timeout) as caught:
            faulty.get("v1", "Secret", "default", "x")
        assert caught.value.code == 504

    def test_watch_fails_when_called(self, faulty: FaultyCluster) -> None:
        """An injected watch failure is raised by the watch call itself."""
        faulty.inject(verb="watch", error="Gone")
        with pytest.raises(ERRORS_BY_NAME["Gone"]):
            faulty.watch(WIDGET, "Widget", timeout=0)

    def test_status_write_matches_its_verb(self, faulty: FaultyCluster) -> None:
        """A fault for verb update also hits update_status."""
        faulty.create(widget("a"))
        faulty.inject(verb="update")
        with pytest.raises(ServerError):
            faulty.update_status(widget("a", status={"x": 1}))

    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"error": "Teapot"}, "unknown error 'Teapot'"),
        ({"verb": "explode"}, "unknown verb 'explode'"),
        ({"times": 0}, "times must be at least 1"),
    ])
    def test_bad_injection(self, faulty: FaultyCluster, kwargs: dict[str, object], message: str) -> None:
        """A fault that could never be right is refused at once."""
        with pytest.raises(ValueError, match=message):
            faulty.inject(**kwargs)  # type: ignore[arg-type]
