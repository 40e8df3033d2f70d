"""Create and update orders the way a user's kubectl would, against a CRD from deploy/crds.

Every test in this folder goes through ``CrdClient.create``, ``CrdClient.update`` and
``CrdClient.update_status`` only, so moving them from ``CrdAdmission`` to the in-memory
cluster later changes this file alone.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

Obj = dict[str, Any]

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"
CRD_FILES = ("c5c3.io_keystoneusers.yaml", "c5c3.io_rabbitmqvhosts.yaml")


def load_crd(filename: str) -> Obj:
    """The one CustomResourceDefinition document in a file of deploy/crds."""
    docs = [doc for doc in yaml.safe_load_all((CRDS / filename).read_text(encoding="utf-8")) if doc]
    assert len(docs) == 1, f"{filename} holds {len(docs)} documents"
    crd: Obj = docs[0]
    return crd


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: null removes a key, mappings merge, anything else (lists too) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class CrdClient:
    """Writes objects of one CRD's storage version through that CRD's admission."""

    def __init__(self, crd: Obj) -> None:
        from engine.cluster.admission import admissions_for  # imported late: the CRD-only tests need no engine

        version = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
        self.api_version = f"{crd['spec']['group']}/{version}"
        self.kind: str = crd["spec"]["names"]["kind"]
        self._admission = admissions_for(crd)[self.api_version]

    def create(self, obj: Obj) -> Obj:
        """Create as a user would; returns the object as stored (defaulted, pruned) or raises Invalid."""
        return self._admission.admit(copy.deepcopy(obj))

    def update(self, stored: Obj, patch: Obj) -> Obj:
        """A JSON merge patch of the stored object, admitted as an update of it."""
        return self._admission.admit(merge_patch(stored, patch), old=copy.deepcopy(stored))

    def update_status(self, stored: Obj, status: Obj) -> Obj:
        """A JSON merge patch of the stored object's status, as the operator writes it."""
        return self._admission.admit(merge_patch(stored, {"status": status}), old=copy.deepcopy(stored))


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
def keystoneusers() -> CrdClient:
    """KeystoneUser orders through deploy/crds/c5c3.io_keystoneusers.yaml."""
    return CrdClient(load_crd("c5c3.io_keystoneusers.yaml"))


@pytest.fixture
def rabbitmqvhosts() -> CrdClient:
    """RabbitMQVhost orders through deploy/crds/c5c3.io_rabbitmqvhosts.yaml."""
    return CrdClient(load_crd("c5c3.io_rabbitmqvhosts.yaml"))


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
