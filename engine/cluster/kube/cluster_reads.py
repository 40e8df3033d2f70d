"""A KubeCluster's reads: ``get`` and ``list`` answered by the informer caches (all objects, a label scope, or a
projection) where they cover the read, and by the server where they do not.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kubernetes.dynamic.resource import Resource

from engine.cluster.api import (
    BadRequest,
    LabelSelector,
    NotCached,
    NotFound,
    NotHeld,
    Obj,
    ObjectList,
)
from engine.cluster.kube.cluster_cache import KubeCache
from engine.cluster.kube.informer import FedInformer, Informer
from engine.cluster.kube.scopes import answers, trusted
from engine.cluster.projection import Path as ReadPath
from engine.cluster.readonly import handed_out
from engine.cluster.selectors import FieldSelector, Selector, parse_fields, parse_labels


class KubeReads(KubeCache):
    """A KubeCluster's gets and lists: from the informer caches where they answer, else live."""

    # -----------------------------------------------------------------------
    # Reads.

    def get(self, api_version: str, kind: str, namespace: str | None, name: str, *, live: bool = False,
            carries: Collection[str] = ()) -> Obj:
        resource = self._resource(api_version, kind)  # resolved once for the namespace and the cache (every read)
        if not resource.namespaced:
            namespace = None
        elif not namespace:
            raise self._namespace_required(resource, api_version)
        observer = self._write_observer
        if observer is None:
            return self._get(api_version, kind, namespace, name, live, carries, resource)
        try:
            found = self._get(api_version, kind, namespace, name, live, carries, resource)
        except NotFound:
            observer.read(api_version, kind, namespace, name, None)
            raise
        observer.read(api_version, kind, namespace, name, found)
        return found

    def _get(self, api_version: str, kind: str, namespace: str | None, name: str, live: bool,
             carries: Collection[str], resource: Resource) -> Obj:
        labels = () if live else self._keys_of(api_version, kind)
        if labels:
            return handed_out(self._labelled_get(api_version, kind, namespace, name, labels, carries))
        informer = None if live else self._informer(api_version, kind, namespace, reading=(namespace or "", name),
                                                    resource=resource)
        if informer is None:
            return handed_out(self._live_get(api_version, kind, namespace, name))
        found = informer.store.get((namespace or "", name))  # read-only (decision 37)
        if found is None:
            raise self._not_found(api_version, kind, name)
        return found

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        labels: LabelSelector = None,
        fields: str | None = None,
        live: bool = False,
        reads: Collection[ReadPath] | None = None,
    ) -> ObjectList:
        found = self._list(api_version, kind, namespace, labels=labels, fields=fields, live=live, reads=reads)
        observer = self._write_observer
        if observer is not None:
            for item in found.items:
                meta = item.get("metadata") or {}
                observer.read(api_version, kind, meta.get("namespace"), str(meta.get("name") or ""), item)
        return found

    def _list(self, api_version: str, kind: str, namespace: str | None, *, labels: LabelSelector,
              fields: str | None, live: bool, reads: Collection[ReadPath] | None) -> ObjectList:
        selector = parse_labels(labels)
        resource = self._resource(api_version, kind)
        namespace = (namespace or None) if resource.namespaced else None
        field_selector: FieldSelector | None = None
        if not live and self._cache:
            try:
                field_selector = parse_fields(fields)
            except BadRequest:
                field_selector = None  # a field this side cannot match: the server decides
        label = self._answering_label(api_version, kind, selector)
        informer: Informer | FedInformer | None = None
        if field_selector is not None and label != "":
            informer = self._informer(api_version, kind, namespace, label, listing=selector)
        elif field_selector is not None and reads is not None:
            informer = self._projected_informer(api_version, kind, namespace, reads)
        if informer is None or field_selector is None:
            answer = self._live_list(api_version, kind, namespace, labels=str(selector) or None, fields=fields)
            return ObjectList([handed_out(item) for item in answer.items], answer.resource_version)
        items, position = informer.store.select(namespace, selector, field_selector)  # read-only (decision 37)
        return ObjectList(items, position)

    def _labelled_get(self, api_version: str, kind: str, namespace: str | None, name: str,
                      labels: Sequence[str], carries: Collection[str]) -> Obj:
        """A get of a label-scoped kind: from the cache of a label the object carries, else from the server
        (a miss does not mean absent: the object may exist without the labels), unless the caller says
        the object it wants carries one of the labels: then that label's cache alone answers. A shard member's
        miss there still asks its projected caches (of every object, or of the unstamped ones:
        ``_absent_from_projections``), as a miss of every scope does."""
        known = [label for label in labels if trusted(label, carries)]
        for label in known or labels:
            informer = self._informer(api_version, kind, namespace, label, (namespace or "", name))
            if informer is None:
                break
            found = informer.store.get((namespace or "", name))
            if found is not None:
                return found
        else:
            if known and (api_version.rpartition("/")[0], kind) not in self._projections:
                missed = self._not_found(api_version, kind, name)
                raise NotCached(str(missed), details=missed.details)
            self._absent_from_projections(api_version, kind, namespace, name, carries)
        return self._live_get(api_version, kind, namespace, name)

    def _absent_from_projections(self, api_version: str, kind: str, namespace: str | None, name: str,
                                 carries: Collection[str]) -> None:
        """Raise when the projected caches of the kind say no object of the name exists where the label scopes
        missed it: NotFound when a cache of every object misses it; NotCached (it may exist without the labels, or
        stamped by a shard member: ``project_reads``' unstamped) when the caches of the labels the caller says it
        carries all miss it, or a cache of every unstamped object does. Return (read the server) when one holds it
        or none can tell."""
        group_kind = (api_version.rpartition("/")[0], kind)
        labels = self._projection_labels.get(group_kind)
        key = (namespace or "", name)
        if labels is None:
            projected = self._projected_informer(api_version, kind, namespace, ())
            if projected is not None and projected.store.uid_at(key) is None:
                missed = self._not_found(api_version, kind, name)
                if group_kind in self._projection_unstamped:
                    raise NotHeld(str(missed), details=missed.details)  # another member may have stamped one
                raise missed  # a cache of every object of the kind misses it
            return
        carried = [label for label in labels if trusted(label, carries)]
        for label in carried:
            projected = self._projected_informer(api_version, kind, namespace, (), label)
            if projected is None or projected.store.uid_at(key) is not None:
                return
        if carried:
            missed = self._not_found(api_version, kind, name)
            if group_kind in self._projection_unstamped:
                raise NotHeld(str(missed), details=missed.details)
            raise NotCached(str(missed), details=missed.details)

    def _answering_label(self, api_version: str, kind: str, selector: Selector) -> str | None:
        """The label scope whose cache answers a list of a label-scoped kind: one whose objects include every
        object the selector matches; "" when there is none (the server answers);
        None when the kind is not label-scoped."""
        keys = self._keys_of(api_version, kind)
        if not keys:
            return None
        return next((key for key in keys if answers(key, selector)), "")

    def _keys_of(self, api_version: str, kind: str) -> tuple[str, ...]:
        return self._label_scopes.get((api_version.rpartition("/")[0], kind), ())
