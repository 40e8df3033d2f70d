"""One cluster's wire: kinds resolved by apiVersion and kind, JSON in and out, watch streams.

The DynamicClient resolves kinds (discovery) and opens watches. The engine's own verbs (get, list, create,
replace, patch, apply, delete) skip it and the ApiClient's per-request model serialization: the URL comes from the
resolved kind, the body goes as JSON through the ApiClient's REST client, and the answer is parsed once (``codec``:
orjson), for about half the client CPU (decision 0008). The bearer token is taken from the configuration at most
once per ``CREDENTIALS_TTL``, not on every request.

The DynamicClient's discoverer is not thread-safe and re-discovers everything on a miss, so resolved kinds are
memoized here under a lock; an entry is dropped when the server says the kind is not served (a 404 that names no
object), so a deleted or changed CRD is looked up afresh.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, urlencode

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.resource import Resource

from engine.cluster.api import ApiError, NotFound, Obj, WatchEvent
from engine.cluster.kube import codec
from engine.cluster.kube.errors import from_status, no_resource, raise_ours, translated
from engine.cluster.kube.store import interned, slim_metadata
from engine.cluster.projection import project

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a connection to the API server."""

REQUEST_TIMEOUT = 60.0
"""Seconds a plain (non-watch) request may wait for its answer."""

CREDENTIALS_TTL = 1.0
"""Seconds a bearer token read from the configuration is reused before its refresh hook runs again."""

Verb = Literal["get", "create", "replace", "patch", "server_side_apply", "delete"]

_METHODS: dict[str, str] = {"get": "GET", "create": "POST", "replace": "PUT", "patch": "PATCH",
                            "server_side_apply": "PATCH", "delete": "DELETE"}
_QUERY: dict[str, str] = {"label_selector": "labelSelector", "field_selector": "fieldSelector",
                          "field_manager": "fieldManager", "force_conflicts": "force",
                          "resource_version": "resourceVersion", "limit": "limit", "_continue": "continue",
                          "watch": "watch", "timeout_seconds": "timeoutSeconds",
                          "allow_watch_bookmarks": "allowWatchBookmarks"}


class _DynamicClient(DynamicClient):
    """The DynamicClient with a timeout on the requests it makes on its own (discovery), which it
    would otherwise wait on forever when a server accepts connections and never answers."""

    def __init__(self, client: ApiClient, cache_file: str, timeouts: tuple[float, float]) -> None:
        self._timeouts = timeouts
        super().__init__(client, cache_file=cache_file)  # type: ignore[no-untyped-call]

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        params.setdefault("_request_timeout", self._timeouts)
        return super().request(method, path, body=body, **params)


