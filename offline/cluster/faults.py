"""A Cluster wrapper that records every call and fails chosen ones on purpose.

Scenarios count the operator's calls (``calls``) and make the API misbehave (``fail``)
without touching the store behind it: an injected failure is raised before the call
reaches the wrapped cluster, so the world is unchanged, as with a dropped request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from engine.cluster.api import (
    ERRORS_BY_NAME,
    VERBS,
    ApiError,
    Call,
    Cluster,
    ServerError,
    Verb,
)
from engine.cluster.wrapper import ClusterWrapper

T = TypeVar("T")


@dataclass
class Fault:
    """Fail the next ``times`` calls that match every given field (None matches anything)."""

    error: str
    times: int = 1
    verb: str | None = None
    api_version: str | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None

    def matches(self, call: Call) -> bool:
        return all(
            want is None or want == got
            for want, got in (
                (self.verb, call.verb), (self.api_version, call.api_version), (self.kind, call.kind),
                (self.namespace, call.namespace), (self.name, call.name),
            )
        )


class FaultyCluster(ClusterWrapper):
    """Wraps any Cluster: records each call in ``calls`` and raises injected errors first."""

    def __init__(self, inner: Cluster, *, cluster_name: str) -> None:
        super().__init__(inner, cluster_name=cluster_name)
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.unreachable = False
        """While set, every call fails as a connection the API server never answered."""

    def inject(
        self,
        verb: str | None = None,
        api_version: str | None = None,
        kind: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        error: str = "ServerError",
        times: int = 1,
    ) -> Fault:
        """Make the next ``times`` matching calls fail with ``error`` (a name from ERRORS_BY_NAME)."""
        if error not in ERRORS_BY_NAME:
            raise ValueError(f"unknown error {error!r}; expected one of {', '.join(sorted(ERRORS_BY_NAME))}")
        if verb is not None and verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}; expected one of {', '.join(VERBS)}")
        if times < 1:
            raise ValueError("times must be at least 1")
        fault = Fault(error, times, verb, api_version, kind, namespace, name)
        self.faults.append(fault)
        return fault

    def _enter(self, verb: Verb, api_version: str, kind: str, namespace: str | None, name: str | None,
               **extra: Any) -> Call:
        """Record the call and raise the first injected fault it matches."""
        call = Call(self.name, verb, api_version, kind, namespace or None, name or None,
                    extra={k: v for k, v in extra.items() if v is not None})
        self.calls.append(call)
        if self.unreachable:
            call.failed = True
            raise ServerError(f"cannot reach the API server of cluster {self.name!r} (made unreachable)")
        for fault in self.faults:
            if fault.matches(call):
                fault.times -= 1
                if fault.times == 0:
                    self.faults.remove(fault)
                call.failed = True
                raise _error(fault.error, call)
        return call

    def _call(self, verb: Verb, api_version: str, kind: str, namespace: str | None, name: str | None,
              send: Callable[[], T], **extra: Any) -> T:
        call = self._enter(verb, api_version, kind, namespace, name, **extra)
        with _failed_on_error(call):
            return send()


def _error(name: str, call: Call) -> ApiError:
    where = f"{call.namespace}/" if call.namespace else ""
    target = f"{call.kind}.{call.api_version} {where}{call.name}" if call.name else f"{call.kind}.{call.api_version}"
    return ERRORS_BY_NAME[name](f"injected {name} on {call.verb} {target}")


class _failed_on_error:
    """Marks the recorded call failed when the wrapped cluster raises an API error."""

    def __init__(self, call: Call) -> None:
        self.call = call

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        if isinstance(error, ApiError):
            self.call.failed = True
