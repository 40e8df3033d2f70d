"""What the emulators need to know about built-in kinds, taken from a real kube-apiserver: the OpenAPI v3
schemas of the kinds the memory cluster serves (properties, types, required fields, defaults, patch merge keys
and strategies, list types and map keys), and the Table columns the server prints for each.

``python -m tests.differential.builtin_data`` starts a real server (the pinned binaries) and rewrites
``offline/cluster/builtin/data.json``, then runs ``tools/builtin-types`` (Go, the same release's k8s.io/api types)
and rewrites ``offline/cluster/builtin/encoding.json``; ``test_builtin_data`` checks both committed files.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from offline.cluster.builtin.schema import DATA_FILE, ENCODING_FILE
from offline.cluster.served_kinds import BUILTIN_KINDS
from offline.realkube import KubeServer

Obj = dict[str, Any]

KEPT = ("type", "format", "required", "default", "enum", "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key",
        "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource")
"""The schema keywords kept (descriptions and validations are the server's business, not the emulators')."""
REF = "#/components/schemas/"


class Server:
    """A keep-alive HTTPS connection to a real server, admin token."""

    def __init__(self, server: KubeServer) -> None:
        context = ssl.create_default_context(cadata=server.ca_pem.decode())
        self._connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=60)
        self._token = server.token()

    def get(self, path: str, accept: str = "application/json") -> Any:
        self._connection.request("GET", path, headers={"Authorization": f"Bearer {self._token}", "Accept": accept})
        response = self._connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status} {body[:300]!r}")
        return json.loads(body)


def collect(server: Server) -> Obj:
    """The data file's content, from the server's OpenAPI v3 documents and its Table answers."""
    paths = server.get("/openapi/v3")["paths"]
    schemas: dict[str, Obj] = {}
    kinds: dict[str, str] = {}
    columns: dict[str, list[Obj]] = {}
    for info in BUILTIN_KINDS:
        group_version = f"api/{info.api_version}" if "/" not in info.api_version else f"apis/{info.api_version}"
        document = server.get(paths[group_version]["serverRelativeURL"])
        found = document["components"]["schemas"]
        name = _kind_schema(found, info.group, info.version, info.kind)
        kinds[f"{info.api_version}/{info.kind}"] = name
        for reachable in _reachable(found, name):
            schemas[reachable] = _compact(found[reachable])
        table = server.get(f"/{group_version}/{info.plural}",
                           accept="application/json;as=Table;v=v1;g=meta.k8s.io")
        columns[f"{info.api_version}/{info.kind}"] = [
            {key: column[key] for key in ("name", "type", "format", "priority")}
            for column in table["columnDefinitions"]]
    return {"kinds": dict(sorted(kinds.items())), "columns": dict(sorted(columns.items())),
            "schemas": dict(sorted(schemas.items()))}


def _kind_schema(schemas: Obj, group: str, version: str, kind: str) -> str:
    for name, schema in schemas.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            if (gvk.get("group"), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return name
    raise RuntimeError(f"no schema for {group}/{version} {kind}")


def _refs(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"].removeprefix(REF)
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _reachable(schemas: Obj, root: str) -> list[str]:
    seen: list[str] = []
    todo = [root]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        todo.extend(ref for ref in _refs(schemas[name]) if ref not in seen)
    return seen


def _compact(node: Any) -> Any:
    """A schema node with only what the emulators read; ``allOf: [{$ref}]`` becomes ``ref``."""
    if not isinstance(node, dict):
        return node
    out: Obj = {key: node[key] for key in KEPT if key in node}
    if isinstance(node.get("$ref"), str):
        out["ref"] = node["$ref"].removeprefix(REF)
    refs = [item["$ref"] for item in node.get("allOf") or [] if isinstance(item, dict) and "$ref" in item]
    if refs:
        out["ref"] = refs[0].removeprefix(REF)
    if node.get("format") == "int-or-string" or "oneOf" in node:
        out["x-kubernetes-int-or-string"] = True
    if isinstance(node.get("properties"), dict):
        out["properties"] = {key: _compact(value) for key, value in node["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            out[key] = _compact(node[key])
    return out


def render(data: Obj) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


TYPES_TOOL = Path(__file__).resolve().parents[2] / "tools" / "builtin-types"


def encoding() -> str:
    """What ``tools/builtin-types`` prints: the Go types' encoding of empty fields (needs Go and the module cache
    the binaries were built with; no downloads)."""
    env = {**os.environ, "GOPROXY": "off", "GOFLAGS": "-mod=mod"}
    done = subprocess.run(["go", "run", "."], cwd=TYPES_TOOL, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"go run tools/builtin-types failed: {done.stderr[-2000:]}")
    return done.stdout


def main(argv: list[str]) -> int:
    with KubeServer("builtin-data", controllers=False) as started:
        data = collect(Server(started))
    DATA_FILE.write_text(render(data))
    print(f"wrote {DATA_FILE}: {len(data['kinds'])} kinds, {len(data['schemas'])} schemas")
    ENCODING_FILE.write_text(encoding())
    print(f"wrote {ENCODING_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
