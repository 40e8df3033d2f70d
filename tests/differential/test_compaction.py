"""410 after compaction: a watch from a resourceVersion older than the storage keeps is Gone, on all three legs.

The real server here runs without its watch cache (``--watch-cache=false``): with it, a watch from an old
resourceVersion is served from the cache's history, which grows while events are fresh, so compacting etcd does not
make it Gone within a test's time. Compaction is etcd's, through its HTTP gateway; the emulators forget their event
log (``MemoryCluster.compact``)."""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterator

import pytest

from engine.clock import SystemClock
from offline.cluster.memory import MemoryCluster
from offline.emulator import Emulator
from offline.realkube import KubeBinaries, KubeServer
from tests.differential.harness import COMPACT, Call, Case, HttpLeg, Kept, Runner, call, report
from tests.differential.kept import KEPT
from tests.differential.memory_leg import MemoryLeg
from tests.differential.objects import CM, configmap
from tests.differential.test_kept import still_happens


def compact_etcd(etcd_url: str, revision: str) -> None:
    """Compact etcd at a revision (a resourceVersion is one), or at its current one when none is given."""
    def post(path: str, body: dict[str, object]) -> dict[str, object]:
        request = urllib.request.Request(etcd_url + path, data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(request, timeout=10) as answer:
            found: dict[str, object] = json.load(answer)
            return found

    if not revision:
        header = post("/v3/kv/range", {"key": base64.b64encode(b"\0").decode()})["header"]
        assert isinstance(header, dict)
        revision = str(header["revision"])
    post("/v3/kv/compaction", {"revision": revision, "physical": True})


@pytest.fixture(scope="module")
def servers(kube_binaries: KubeBinaries) -> Iterator[tuple[KubeServer, Emulator, MemoryCluster]]:
    with KubeServer("compaction", binaries=kube_binaries, controllers=False,
                    apiserver_flags=["--watch-cache=false"]) as real, \
            Emulator(MemoryCluster("", clock=SystemClock())) as emulated:
        yield real, emulated, MemoryCluster("", clock=SystemClock())


def runner(servers: tuple[KubeServer, Emulator, MemoryCluster], prefix: str, kept: list[Kept]) -> Runner:
    real, emulated, memory = servers
    legs = [HttpLeg("real", real.url, token=real.token(), ca_pem=real.ca_pem,
                    compact=lambda revision: compact_etcd(real.etcd_url, revision)),
            HttpLeg("emulator", emulated.url,
                    compact=lambda revision: emulated.cluster.compact(int(revision) if revision else None)),
            MemoryLeg(memory)]
    return Runner(legs, prefix=prefix, kept=kept)


@pytest.fixture(scope="module")
def compacting(servers: tuple[KubeServer, Emulator, MemoryCluster]) -> Iterator[Runner]:
    running = runner(servers, "c", KEPT)
    yield running
    running.close()


COMPACTED = Case("a watch from before a compaction is Gone; one from after it is not", [
    call("POST", CM, configmap("a"), name="a"),
    call("POST", CM, configmap("b")),
    call("PUT", CM + "/b", configmap("b", k="v"), name="b"),
    Call(COMPACT, "", {"revision": "$rv(b)"}),
    call("GET", CM, watch=1, resourceVersion="$rv(a)", timeoutSeconds=2),
    call("GET", CM, watch=1, resourceVersion="$rv(b)", timeoutSeconds=5, sentinel=configmap("zz-sentinel")),
    call("POST", CM, configmap("c")),
    call("GET", CM, watch=1, resourceVersion="$rv(b)", timeoutSeconds=5, sentinel=configmap("zz-sentinel-2")),
], namespaces=("{ns}",))


def test_watches_across_a_compaction(compacting: Runner) -> None:
    found = compacting.run(COMPACTED)
    assert not found, report(found)


HERE = [k for k in KEPT if k.where == "compaction"]


@pytest.mark.parametrize("kept", HERE, ids=[k.name for k in HERE])
def test_the_kept_difference_still_happens(servers: tuple[KubeServer, Emulator, MemoryCluster], kept: Kept) -> None:
    bare = runner(servers, "ck", [])
    try:
        still_happens(bare, kept)
    finally:
        bare.close()
