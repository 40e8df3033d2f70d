"""The emulator's pure parts: the printer-column JSONPath subset, table cells, ages, routes, version order."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.clock import SystemClock
from engine.cluster.api import UnsupportedMediaType
from offline.cluster.memory import MemoryCluster
from offline.emulator.discovery import version_key
from offline.emulator.jsonpath import JsonPathError, compile_path
from offline.emulator.protobuf import decode
from offline.emulator.routes import Document, Target, parse_route
from offline.emulator.table import go_format, human_duration, to_table, wanted_table

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"

ORDER: dict[str, Any] = {
    "metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z",
                 "labels": {"app.kubernetes.io/name": "web"}},
    "spec": {"controlPlaneRef": {"name": "cp"}, "ports": [{"n": 1}, {"n": 3}, {"n": 5}]},
    "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]},
}


class TestJsonPath:
    @pytest.mark.parametrize(("path", "expected"), [
        (".status.conditions[?(@.type=='Ready')].status", ["True"]),
        ('.status.conditions[?(@.type=="Synced")].status', ["False"]),
        (".spec.controlPlaneRef.name", ["cp"]),
        (".metadata.creationTimestamp", ["2026-01-01T00:00:00Z"]),
        ("{.spec.controlPlaneRef.name}", ["cp"]),
        ("$.spec.controlPlaneRef.name", ["cp"]),
        (".metadata.labels['app.kubernetes.io/name']", ["web"]),
        (r".metadata.labels.app\.kubernetes\.io/name", ["web"]),
        (".spec.ports[0].n", [1]),
        (".spec.ports[-1].n", [5]),
        (".spec.ports[*].n", [1, 3, 5]),
        (".spec.ports[?(@.n > 2)].n", [3, 5]),
        (".spec.ports[?(@.n != 3)].n", [1, 5]),
        (".status.conditions[?(@.reason)].type", []),
        (".spec.controlPlaneRef.*", ["cp"]),
        (".spec.missing.name", []),
        (".spec.ports[7].n", []),
    ])
    def test_finds(self, path: str, expected: list[Any]) -> None:
        """Each supported form finds what Kubernetes JSONPath finds."""
        assert compile_path(path).find(ORDER) == expected

    @pytest.mark.parametrize("path", ["..name", ".spec.ports[1:2]", ".spec[", "spec.name", ".a[?(@.b=~'x')]"])
    def test_outside_the_subset_is_an_error(self, path: str) -> None:
        """Forms the subset lacks fail when compiled, naming the path."""
        with pytest.raises(JsonPathError, match="unsupported JSONPath"):
            compile_path(path)

    @pytest.mark.parametrize(("labels", "expected"), [
        ({"sharding.c5c3.io/shard": "m-1"}, ["m-1"]),
        ({"sharding.c5c3.io/shard": ""}, [""]),
        ({"sharding.c5c3.io/drain": "true"}, []),
        (None, []),
    ])
    def test_an_escaped_label_key_is_one_field(self, labels: dict[str, str] | None, expected: list[str]) -> None:
        """``\\.`` escapes a dot in a field name, as Kubernetes JSONPath reads it (the escapes dropped): the label's
        value, or no match when that label or every label is absent."""
        order = {"metadata": {"name": "x"} | ({"labels": labels} if labels is not None else {})}
        assert compile_path(r".metadata.labels.sharding\.c5c3\.io/shard").find(order) == expected
        assert compile_path(".metadata.labels.sharding.c5c3.io/shard").find(order) == []  # unescaped: nested fields

    def test_first_tells_absent_from_null(self) -> None:
        """first() distinguishes no match from a match whose value is null."""
        assert compile_path(".a").first({"a": None}) == (True, None)
        assert compile_path(".b").first({"a": None}) == (False, None)


class TestCells:
    @pytest.mark.parametrize(("seconds", "text"), [
        (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (307, "5m7s"), (600, "10m"),
        (179 * 60, "179m"), (3 * 3600, "3h"), (3 * 3600 + 300, "3h5m"), (8 * 3600, "8h"), (47 * 3600, "47h"),
        (48 * 3600, "2d"), (76 * 3600, "3d4h"), (8 * 86400, "8d"), (729 * 86400, "729d"), (730 * 86400, "2y"),
        (740 * 86400, "2y10d"), (8 * 365 * 86400, "8y"),
    ])
    def test_human_duration(self, seconds: int, text: str) -> None:
        """Ages read as kubectl prints them."""
        assert human_duration(dt.timedelta(seconds=seconds)) == text

    @pytest.mark.parametrize(("value", "text"), [
        (True, "true"), (3, "3"), (3.0, "3"), (1.5, "1.5"), ("s", "s"), (["a", 1], "[a 1]"),
        ({"b": 1, "a": "x"}, "map[a:x b:1]"),
    ])
    def test_string_cells_print_as_go(self, value: Any, text: str) -> None:
        """A string column shows any value as Go's %v would."""
        assert go_format(value) == text

    @pytest.mark.parametrize("crd", ["c5c3.io_keystoneusers.yaml", "c5c3.io_rabbitmqvhosts.yaml"])
    def test_the_order_crds_shard_cell_is_the_label_or_null(self, crd: str) -> None:
        """The Shard column of an order CRD, installed in the memory cluster and served as a Table: the member's
        name; null when the order carries no shard label (the API server's custom resource table convertor sends
        null for a path that finds nothing, kubectl prints an empty cell); an empty label prints empty."""
        cluster = MemoryCluster("", clock=SystemClock())
        for doc in yaml.safe_load_all((CRDS / crd).read_text()):
            installed = cluster.create(doc)
        kind = installed["spec"]["names"]["kind"]
        info = cluster.resource_info(f"c5c3.io/{installed['spec']['versions'][0]['name']}", kind)
        assert info.printer_columns[-1].name == "Shard"
        orders = [{"metadata": {"name": "mine", "labels": {"sharding.c5c3.io/shard": "m-1"}}},
                  {"metadata": {"name": "drained", "labels": {"sharding.c5c3.io/drain": "true"}}},
                  {"metadata": {"name": "new"}},
                  {"metadata": {"name": "blank", "labels": {"sharding.c5c3.io/shard": ""}}}]
        table = to_table(info, orders, api_version="meta.k8s.io/v1", now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
        assert table["columnDefinitions"][-1]["name"] == "Shard"
        assert [(row["cells"][0], row["cells"][-1]) for row in table["rows"]] == [
            ("mine", "m-1"), ("drained", None), ("new", None), ("blank", "")]

    @pytest.mark.parametrize(("accept", "wanted"), [
        ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,"
         "application/json", "meta.k8s.io/v1"),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", "meta.k8s.io/v1beta1"),
        ("application/json", None),
        ("application/json, application/json;as=Table;v=v1;g=meta.k8s.io", None),
        ("application/json;as=Table;v=v1;g=other.io", None),
        ("", None),
    ])
    def test_table_is_chosen_by_accept(self, accept: str, wanted: str | None) -> None:
        """A Table is answered only when the Accept header prefers one."""
        assert wanted_table(accept) == wanted