class Wire:
    """The DynamicClient of one cluster, created on first use (its constructor talks to the server)."""

    def __init__(self, api_client: ApiClient, cache_file: Path, *, request_timeout: float = REQUEST_TIMEOUT) -> None:
        self.api_client = api_client
        self._timeouts = (min(CONNECT_TIMEOUT, request_timeout), request_timeout)
        self._cache_file = cache_file
        self._lock = threading.RLock()
        self._dynamic: Any = None
        """The DynamicClient (untyped), once created."""
        self._resources: dict[tuple[str, str], Resource] = {}
        self._paths: dict[tuple[Resource, str | None, bool, bool], tuple[str, ...]] = {}
        """(resource, subresource, namespaced path, named path) -> the path's pieces around the namespace and name."""
        self._credentials: tuple[float, dict[str, str]] | None = None
        """(when read, the auth headers) of the last read of the configuration's credentials."""

    # -- kinds ---------------------------------------------------------------

    def _client(self) -> Any:
        with self._lock:
            if self._dynamic is None:
                with translated():
                    self._dynamic = _DynamicClient(self.api_client, str(self._cache_file), self._timeouts)
            return self._dynamic

    def resource(self, api_version: str, kind: str) -> Resource:
        """The served resource of a kind (memoized); NotFound when the server does not serve it."""
        key = (api_version, kind)
        found = self._resources.get(key)  # a memo hit needs no lock (one dict read); every request asks
        if found is not None:
            return found
        with self._lock:
            found = self._resources.get(key)
            if found is None:
                client = self._client()
                with translated():
                    found = client.resources.get(api_version=api_version, kind=kind)
                self._resources[key] = found
            return found

    def forget(self, api_version: str | None = None, kind: str | None = None, *, rediscover: bool = False) -> None:
        """Drop memoized kinds (all, or one); rediscover=True also empties the discoverer's own cache."""
        with self._lock:
            if api_version is None or kind is None:
                self._resources.clear()
            else:
                self._resources.pop((api_version, kind), None)
            self._paths.clear()
            if rediscover and self._dynamic is not None:
                with translated():
                    self._dynamic.resources.invalidate_cache()

    def group_version(self, api_version: str) -> list[Obj] | None:
        """The APIResourceList entries of a group version, fetched now; None when it is not served."""
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            doc = self.request("get", path)
        except NotFound:
            return None
        entries = doc.get("resources") if isinstance(doc, dict) else None
        return [e for e in entries or [] if isinstance(e, dict)]

    # -- requests ------------------------------------------------------------

    def request(self, method: str, path: str, *, body: Any = None, **params: Any) -> Any:
        """A request on a path (discovery documents); the parsed JSON answer. Our errors only."""
        client = self._client()
        with translated():
            response = client.request(method, path, body=body, serialize=False,
                                      _request_timeout=self._timeouts, **params)
        return _json(response)

    def call(self, verb: Verb, api_version: str, kind: str, *, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None, body: Any = None, content_type: str | None = None,
             **params: Any) -> Any:
        """One verb (get, create, replace, patch, server_side_apply, delete) on a kind or its subresource,
        with the DynamicClient's verbs' query parameters (label_selector, field_manager, force_conflicts,
        ...); the parsed JSON answer. A 404 that names no object means the kind left the server."""
        resource = self.resource(api_version, kind)
        namespaced = resource.namespaced
        if namespaced and not namespace and isinstance(body, dict):
            namespace = (body.get("metadata") or {}).get("namespace")
        scoped = bool(namespace) and namespaced
        shape = (resource, subresource, scoped, bool(name))
        pieces = self._paths.get(shape) or self._path_pieces(shape)
        # The library's path with the name and namespace quoted as path segments (_segment, inlined: every request).
        if pieces is None:
            target: Any = resource.subresources[subresource] if subresource is not None else resource
            path = target.path(name=_segment(name) if name else None,
                               namespace=_segment(namespace) if scoped and namespace else None)
        elif scoped and namespace:
            where = namespace if _PLAIN(namespace) else quote(namespace, safe="")
            if name:
                path = f"{pieces[0]}{where}{pieces[1]}{name if _PLAIN(name) else quote(name, safe='')}{pieces[2]}"
            else:
                path = f"{pieces[0]}{where}{pieces[1]}"
        elif name:
            path = f"{pieces[0]}{name if _PLAIN(name) else quote(name, safe='')}{pieces[1]}"
        else:
            path = pieces[0]
        if verb == "server_side_apply":
            content_type = "application/apply-patch+yaml"
        elif verb == "patch" and content_type is None:
            content_type = "application/strategic-merge-patch+json"
        try:
            return self._send(_METHODS[verb], path, body=body, content_type=content_type, params=params)
        except NotFound as err:
            if not err.details.get("name"):
                self.forget(api_version, kind, rediscover=True)
            raise

    def _path_pieces(self, shape: tuple[Resource, str | None, bool, bool]) -> tuple[str, ...] | None:
        """The library's path of a resource (or its subresource) for a namespace and a name or none, cut where
        they go: the DynamicClient's ``path`` formats its URL table anew on each call, about 15 Python calls a
        request; this memo (dropped with the kinds, ``forget``) costs one lookup."""
        resource, subresource, scoped, named = shape
        target: Any = resource  # Resource or Subresource (untyped)
        if subresource is not None:
            if subresource not in resource.subresources:
                raise no_resource()
            target = resource.subresources[subresource]
        path = str(target.path(name=_HOLE if named else None, namespace=_HOLE if scoped else None))
        pieces = tuple(path.split(_HOLE))
        if len(pieces) != 1 + scoped + named:
            return None  # a subresource discovery calls cluster-scoped under a namespaced kind: the library decides
        with self._lock:
            if len(self._paths) >= _PATHS_KEPT:
                self._paths.clear()
            self._paths[shape] = pieces
        return pieces

    def _send(self, method: str, path: str, *, body: Any, content_type: str | None, params: dict[str, Any],
              timeout: tuple[float, float | None] | None = None, stream: bool = False) -> Any:
        """Send one request through the ApiClient's REST client; the parsed JSON answer (or, with
        stream=True, the open answer). Error answers raise our errors, their bodies never quoted."""
        query = _query(tuple(params.items())) if params else ""
        url = self.api_client.configuration.host + path + query
        headers = {**self.api_client.default_headers, "Accept": "application/json",
                   "Content-Type": content_type or "application/json", **self._auth_headers()}
        rest: Any = self.api_client.rest_client  # untyped; request observers wrap its request
        try:  # translated(), inline: every request passes here
            answer = rest.request(method, url, headers=headers, body=body, _request_timeout=timeout or self._timeouts)
            if not 200 <= answer.status <= 299:
                answer.read()
                raise ApiException.from_response(http_resp=answer, body=None, data=None)
        except Exception as exc:
            raise_ours(exc)
            raise
        if stream:
            return answer.response
        return _json(answer.response)

    def _auth_headers(self) -> dict[str, str]:
        """The configuration's auth headers, read afresh once CREDENTIALS_TTL has passed."""
        now = time.monotonic()
        cached = self._credentials  # one read of a tuple: fresh credentials need no lock (every request asks)
        if cached is not None and now - cached[0] < CREDENTIALS_TTL:
            return cached[1]
        with self._lock:
            cached = self._credentials
            if cached is not None and now - cached[0] < CREDENTIALS_TTL:
                return cached[1]
            headers: dict[str, str] = {}
            for setting in self.api_client.configuration.auth_settings().values():
                if setting.get("in") == "header" and setting.get("value"):
                    headers[str(setting["key"])] = str(setting["value"])
            self._credentials = (now, headers)
            return headers

    # -- watch ---------------------------------------------------------------

    def watch(self, api_version: str, kind: str, namespace: str | None, *, timeout: float | None,
              bookmarks: bool = False, strip_managed_fields: bool = False,
              shape: Mapping[str, Any] | None = None, **params: Any) -> WatchStream:
        """Open a watch of a kind now (request errors raise here); its events come from the stream.

        The server counts its timeout in whole seconds (and reads 0 as "its default"). Without
        bookmarks a fractional timeout, 0 included, is kept on this side by the socket's read
        timeout. With bookmarks the server must end the stream itself, since only it knows the
        resourceVersion the final BOOKMARK carries: the watch lasts at least a second."""
        deadline = None if timeout is None else time.monotonic() + timeout
        server_timeout: int | None = None
        read_timeout: float | None = None
        if timeout is not None and bookmarks:
            server_timeout = max(1, math.ceil(timeout))
            read_timeout = server_timeout + BOOKMARK_GRACE
        elif timeout is not None:
            server_timeout = max(1, math.ceil(timeout))
            read_timeout = timeout + STREAM_GRACE
        query: dict[str, Any] = {"watch": True, "timeout_seconds": server_timeout, **params}
        if bookmarks:
            query["allow_watch_bookmarks"] = True
        resource = self.resource(api_version, kind)
        scope = quote(namespace, safe="") if namespace and resource.namespaced else None
        path = resource.path(namespace=scope)  # type: ignore[no-untyped-call]
        try:
            response = self._send("GET", path, body=None, content_type=None, params=query,
                                  timeout=(self._timeouts[0], read_timeout), stream=True)
        except ApiError as err:
            if deadline is not None and time.monotonic() >= deadline and err.code == 504:
                return WatchStream(None)  # out of time before the answer began: an empty stream
            if isinstance(err, NotFound) and not err.details.get("name"):
                self.forget(api_version, kind, rediscover=True)
            raise
        return WatchStream(response, strip_managed_fields=strip_managed_fields, shape=shape)


