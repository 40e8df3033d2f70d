"""The client's share of a request stays lean (issue 11: CPU per request): a status write and an apply each
run a bounded number of Python calls on the calling thread (counted by cProfile: load-independent, not timed),
and the shortcuts that keep it so give exactly the library's answers (path segments, query strings)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

import pytest

from engine.cluster.api import Obj
from engine.cluster.kube import KubeCluster
from engine.cluster.kube.wire import _QUERY, _query, _segment
from offline.cluster.memory import MemoryCluster
from tests.call_count import calls

API = "example.com/v1"
CALLS_PER_REQUEST = 172
"""Python calls (functions and builtins) one of these requests costs the calling thread: 305 before the request
path's context managers became plain try/except and its names and queries skipped urllib's quoting; 224 after;
216 once the answer's header lines were decoded once, not twice each; 187 once the path came from remembered
pieces, errors were translated only when raised, a set of headers was written once and fresh credentials were
read without a lock (the socket reads an answer takes vary it by a call or two); 167 once bodies were encoded and
answers decoded by orjson (``codec``; 187 before, so a return to ``json`` fails here)."""


def test_a_write_costs_a_bounded_number_of_calls(memory: MemoryCluster, kube: KubeCluster, widget_crd: Obj) -> None:
    memory.create(widget_crd)
    written = [kube.create({"apiVersion": API, "kind": "Widget", "metadata": {"name": f"w{i}", "namespace": "ns"},
                            "spec": {"size": i}}) for i in range(20)]

    def write_each() -> None:
        for i, widget in enumerate(written):
            kube.update_status({**widget, "status": {"size": i}}, field_manager="test")
            kube.apply({"apiVersion": API, "kind": "Widget", "metadata": {"name": f"w{i}", "namespace": "ns"},
                        "spec": {"size": -i}}, field_manager="test", force=True)

    assert calls(write_each) / (2 * len(written)) <= CALLS_PER_REQUEST


@pytest.mark.parametrize("text", ["ku-00042", "a.b_c~d-e", "UPPER", "with space", "a/b", "50%", "ünï", "x?y#z", "+"])
def test_a_path_segment_is_quoted_as_urllib_quotes_it(text: str) -> None:
    assert _segment(text) == quote(text, safe="")


@pytest.mark.parametrize("params", [
    {}, {"field_manager": "cobaltcore-operator"}, {"field_manager": "a b&c", "force_conflicts": True},
    {"label_selector": "x=1,y in (a,b)", "limit": 500, "_continue": None}, {"force_conflicts": False},
])
def test_a_query_string_is_the_one_urlencode_gives(params: dict[str, Any]) -> None:
    pairs = [(_QUERY[k], ("true" if v else "false") if isinstance(v, bool) else str(v))
             for k, v in params.items() if v is not None]
    assert _query(tuple(params.items())) == (f"?{urlencode(pairs)}" if pairs else "")


@pytest.mark.parametrize(("api_version", "kind", "namespace", "name", "subresource"), [
    (API, "Widget", "ns", "w-1", None), (API, "Widget", "ns", "w-1", "status"), (API, "Widget", "ns", None, None),
    (API, "Widget", None, None, None), (API, "Widget", "a b", "x/y%", "status"), ("v1", "Namespace", None, "ns", None),
    ("v1", "Namespace", None, None, None), ("v1", "Namespace", "ignored", "ns", None),
    ("v1", "Secret", "ns", "s", None),
])
def test_a_request_goes_to_the_path_the_library_builds(memory: MemoryCluster, kube: KubeCluster, widget_crd: Obj,
                                                       monkeypatch: pytest.MonkeyPatch, api_version: str, kind: str,
                                                       namespace: str | None, name: str | None,
                                                       subresource: str | None) -> None:
    """The wire's remembered path pieces give, for every shape (namespaced or not, one object or the collection, a
    subresource, segments to quote), the path the DynamicClient's resource builds, every time."""
    memory.create(widget_crd)
    wire = kube._wire
    resource = wire.resource(api_version, kind)
    target = resource.subresources[subresource] if subresource else resource
    expected = target.path(name=quote(name, safe="") if name else None,
                           namespace=quote(namespace, safe="") if namespace and resource.namespaced else None)
    sent: list[str] = []
    monkeypatch.setattr(wire, "_send", lambda method, path, **kw: sent.append(path))
    for _ in range(2):  # the first request remembers the pieces, the second uses them
        wire.call("get", api_version, kind, namespace=namespace, name=name, subresource=subresource)
    assert sent == [expected, expected]
