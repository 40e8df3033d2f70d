"""A KubeCluster's writes: create, update, status, patch, apply and delete, each answer noted so a cached read after
it waits until the watch delivered it (``store``), and a CRD write makes discovery ask again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from engine.cluster.api import (
    BadRequest,
    Obj,
    PatchType,
)
from engine.cluster.kube.cluster_base import CRD
from engine.cluster.kube.cluster_reads import KubeReads
from engine.cluster.kube.store import Expectation, key_of, version_number


class KubeWrites(KubeReads):
    """A KubeCluster's writes: each answer remembered, so the reads after it wait for the watch to deliver it."""

    # -----------------------------------------------------------------------
    # Writes.

    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        api_version, kind, namespace, name = self._identify(obj, need_name=False)
        return self._write(api_version, kind, namespace, name, lambda: self._call(
            "create", api_version, kind, namespace=namespace, body=obj, **_manager(field_manager)))

    def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        api_version, kind, namespace, name = self._identify(obj)
        body = _without_managed_fields(obj)
        return self._write(api_version, kind, namespace, name, lambda: self._call(
            "replace", api_version, kind, namespace=namespace, name=name, body=body, **_manager(field_manager)))

    def update_status(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        api_version, kind, namespace, name = self._identify(obj)
        body = _without_managed_fields(obj)
        return self._write(api_version, kind, namespace, name, lambda: self._call(
            "replace", api_version, kind, namespace=namespace, name=name, body=body, subresource="status",
            **_manager(field_manager)))

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
        namespace = self._namespace(api_version, kind, namespace)
        if patch_type == "merge":
            if not isinstance(patch, dict):
                raise BadRequest("a merge patch must be a JSON object")
            content_type = "application/merge-patch+json"
        elif patch_type == "json":
            if not isinstance(patch, list):
                raise BadRequest("a JSON patch must be a list of operations")
            content_type = "application/json-patch+json"
            if not patch:  # nothing to do; the client would send an empty list as an empty object
                return self._live_get(api_version, kind, namespace, name)
        else:
            raise BadRequest(f"unsupported patch type {patch_type!r}")
        return self._write(api_version, kind, namespace, name, lambda: self._call(
            "patch", api_version, kind, namespace=namespace, name=name, body=patch,
            subresource="status" if status else None, content_type=content_type, **_manager(field_manager)))

    def apply(self, obj: Obj, *, field_manager: str, force: bool = False, status: bool = False) -> Obj:
        api_version, kind, namespace, name = self._identify(obj)
        return self._write(api_version, kind, namespace, name, lambda: self._call(
            "server_side_apply", api_version, kind, namespace=namespace, name=name, body=obj,
            subresource="status" if status else None, field_manager=field_manager,
            force_conflicts=True if force else None))

    def _write(self, api_version: str, kind: str, namespace: str | None, name: str, send: Callable[[], Any]) -> Obj:
        """Send a write and take its answer (``_written``), telling the write observer of both."""
        observer = self._write_observer
        ticket = observer.sending(api_version, kind, namespace, name) if observer is not None and name else None
        try:
            obj = self._written(api_version, kind, send())
        except BaseException:
            if observer is not None and ticket is not None:
                observer.answered(ticket, None)
            raise
        if observer is not None and ticket is not None:
            observer.answered(ticket, obj)
        return obj

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj | None:
        """Delete now; an object finalizers hold is returned as it now is (with its deletionTimestamp).

        The write observer is told of the delete like any write, with that object as the answer: the watch
        event carrying it (the deletionTimestamp set) only echoes the delete. A delete that removed the object
        at once answers nothing to compare with (its DELETED event wakes the order as any delete's did)."""
        namespace = self._namespace(api_version, kind, namespace)
        observer = self._write_observer
        ticket = observer.sending(api_version, kind, namespace, name) if observer is not None else None
        held: Obj | None = None
        try:
            answer = self._call("delete", api_version, kind, namespace=namespace, name=name)
            if isinstance(answer, dict) and answer.get("kind") != "Status":
                meta = answer.get("metadata") or {}
                if meta.get("deletionTimestamp") and meta.get("finalizers"):
                    held = self._written(api_version, kind, answer)
        finally:
            if observer is not None and ticket is not None:
                observer.answered(ticket, held, deleted=True)
        if held is not None:
            return held
        uid = None
        if isinstance(answer, dict):
            uid = ((answer.get("details") or {}) if answer.get("kind") == "Status" else
                   (answer.get("metadata") or {})).get("uid")
        self._expect_gone(api_version, kind, namespace, name, uid, answer)
        return None

    def _written(self, api_version: str, kind: str, answer: Any) -> Obj:
        """A write's answer: reads now wait for the watch to deliver it; a CRD write changes discovery."""
        obj = self._out(answer, api_version, kind)
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            # The write removed the last finalizer of a deleting object: it is gone now.
            self._expect_gone(api_version, kind, meta.get("namespace"), str(meta.get("name")), meta.get("uid"), obj)
            return obj
        version = version_number(meta.get("resourceVersion"))
        if version is not None:
            labels = meta.get("labels")
            expected = Expectation(version=version, about=key_of(obj),
                                   labels=labels if isinstance(labels, dict) else {},
                                   since=time.monotonic())  # stamped here, not copied by each store
            for informer in self._covering(api_version, kind, meta.get("namespace"), obj):
                informer.store.expect(expected)
        if (api_version.rpartition("/")[0], kind) == CRD:
            self._wire.forget()
            self._served.forget()
        return obj

    def _expect_gone(self, api_version: str, kind: str, namespace: str | None, name: str, uid: Any,
                     answer: Any) -> None:
        meta = (answer.get("metadata") or {}) if isinstance(answer, dict) and answer.get("kind") != "Status" else {}
        version = version_number(meta.get("resourceVersion"))
        key = (namespace or "", name)
        for informer in self._covering(api_version, kind, namespace, {"metadata": {"namespace": namespace,
                                                                                   "name": name}}):
            known = str(uid) if uid else informer.store.uid_at(key)
            informer.store.expect(Expectation(version=version, gone=key, uid=known, since=time.monotonic()))
        if (api_version.rpartition("/")[0], kind) == CRD:
            self._wire.forget()
            self._served.forget()


def _manager(field_manager: str | None) -> dict[str, str]:
    return {"field_manager": field_manager} if field_manager else {}

def _without_managed_fields(obj: Obj) -> Obj:
    """A PUT body without metadata.managedFields, so the server keeps the stored ones. The cache keeps
    only the Apply entries (store.stripped): sent back, that cut list would replace the object's
    managedFields and drop every other manager's entries."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
