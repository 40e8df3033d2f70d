"""A Cluster wrapper that records every call and fails chosen ones on purpose.

Scenarios count the operator's calls (``calls``) and make the API misbehave (``fail``)
without touching the store behind it: an injected failure is raised before the call
reaches the wrapped cluster, so the world is unchanged, as with a dropped request.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from engine.cluster.api import (
    ERRORS_BY_NAME,
    VERBS,
    ApiError,
    Call,
    Cluster,
    LabelSelector,
    Obj,
    ObjectList,
    PatchType,
    ResourceInfo,
    ServerError,
    Verb,
    WatchEvent,
)


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


class FaultyCluster:
    """Wraps any Cluster: records each call in ``calls`` and raises injected errors first."""

    def __init__(self, inner: Cluster, *, cluster_name: str) -> None:
        self.inner = inner
        self.name = cluster_name
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

    def _enter_obj(self, verb: Verb, obj: Obj, **extra: Any) -> Call:
        meta = obj.get("metadata") or {}
        return self._enter(verb, str(obj.get("apiVersion", "")), str(obj.get("kind", "")),
                           meta.get("namespace"), meta.get("name"), **extra)

    # Reader

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, *, live: bool = False,
            carries: Collection[str] = ()) -> Obj:
        call = self._enter("get", api_version, kind, namespace, name, live=live or None)
        with _failed_on_error(call):
            return self.inner.get(api_version, kind, namespace, name, live=live, carries=carries)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        labels: LabelSelector = None,
        fields: str | None = None,
        live: bool = False,
    ) -> ObjectList:
        call = self._enter("list", api_version, kind, namespace, None, live=live or None)
        with _failed_on_error(call):
            return self.inner.list(api_version, kind, namespace, labels=labels, fields=fields, live=live)

    # Writer

    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        call = self._enter_obj("create", obj)
        with _failed_on_error(call):
            return self.inner.create(obj, field_manager=field_manager)

    def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        call = self._enter_obj("update", obj)
        with _failed_on_error(call):
            return self.inner.update(obj, field_manager=field_manager)

    def update_status(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        call = self._enter_obj("update", obj, subresource="status")
        with _failed_on_error(call):
            return self.inner.update_status(obj, field_manager=field_manager)

    def patch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        status: bool = False,
        field_manager: str | None = None,
    ) -> Obj:
        call = self._enter("patch", api_version, kind, namespace, name, subresource="status" if status else None,
                           patch_type=patch_type)
        with _failed_on_error(call):
            return self.inner.patch(api_version, kind, namespace, name, patch, patch_type=patch_type, status=status,
                                    field_manager=field_manager)

    def apply(self, obj: Obj, *, field_manager: str, force: bool = False, status: bool = False) -> Obj:
        call = self._enter_obj("apply", obj, subresource="status" if status else None, field_manager=field_manager,
                               force=force)
        with _failed_on_error(call):
            return self.inner.apply(obj, field_manager=field_manager, force=force, status=status)

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj | None:
        call = self._enter("delete", api_version, kind, namespace, name)
        with _failed_on_error(call):
            return self.inner.delete(api_version, kind, namespace, name)

    # Watcher

    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        labels: LabelSelector = None,
        timeout: float | None = None,
        bookmarks: bool = False,
    ) -> Iterator[WatchEvent]:
        call = self._enter("watch", api_version, kind, namespace, None, resource_version=resource_version)
        with _failed_on_error(call):
            return self.inner.watch(api_version, kind, namespace, resource_version=resource_version, labels=labels,
                                    timeout=timeout, bookmarks=bookmarks)

    # Discovery: not API calls a scenario counts, passed straight through.

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        return self.inner.resource_info(api_version, kind)

    def serves(self, api_version: str, kind: str) -> bool:
        return self.inner.serves(api_version, kind)


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


def _conforms(cluster: FaultyCluster) -> Cluster:
    """Never called: mypy proves here that FaultyCluster satisfies the Cluster protocol."""
    return cluster
