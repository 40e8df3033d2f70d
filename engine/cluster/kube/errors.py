"""The kubernetes client's exceptions, translated into ours at the boundary.

The API server already says what went wrong in a Status document (code, reason, message,
causes), so an HTTP error is rebuilt from that body; failures that never reached an answer
(refused connections, resets, timeouts) become ServerError or Timeout. No kubernetes or
urllib3 exception type leaves this package.
"""

from __future__ import annotations

import json
import socket
from typing import Any, Literal

import urllib3.exceptions
from kubernetes.client.exceptions import ApiException, OpenApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError, ResourceNotUniqueError

from engine.cluster.api import ApiError, BadRequest, Cause, NotFound, ServerError, Timeout, error_from_status
from engine.cluster.kube.http1 import ConnectFailed

NO_RESOURCE = "the server could not find the requested resource"
"""The API server's message for a kind it does not serve."""


def no_resource() -> NotFound:
    return NotFound(NO_RESOURCE)


def from_status(doc: Any, *, code: int = 500, reason: str = "") -> ApiError:
    """Our error for a metav1 Status document (an error body or a watch ERROR event)."""
    if not isinstance(doc, dict):
        return error_from_status(code, reason, reason or f"the server answered {code}")
    raw_causes = (doc.get("details") or {}).get("causes") or []
    causes = [
        Cause(str(c.get("field", "")), str(c.get("message", "")), str(c.get("reason") or "FieldValueInvalid"))
        for c in raw_causes if isinstance(c, dict)
    ]
    status_code = doc.get("code")
    err = error_from_status(
        status_code if isinstance(status_code, int) and status_code else code,
        str(doc.get("reason") or reason),
        str(doc.get("message") or reason or f"the server answered {code}"),
        causes,
    )
    details = dict(doc.get("details") or {})
    details.pop("causes", None)
    err.details = details
    return err


def from_api_exception(exc: ApiException) -> ApiError:
    """Our error for an HTTP error answer, rebuilt from its Status body when it has one."""
    status = int(exc.status or 0)
    reason = str(exc.reason or "")
    if status == 0:  # the client could not even make the request (TLS, a body it cannot encode)
        return ServerError(f"request failed: {reason}")
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        doc = json.loads(body) if body else None
    except ValueError:
        doc = None
    if isinstance(doc, dict) and doc.get("kind") == "Status":
        return from_status(doc, code=status, reason=reason)
    text = f"{status} {reason}".strip()
    if body:
        text += f": {describe_unparsed(str(body))}"
    return error_from_status(status, reason, text)


def describe_unparsed(body: str) -> str:
    """What came back, without its content: an answer that is not a Status may be anything (a proxy's
    page, a cut-off object holding Secret data), and error texts reach logs and conditions."""
    kind = "an HTML page" if body.lstrip()[:1] == "<" else "an answer that is not a Status"
    return f"{kind} of {len(body.encode('utf-8', 'replace'))} bytes (content not shown)"


def from_transport(exc: BaseException) -> ApiError:
    """Our error for a request that got no answer: Timeout when it ran out of time, else ServerError."""
    reason = exc.reason if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason else exc
    if isinstance(reason, ConnectFailed):
        if reason.timed_out:
            return Timeout(f"the API server did not answer in time: {reason}")
        return ServerError(f"cannot reach the API server: {reason}")
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        return ServerError(f"cannot reach the API server: {reason}")
    if isinstance(reason, (urllib3.exceptions.TimeoutError, socket.timeout, TimeoutError)):
        return Timeout(f"the API server did not answer in time: {reason}")
    return ServerError(f"the connection to the API server failed: {reason}")


class _Translated:
    """Runs a client call, raising only our errors (a class, not a generator: it wraps every request twice)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, traceback: Any) -> Literal[False]:
        if exc is None or isinstance(exc, ApiError) or not isinstance(exc, Exception):
            return False
        raise_ours(exc)
        return False


_TRANSLATED = _Translated()


def translated() -> _Translated:
    """Run a client call, raising only our errors."""
    return _TRANSLATED


def raise_ours(exc: Exception) -> None:
    """Raise our error for a client call's exception (from an ``except Exception`` block; ``translated`` without the
    context manager's two calls on the way in and out, for the request path); return when it is ours already or
    none translates it (the caller re-raises it)."""
    if isinstance(exc, ApiError):
        return
    if isinstance(exc, ResourceNotFoundError):
        raise no_resource() from None
    if isinstance(exc, ResourceNotUniqueError):
        raise BadRequest(f"the kind is ambiguous: {exc}") from None
    if isinstance(exc, ApiException):
        raise from_api_exception(exc) from None
    if isinstance(exc, OpenApiException):
        raise ServerError(f"request failed: {exc}") from None
    if isinstance(exc, (urllib3.exceptions.HTTPError, OSError)):
        raise from_transport(exc) from exc
    if isinstance(exc, ValueError) and "header" in str(exc).lower():
        # http.client's text quotes the header, an Authorization header included: never repeat it.
        raise ServerError("a request header holds a line break or control character (a token with a "
                          "trailing newline?); the request was not sent") from None
    return
