"""KubeCluster.serves remembers discovery's answers: a rule's `served:` input, read on every pass, costs
no request once answered; a kind that leaves the server, or one installed later, is still noticed."""

from __future__ import annotations

import pytest

from engine.cluster.api import NotFound, Obj
from engine.cluster.kube.served import ServedKinds
from offline.cluster.memory import MemoryCluster
from tests.cluster.kube_kit import MakeKube, Requests

CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "widgets.example.com")


def discovery(requests: Requests) -> list[str]:
    return [path for _, path, _ in requests.seen if path.startswith("/apis/example.com")]


def test_a_served_kind_is_asked_once(memory: MemoryCluster, make_kube: MakeKube, widget_crd: Obj) -> None:
    memory.create(widget_crd)  # installed by someone else
    kube = make_kube()
    requests = Requests(kube)
    assert [kube.serves("example.com/v1", "Widget") for _ in range(5)] == [True] * 5
    assert discovery(requests) == ["/apis/example.com/v1"]


def test_a_kind_that_leaves_the_server_is_asked_again(memory: MemoryCluster,
                                                      make_kube: MakeKube, widget_crd: Obj) -> None:
    memory.create(widget_crd)
    kube = make_kube()
    assert kube.serves("example.com/v1", "Widget")
    memory.delete(*CRD)  # removed by someone else: the next request on the kind answers 404 naming no object
    with pytest.raises(NotFound):
        kube.get("example.com/v1", "Widget", "default", "w", live=True)
    assert not kube.serves("example.com/v1", "Widget")


def test_an_unserved_answer_stands_for_the_recheck_only(memory: MemoryCluster,
                                                        make_kube: MakeKube, widget_crd: Obj) -> None:
    remembering, asking = make_kube(), make_kube(unserved_recheck=0.0)
    assert not remembering.serves("example.com/v1", "Widget")
    assert not asking.serves("example.com/v1", "Widget")
    memory.create(widget_crd)  # installed later by someone else
    requests = Requests(remembering)
    assert not remembering.serves("example.com/v1", "Widget")  # within the recheck: no request
    assert discovery(requests) == []
    assert asking.serves("example.com/v1", "Widget")  # past it: discovery finds the new kind


def test_a_crd_written_through_the_cluster_is_seen_at_once(make_kube: MakeKube, widget_crd: Obj) -> None:
    kube = make_kube()
    assert not kube.serves("example.com/v1", "Widget")
    kube.create(widget_crd)
    assert kube.serves("example.com/v1", "Widget")


def test_served_kinds_expire_only_unserved_answers() -> None:
    now = [0.0]
    kinds = ServedKinds(recheck=10.0, clock=lambda: now[0])
    kinds.note("a/v1", "Served", True)
    kinds.note("a/v1", "Missing", False)
    now[0] = 9.9
    assert (kinds.known("a/v1", "Served"), kinds.known("a/v1", "Missing")) == (True, False)
    now[0] = 10.0
    assert (kinds.known("a/v1", "Served"), kinds.known("a/v1", "Missing")) == (True, None)
    kinds.forget("a/v1", "Served")
    assert kinds.known("a/v1", "Served") is None


def test_after_a_crd_write_nothing_is_remembered_while_the_server_settles() -> None:
    """A real API server serves a new CRD's kind (and drops a deleted one) a moment after the write: for the
    settle time after a CRD written through the cluster, discovery is asked every time."""
    now = [0.0]
    kinds = ServedKinds(recheck=10.0, settle=5.0, clock=lambda: now[0])
    kinds.forget()  # a CRD written through the cluster
    kinds.note("a/v1", "Thing", False)
    assert kinds.known("a/v1", "Thing") is None
    kinds.note("a/v1", "Thing", True)
    assert kinds.known("a/v1", "Thing") is None
    now[0] = 5.0
    kinds.note("a/v1", "Thing", True)
    assert kinds.known("a/v1", "Thing") is True