def _query_value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@functools.lru_cache(maxsize=512)
def _query(params: tuple[tuple[str, Any], ...]) -> str:
    """The query string of a request's parameters ("" for none set); the few a pass sends (field manager,
    force) are encoded once."""
    query = [(_QUERY[key], _query_value(value)) for key, value in params if value is not None]
    return f"?{urlencode(query)}" if query else ""


_HOLE = "\0"
"""Where a path's namespace and name go, in ``Wire._path_pieces`` (no group, version or resource name holds a NUL)."""

_PATHS_KEPT = 1024
"""Path shapes remembered (four per kind and subresource at most): a bound, never reached in practice."""

_PLAIN = re.compile(r"[A-Za-z0-9._~-]+").fullmatch
"""Characters ``quote(..., safe="")`` leaves as they are (every Kubernetes object name and namespace)."""


def _segment(text: str) -> str:
    """A name or namespace as a path segment, quoted as ``quote(text, safe="")`` quotes it."""
    return text if _PLAIN(text) else quote(text, safe="")


def _json(response: urllib3.BaseHTTPResponse) -> Any:
    try:  # translated(), inline: every request passes here
        try:
            data = response.data
        finally:
            response.release_conn()
    except Exception as exc:
        raise_ours(exc)
        raise
    return codec.loads(data) if data else None


STREAM_GRACE = 0.25
"""Seconds of silence past its timeout after which a watch without bookmarks ends on this side."""

BOOKMARK_GRACE = 5.0
"""Seconds of silence past the server's timeout after which a watch with bookmarks gives up on it."""


_UNKEPT = frozenset({"DELETED", "BOOKMARK"})
"""Events whose object no cache keeps (a deleted object leaves it, a bookmark is a position): interning their
strings would share nothing."""


