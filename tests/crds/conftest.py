"""Create and update orders the way a user's kubectl would, against a CRD from deploy/crds.

Every test in this folder goes through ``CrdClient.create``, ``CrdClient.update`` and
``CrdClient.update_status`` only, and runs on two backends: ``CrdAdmission`` on its own,
and a ``MemoryCluster`` with the CRD installed (what scenarios run against). A backend
more (the HTTP emulator, say) is one class here.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

import pytest
import yaml

from engine.cluster.patches import merge_patch

Obj = dict[str, Any]

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"
CRD_FILES = ("c5c3.io_keystoneusers.yaml", "c5c3.io_rabbitmqvhosts.yaml")


def load_crd(filename: str) -> Obj:
    """The one CustomResourceDefinition document in a file of deploy/crds."""
    docs = [doc for doc in yaml.safe_load_all((CRDS / filename).read_text(encoding="utf-8")) if doc]
    assert len(docs) == 1, f"{filename} holds {len(docs)} documents"
    crd: Obj = docs[0]
    return crd


def condition(**fields: Any) -> Obj:
    """A valid Ready condition, with fields replaced (None drops one)."""
    cond: Obj = {
        "type": "Ready",
        "status": "True",
        "reason": "AllReady",
        "message": "All sub-conditions are ready",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "observedGeneration": 1,
    }
    cond.update(fields)
    return {k: v for k, v in cond.items() if v is not None}


class CrdClient(Protocol):
    """Writes objects of one CRD's storage version as a user (create, update) or the operator (status) would."""

    def create(self, obj: Obj) -> Obj:
        """Create; returns the object as stored (defaulted, pruned) or raises Invalid."""
        ...

    def update(self, stored: Obj, patch: Obj) -> Obj:
        """A JSON merge patch of the stored object, admitted as an update of it."""
        ...

    def update_status(self, stored: Obj, status: Obj) -> Obj:
        """A JSON merge patch of the stored object's status, as the operator writes it."""
        ...


def storage_api_version(crd: Obj) -> str:
    """The group/version objects of the CRD are written in."""
    version = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
    return f"{crd['spec']['group']}/{version}"


class AdmissionClient:
    """Straight through ``CrdAdmission``: the update is admitted against the stored object given."""

    def __init__(self, crd: Obj) -> None:
        from offline.cluster.admission import admissions_for  # imported late: the CRD-only tests need no engine

        self._admission = admissions_for(crd)[storage_api_version(crd)]

    def create(self, obj: Obj) -> Obj:
        return self._admission.admit(copy.deepcopy(obj))

    def update(self, stored: Obj, patch: Obj) -> Obj:
        return self._admission.admit(merge_patch(stored, patch), old=copy.deepcopy(stored))

    def update_status(self, stored: Obj, status: Obj) -> Obj:
        return self._admission.admit(merge_patch(stored, {"status": status}), old=copy.deepcopy(stored))


class ClusterClient:
    """Through an in-memory cluster with the CRD installed, as ``kubectl create`` and ``kubectl patch`` would."""

    def __init__(self, crd: Obj) -> None:
        from offline.clock import SimulatedClock
        from offline.cluster.memory import MemoryCluster

        self._cluster = MemoryCluster("", clock=SimulatedClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC)))
        self._cluster.create(copy.deepcopy(crd))
        self._api_version = storage_api_version(crd)
        self._kind: str = crd["spec"]["names"]["kind"]

    def create(self, obj: Obj) -> Obj:
        return self._cluster.create(copy.deepcopy(obj))

    def update(self, stored: Obj, patch: Obj) -> Obj:
        meta = stored["metadata"]
        return self._cluster.patch(self._api_version, self._kind, meta.get("namespace"), meta["name"], patch)

    def update_status(self, stored: Obj, status: Obj) -> Obj:
        meta = stored["metadata"]
        return self._cluster.patch(
            self._api_version, self._kind, meta.get("namespace"), meta["name"], {"status": status}, status=True
        )


BACKENDS: dict[str, Callable[[Obj], CrdClient]] = {"admission": AdmissionClient, "cluster": ClusterClient}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Callable[[Obj], CrdClient]:
    """Every admission test runs twice: straight through CrdAdmission, and through a MemoryCluster."""
    return BACKENDS[request.param]


@pytest.fixture(params=CRD_FILES)
def crd(request: pytest.FixtureRequest) -> Obj:
    """Each CRD of deploy/crds in turn."""
    return load_crd(request.param)


@pytest.fixture
def keystoneuser_crd() -> Obj:
    """deploy/crds/c5c3.io_keystoneusers.yaml as loaded."""
    return load_crd("c5c3.io_keystoneusers.yaml")


@pytest.fixture
def rabbitmqvhost_crd() -> Obj:
    """deploy/crds/c5c3.io_rabbitmqvhosts.yaml as loaded."""
    return load_crd("c5c3.io_rabbitmqvhosts.yaml")


@pytest.fixture
def keystoneusers(backend: Callable[[Obj], CrdClient]) -> CrdClient:
    """KeystoneUser orders through deploy/crds/c5c3.io_keystoneusers.yaml."""
    return backend(load_crd("c5c3.io_keystoneusers.yaml"))


@pytest.fixture
def rabbitmqvhosts(backend: Callable[[Obj], CrdClient]) -> CrdClient:
    """RabbitMQVhost orders through deploy/crds/c5c3.io_rabbitmqvhosts.yaml."""
    return backend(load_crd("c5c3.io_rabbitmqvhosts.yaml"))


@contextmanager
def _rejects(*texts: str) -> Iterator[None]:
    from engine.cluster.api import Invalid

    with pytest.raises(Invalid) as caught:
        yield
    for text in texts:
        assert text in str(caught.value), f"{text!r} not in {str(caught.value)!r}"


@pytest.fixture
def rejects() -> Callable[..., AbstractContextManager[None]]:
    """``with rejects(*texts):`` expects an Invalid whose message holds every text."""
    return _rejects
