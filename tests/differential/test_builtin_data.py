"""The emulators' data about built-in kinds still matches the real server it was taken from: the OpenAPI schemas
and Table columns (offline/cluster/builtin/data.json) and the Go types' encoding of empty fields
(offline/cluster/builtin/encoding.json). After a Kubernetes bump, ``python -m tests.differential.builtin_data``
rewrites both."""

from __future__ import annotations

import json
import shutil

import pytest

from offline.cluster.builtin.schema import DATA_FILE, ENCODING_FILE
from offline.realkube import KubeServer
from tests.differential.builtin_data import Server, collect, encoding, render


def test_the_schemas_and_columns_are_the_real_servers(real_server: KubeServer) -> None:
    assert DATA_FILE.read_text() == render(collect(Server(real_server))), (
        "offline/cluster/builtin/data.json is stale: run python -m tests.differential.builtin_data")


def test_the_encodings_are_the_go_types(kube_binaries: object) -> None:
    """Go built the binaries, so it is there; the tool compiles from the same module cache (a few seconds once
    cached)."""
    assert shutil.which("go"), "the real-server tier needs Go (it built the binaries)"
    assert json.loads(ENCODING_FILE.read_text()) == json.loads(encoding()), (
        "offline/cluster/builtin/encoding.json is stale: run python -m tests.differential.builtin_data")


pytestmark = pytest.mark.real_server
