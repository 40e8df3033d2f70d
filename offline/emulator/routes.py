"""Where a request path points: a discovery document, or a resource of the REST API.

Pure parsing, no cluster: ``/api/v1/[namespaces/NS/]PLURAL[/NAME[/SUB]]`` and
``/apis/G/V/[namespaces/NS/]PLURAL[/NAME[/SUB]]``. Whether the plural is served is for the
caller to decide against the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote


@dataclass(frozen=True)
class Target:
    """A resource path: a collection (name None), an object, or an object's subresource."""

    api_version: str
    namespace: str | None
    plural: str
    name: str | None = None
    subresource: str | None = None


@dataclass(frozen=True)
class Document:
    """A non-resource path: ``version``, ``api``, ``apis``, ``group``, ``resources``, ``openapi``,
    ``openapi-gv``, ``health`` or ``root``; arg is the group, group version or health check."""

    name: str
    arg: str = ""


Route = Target | Document | None


def split(path: str) -> list[str]:
    """The path's segments, percent-decoded, without empty ones."""
    return [unquote(part) for part in path.split("?", 1)[0].split("/") if part]


def parse_route(path: str) -> Route:
    """The route of a request path, or None when it points nowhere."""
    parts = split(path)
    if not parts:
        return Document("root")
    head, rest = parts[0], parts[1:]
    if head == "version" and not rest:
        return Document("version")
    if head in ("healthz", "livez", "readyz") and len(rest) <= 1:
        return Document("health", head)
    if head == "openapi":
        return _openapi(rest)
    if head == "api":
        if not rest:
            return Document("api")
        if rest[0] != "v1":
            return None
        return Document("resources", "v1") if len(rest) == 1 else _resource("v1", rest[1:])
    if head == "apis":
        if not rest:
            return Document("apis")
        if len(rest) == 1:
            return Document("group", rest[0])
        api_version = f"{rest[0]}/{rest[1]}"
        return Document("resources", api_version) if len(rest) == 2 else _resource(api_version, rest[2:])
    return None


def _openapi(rest: list[str]) -> Route:
    if rest == ["v3"]:
        return Document("openapi")
    if len(rest) == 3 and rest[:2] == ["v3", "api"] and rest[2] == "v1":
        return Document("openapi-gv", "v1")
    if len(rest) == 4 and rest[:2] == ["v3", "apis"]:
        return Document("openapi-gv", f"{rest[2]}/{rest[3]}")
    return None


def _resource(api_version: str, rest: list[str]) -> Target | None:
    namespace = None
    core_namespace_sub = api_version == "v1" and len(rest) == 3 and rest[2] in ("status", "finalize")
    if rest[0] == "namespaces" and len(rest) >= 3 and not core_namespace_sub:
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    return Target(api_version, namespace, rest[0], rest[1] if len(rest) > 1 else None,
                  rest[2] if len(rest) > 2 else None)