class TestRoutes:
    @pytest.mark.parametrize(("path", "route"), [
        ("/version", Document("version")),
        ("/api", Document("api")),
        ("/api/v1", Document("resources", "v1")),
        ("/apis", Document("apis")),
        ("/apis/example.com", Document("group", "example.com")),
        ("/apis/example.com/v1", Document("resources", "example.com/v1")),
        ("/openapi/v3/apis/example.com/v1", Document("openapi-gv", "example.com/v1")),
        ("/api/v1/namespaces", Target("v1", None, "namespaces")),
        ("/api/v1/namespaces/ns", Target("v1", None, "namespaces", "ns")),
        ("/api/v1/namespaces/ns/status", Target("v1", None, "namespaces", "ns", "status")),
        ("/api/v1/namespaces/ns/secrets", Target("v1", "ns", "secrets")),
        ("/api/v1/namespaces/ns/secrets/s%2Ex", Target("v1", "ns", "secrets", "s.x")),
        ("/apis/example.com/v1/widgets", Target("example.com/v1", None, "widgets")),
        ("/apis/example.com/v1/namespaces/ns/widgets/w/status",
         Target("example.com/v1", "ns", "widgets", "w", "status")),
        ("/apis/example.com/v1/namespaces/ns/widgets/w/status/more", None),
        ("/api/v2/secrets", None),
        ("/elsewhere", None),
    ])
    def test_parse(self, path: str, route: Any) -> None:
        """Paths map to discovery documents or resource targets as the API server lays them out."""
        assert parse_route(path) == route


def test_versions_sort_as_kubernetes_prefers_them() -> None:
    """GA before beta before alpha, higher first; unknown shapes last."""
    found = sorted(["v1alpha1", "foo", "v2", "v1beta1", "v1", "v1beta2", "v10"], key=version_key)
    assert found == ["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (payloads under 128 bytes)."""
    return bytes([number << 3 | 2, len(payload)]) + payload


class TestProtobuf:
    def test_decodes_a_config_map(self) -> None:
        """A ConfigMap in the Kubernetes protobuf envelope reads as its JSON object; empty fields are dropped."""
        meta = _field(1, b"c") + _field(2, b"") + _field(3, b"ns") + _field(11, _field(1, b"app") + _field(2, b"a"))
        raw = _field(1, meta) + _field(2, _field(1, b"k") + _field(2, b"v")) + _field(3, _field(1, b"b") +
                                                                            _field(2, b"\x00\x01"))
        body = b"k8s\x00" + _field(1, _field(1, b"v1") + _field(2, b"ConfigMap")) + _field(2, raw)
        assert decode(body) == {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "labels": {"app": "a"}},
            "data": {"k": "v"}, "binaryData": {"b": "AAE="},
        }

    @pytest.mark.parametrize(("body", "message"), [
        (b"\x0a\x02v1", "envelope"),
        (b"k8s\x00" + _field(1, _field(1, b"v1") + _field(2, b"Pod")), "send Pod as application/json"),
        (b"k8s\x00\x0a\x7f", "could not be read"),
    ])
    def test_refuses_what_it_cannot_read(self, body: bytes, message: str) -> None:
        """Bodies without the envelope, of other kinds or cut short are a 415 that says why."""
        with pytest.raises(UnsupportedMediaType, match=message):
            decode(body)
