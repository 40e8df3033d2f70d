"""Helpers of the KubeCluster tests over HTTP: waiting for what a thread does, counting the requests a cluster
sends, waiting for its informers' watches (the fixtures are in tests/cluster/conftest.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from engine.cluster.api import Obj
from engine.cluster.kube import KubeCluster
from engine.cluster.kube.informer import Informer
from offline.emulator import Emulator

MakeKube = Callable[..., KubeCluster]
"""The ``make_kube`` fixture (tests/cluster/conftest.py): a KubeCluster against the emulated cluster."""


def widget_crd(group: str = "example.com") -> Obj:
    """The CRD of Widget (``<group>/v1``, namespaced, any fields, a status subresource), a new copy each call: to
    install in an in-memory cluster or write through a cluster (the ``widget_crd`` fixture is example.com's)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


def names(objs: list[Obj]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def eventually(check: Callable[[], bool], within: float = 5.0) -> bool:
    """Poll a condition a thread makes true, in tiny steps."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


class Requests:
    """Every HTTP request a KubeCluster's ApiClient makes, as (method, path, query)."""

    def __init__(self, cluster: KubeCluster) -> None:
        self.seen: list[tuple[str, str, dict[str, list[str]]]] = []
        self._lock = threading.Lock()
        rest: Any = cluster.api_client.rest_client  # below both the DynamicClient and the wire's own verbs
        original = rest.request

        def counted(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            parts = urlsplit(url)
            with self._lock:
                self.seen.append((method, parts.path, parse_qs(parts.query)))
            return original(method, url, *args, **kwargs)

        rest.request = counted

    def count(self) -> int:
        with self._lock:
            return len(self.seen)

    def watches(self) -> list[dict[str, list[str]]]:
        with self._lock:
            return [query for _, _, query in self.seen if query.get("watch") == ["true"]]


def watching(emulator: Emulator, *clusters: KubeCluster) -> None:
    """Wait until every informer of these clusters has its watch open on the server. An informer opens its watch
    on its own thread just after its first list; a Requests made before that would count the watch's request."""
    expected = sum(1 for cluster in clusters for informer in cluster.informers() if isinstance(informer, Informer))
    assert eventually(lambda: sum(emulator.open_watches().values()) >= expected)


class OneReadBody:
    """A watch answer whose lines arrive in one read: enough for WatchStream."""

    chunked = False

    def __init__(self, data: bytes) -> None:
        self._data = [data]

    def read1(self, amt: int) -> bytes:
        return self._data.pop() if self._data else b""

    def shutdown(self) -> None: ...
    def close(self) -> None: ...
    def release_conn(self) -> None: ...