class WatchStream(Iterator[WatchEvent]):
    """The events of one watch response, as dicts ``{"type", "object"}``; closable from another thread.

    The stream ends when the server ends it, when the read times out (the watch's own timeout)
    or when the connection drops: the watcher resumes from the last resourceVersion. An ERROR
    event raises our error (Gone for an expired resourceVersion)."""

    def __init__(self, response: urllib3.BaseHTTPResponse | None, *, strip_managed_fields: bool = False,
                 shape: Mapping[str, Any] | None = None) -> None:
        """shape: a projected cache's (``engine.cluster.projection.tree``): each object is cut down to it before
        anything else walks it, so what the cache drops is never interned nor slimmed."""
        self._response = response
        self._strip = strip_managed_fields
        self._shape = shape
        self._lines = self._read_lines() if response is not None else iter(())
        self._closed = response is None

    def __next__(self) -> WatchEvent:
        while True:
            line = next(self._lines)  # StopIteration ends the stream
            if not line.strip():
                continue
            try:
                event = codec.loads(line)
            except ValueError:
                self.close()
                raise ApiError("the watch stream sent a line that is not JSON "
                               f"({len(line.decode('utf-8', 'replace'))} characters, content not shown)") from None
            if not isinstance(event, dict):
                continue
            if event.get("type") == "ERROR":
                self.close()
                raise from_status(event.get("object"))
            obj: Obj = event["object"] if isinstance(event.get("object"), dict) else {}
            kind = str(event.get("type", ""))
            if self._shape is not None:  # an object for a projected cache: only what it keeps is walked
                obj = project(obj, self._shape)
                if isinstance(obj.get("metadata"), dict) and "managedFields" in obj["metadata"]:
                    obj["metadata"] = slim_metadata(obj["metadata"])  # a projection keeping metadata whole
                if kind not in _UNKEPT:
                    obj = interned(obj)
            elif self._strip and isinstance(obj.get("metadata"), dict):  # an object for a cache
                obj["metadata"] = slim_metadata(obj["metadata"])
                if kind not in _UNKEPT:
                    obj = interned(obj)
            return {"type": kind, "object": obj}

    def _read_lines(self) -> Iterator[bytes]:
        """The stream's lines, undecoded (``codec.loads`` reads the bytes)."""
        response = self._response
        assert response is not None
        buffer = b""
        try:
            for chunk in _chunks(response):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                yield from lines
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError):
            pass  # a read timeout, a reset or a close from another thread: the stream is over
        finally:
            self.close()
        if buffer.strip():
            yield buffer

    def close(self) -> None:
        """End the stream; safe to call from another thread while a read blocks, and more than once."""
        if self._closed:
            return
        self._closed = True
        response = self._response
        if response is None:
            return
        with contextlib.suppress(Exception):  # already released, or never had a socket
            response.shutdown()  # wakes a read blocked in another thread
        with contextlib.suppress(Exception):  # closing twice from two threads
            response.close()
            response.release_conn()

    def __del__(self) -> None:
        self.close()


def _chunks(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """The body as it arrives: chunk by chunk when chunked, else whatever each read returns."""
    if getattr(response, "chunked", False):
        yield from response.stream(amt=None, decode_content=False)
        return
    while True:
        data = response.read1(65536)
        if not data:
            return
        yield data


class ResumingStream(Iterator[WatchEvent]):
    """A watch without a timeout: when the server ends one stream, the next resumes from the last
    resourceVersion seen (bookmarks included), until closed. Errors of a reopen (Gone) raise."""

    QUIET_RESTART = 1.0
    """Seconds to wait before reopening a stream that ended at once with nothing in it."""

    def __init__(self, reopen: Callable[[str | None], WatchStream], resource_version: str | None) -> None:
        self._reopen = reopen
        self._rv = resource_version
        self._closed = threading.Event()
        self._stream = reopen(resource_version)
        self._opened = time.monotonic()
        self._delivered = False

    def __next__(self) -> WatchEvent:
        while not self._closed.is_set():
            try:
                event = next(self._stream)
            except StopIteration:
                if not self._delivered and time.monotonic() - self._opened < self.QUIET_RESTART:
                    self._closed.wait(self.QUIET_RESTART)
                if self._closed.is_set():
                    break
                self._stream = self._reopen(self._rv)
                self._opened, self._delivered = time.monotonic(), False
                continue
            self._delivered = True
            rv = (event["object"].get("metadata") or {}).get("resourceVersion")
            if rv:
                self._rv = str(rv)
            return event
        raise StopIteration

    def close(self) -> None:
        self._closed.set()
        self._stream.close()
