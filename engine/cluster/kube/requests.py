"""Every HTTP request a cluster client makes, reported to an observer: verb, status code, seconds.

The hook sits on the ApiClient's REST client, below the DynamicClient, so discovery, watches
and the engine's own calls are all counted, as client-go counts them. The verb is the API
server's (``GET``, ``LIST``, ``WATCH``, ``POST``, ``PUT``, ``PATCH``, ``DELETE``); the code is
the HTTP status, or ``<error>`` when no answer came (connection refused, timeout).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

RequestObserver = Callable[[str, str, float], None]
"""Called once per request with (verb, code, seconds until the answer's headers)."""

NO_ANSWER = "<error>"


def api_verb(method: str, url: str) -> str:
    """The API server's verb for an HTTP request: GETs split into GET, LIST and WATCH by the path."""
    method = method.upper()
    if method != "GET":
        return method
    parts = urlsplit(url)
    if "watch" in parts.query and parse_qs(parts.query).get("watch", [""])[0].lower() in ("true", "1"):
        return "WATCH"
    segments = [s for s in parts.path.split("/") if s]
    if segments[:1] == ["api"]:
        rest = segments[2:]
    elif segments[:1] == ["apis"]:
        rest = segments[3:]
    else:
        return "GET"  # /version, /openapi, discovery roots
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return "LIST" if len(rest) == 1 else "GET"


def observe_requests(api_client: ApiClient, observer: RequestObserver) -> None:
    """Report every request of this ApiClient to ``observer`` (which must not raise)."""
    rest: Any = api_client.rest_client
    inner = rest.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        code = NO_ANSWER
        try:
            response = inner(method, url, *args, **kwargs)
            code = str(getattr(response, "status", NO_ANSWER))
            return response
        except ApiException as exc:  # a Retry-After answer given up on, or no answer (status 0)
            code = str(exc.status) if exc.status else NO_ANSWER
            raise
        finally:
            observer(api_verb(method, url), code, time.perf_counter() - started)

    rest.request = request
