"""Whether a target cluster's API server answers, learnt from the calls the operator makes anyway.

Every call through a registered cluster (the informers' lists and watches, a pass's reads and
writes) says something: an answer (an object, or any error the API server sent below 500) means
reachable; no answer (refused, reset, timed out) or a server failure (500 and above) means not
reachable, until the next answer. No probe is sent: informers retry a failing cluster on their own
backoff, so the state follows within one retry.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import Any

from engine.cluster.api import ApiError, Cluster, LabelSelector, Obj, ObjectList, PatchType, ResourceInfo, WatchEvent

Report = Callable[["Tracked", bool, str], None]
"""Called with the tracked cluster, whether it answered, and why not (an error message, never data)."""


def unreachable(error: ApiError) -> bool:
    """No answer, or the API server failing: the cluster cannot be worked with now."""
    return error.code >= 500


class Tracked:
    """A Cluster that reports, after each call, whether the API server answered."""

    def __init__(self, inner: Cluster, report: Report) -> None:
        self.inner = inner
        self.name = inner.name
        self._report = report

    def _call(self, call: Callable[[], Any]) -> Any:
        try:
            result = call()
        except ApiError as err:
            self._report(self, not unreachable(err), str(err))
            raise
        self._report(self, True, "")
        return result

    def _stream(self, events: Iterator[WatchEvent]) -> Iterator[WatchEvent]:
        try:
            yield from events
        except ApiError as err:
            self._report(self, not unreachable(err), str(err))
            raise
        finally:
            close = getattr(events, "close", None)
            if callable(close):
                close()

    # Reader

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, *, live: bool = False,
            carries: Collection[str] = ()) -> Obj:
        result: Obj = self._call(lambda: self.inner.get(api_version, kind, namespace, name, live=live,
                                                        carries=carries))
        return result

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, labels: LabelSelector = None,
             fields: str | None = None, live: bool = False,
             reads: Collection[tuple[str, ...]] | None = None) -> ObjectList:
        result: ObjectList = self._call(
            lambda: self.inner.list(api_version, kind, namespace, labels=labels, fields=fields, live=live,
                                    reads=reads))
        return result

    # Writer

    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        result: Obj = self._call(lambda: self.inner.create(obj, field_manager=field_manager))
        return result

    def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        result: Obj = self._call(lambda: self.inner.update(obj, field_manager=field_manager))
        return result

    def update_status(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        result: Obj = self._call(lambda: self.inner.update_status(obj, field_manager=field_manager))
        return result

    def patch(self, api_version: str, kind: str, namespace: str | None, name: str, patch: Any, *,
              patch_type: PatchType = "merge", status: bool = False, field_manager: str | None = None) -> Obj:
        result: Obj = self._call(lambda: self.inner.patch(api_version, kind, namespace, name, patch,
                                                          patch_type=patch_type, status=status,
                                                          field_manager=field_manager))
        return result

    def apply(self, obj: Obj, *, field_manager: str, force: bool = False, status: bool = False) -> Obj:
        result: Obj = self._call(lambda: self.inner.apply(obj, field_manager=field_manager, force=force,
                                                          status=status))
        return result

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj | None:
        result: Obj | None = self._call(lambda: self.inner.delete(api_version, kind, namespace, name))
        return result

    # Watcher

    def watch(self, api_version: str, kind: str, namespace: str | None = None, *,
              resource_version: str | None = None, labels: LabelSelector = None, timeout: float | None = None,
              bookmarks: bool = False) -> Iterator[WatchEvent]:
        events: Iterator[WatchEvent] = self._call(lambda: self.inner.watch(
            api_version, kind, namespace, resource_version=resource_version, labels=labels, timeout=timeout,
            bookmarks=bookmarks))
        return self._stream(events)

    # Discovery: answered from what the client knows; a failure there is reported like any call.

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        result: ResourceInfo = self._call(lambda: self.inner.resource_info(api_version, kind))
        return result

    def serves(self, api_version: str, kind: str) -> bool:
        return self.inner.serves(api_version, kind)

    def __getattr__(self, name: str) -> Any:
        """Anything else the client offers (``stop``, cache hooks) is the client's own."""
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def _conforms(cluster: Tracked) -> Cluster:
    """Never called: mypy proves here that Tracked satisfies the Cluster protocol."""
    return cluster
