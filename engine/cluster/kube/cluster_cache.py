"""A KubeCluster's watches and informer caches: the live ``watch``, and the informers (all objects, one per label
scope, or projected) that answer reads, started on a kind's first read and found again per event.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from kubernetes.dynamic.resource import Resource

from engine.cluster.api import (
    LabelSelector,
    Obj,
    WatchEvent,
)
from engine.cluster.kube.cluster_base import KubeBase, Scope
from engine.cluster.kube.informer import FedInformer, Informer
from engine.cluster.kube.scopes import holds
from engine.cluster.kube.store import Store
from engine.cluster.kube.wire import ResumingStream, WatchStream
from engine.cluster.projection import Path as ReadPath
from engine.cluster.projection import covers, tree
from engine.cluster.selectors import Selector, parse_labels


class KubeCache(KubeBase):
    """A KubeCluster's live watches and the informer caches that answer its reads."""

    # -----------------------------------------------------------------------
    # Watch.

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
        """A live watch (never the cache). Without a timeout it resumes across server-side ends."""
        params: dict[str, Any] = {}
        selector = str(parse_labels(labels))
        if selector:
            params["label_selector"] = selector

        def open_from(rv: str | None) -> WatchStream:
            extra = {"resource_version": rv} if rv else {}
            return self._open_watch(api_version, kind, namespace or None, timeout=timeout, bookmarks=bookmarks,
                                    strip_managed_fields=self._cache, **params, **extra)

        if timeout is None:
            return ResumingStream(open_from, resource_version)
        return open_from(resource_version)

    # -----------------------------------------------------------------------
    # The cache.

    def _scope(self, namespaced: bool, namespace: str | None) -> tuple[bool, Scope]:
        """Whether the cache covers a read, and the informer scope that answers it."""
        if not self._cache:
            return False, None
        if self._namespaces is None:
            return True, None
        if namespaced and namespace in self._namespaces:
            return True, namespace
        return False, None

    def _informer(self, api_version: str, kind: str, namespace: str | None,
                  label: str | None = None, reading: tuple[str, str] | None = None,
                  listing: Selector | None = None, resource: Resource | None = None) -> Informer | FedInformer | None:
        """The synced informer that answers a read (started now if need be), or None to read live.

        label: the label scope the informer selects on (a label-scoped kind); None: every object. reading: the object a
        get reads (it waits for this cluster's writes of that object only); listing: a list's label selector (it waits
        for the writes of objects in its namespace it selects before or after them); neither: it waits for all.
        resource: the kind's, when the caller has resolved it already."""
        if resource is None:
            resource = self._resource(api_version, kind)
        if not self._cache:
            return None
        if self._namespaces is None:
            scope: Scope = None  # (``_scope``, inline: every cached read)
        else:
            covered, scope = self._scope(bool(resource.namespaced), namespace)
            if not covered:
                return None
        key = (api_version, kind, scope, label)
        informer = self._informers.get(key)  # one dict read needs no lock (stop clears the dict, then _stopped says so)
        if self._stopped:
            return None
        if informer is None or informer.dead:
            with self._lock:
                starting = self._starting.setdefault(key, threading.Lock())
            with starting:
                with self._lock:
                    informer = self._informers.get(key)
                if informer is None or informer.dead:
                    informer = self._start(api_version, kind, scope, label)
                    if informer is None:
                        return None
        if isinstance(informer, FedInformer) and not informer.wait_listed(self._settle_timeout):
            return None  # the feeding watch has not listed (or its kind is unserved, or it ended): read live
        if not informer.store.settle(self._settle_timeout, reading,
                                     None if listing is None else (namespace, listing)):
            self._log.warning("%r: the watch did not deliver this cluster's writes within %.1fs; reading live",
                              informer, self._settle_timeout)
            return None
        return informer

    def _projected_informer(self, api_version: str, kind: str, namespace: str | None,
                            reads: Collection[ReadPath], label: str | None = None) -> Informer | None:
        """The synced projected informer of a kind whose kept paths cover ``reads`` (started now if need be), or
        None (no projection of the kind, paths it does not keep, or a cache that does not cover the read).
        label: the label key it selects by (None: the one of every object, if the kind's are not by label)."""
        group = api_version.rpartition("/")[0]
        paths = self._projections.get((group, kind))
        if paths is None or not covers(paths, reads) or label not in self._projection_labels.get((group, kind),
                                                                                               (None,)):
            return None
        resource = self._resource(api_version, kind)
        covered, scope = self._scope(bool(resource.namespaced), namespace)
        if not covered:
            return None
        key = (api_version, kind, scope, label)
        with self._lock:
            if self._stopped:
                return None
            informer = self._projected.get(key)
        if informer is None or informer.dead:
            with self._lock:
                starting = self._starting.setdefault((api_version, kind, scope, f"\0projected {label or ''}"),
                                                     threading.Lock())
            with starting:
                with self._lock:
                    informer = self._projected.get(key)
                if informer is None or informer.dead:
                    informer = self._start_projected(api_version, kind, scope, paths, label)
                    if informer is None:
                        return None
        if not informer.store.settle(self._settle_timeout):
            self._log.warning("%r: the watch did not deliver this cluster's writes within %.1fs; reading live",
                              informer, self._settle_timeout)
            return None
        return informer

    def _projected_selector(self, api_version: str, kind: str, label: str | None) -> str:
        """The label selector of a projected cache: its label key and the kind's unstamped selector ("": none)."""
        return ",".join(part for part in (label, self._projection_unstamped.get(
            (api_version.rpartition("/")[0], kind))) if part)

    def _start_projected(self, api_version: str, kind: str, scope: Scope,
                         paths: Sequence[ReadPath], label: str | None = None) -> Informer | None:
        where = f" in {scope}" if scope else ""
        selected = self._projected_selector(api_version, kind, label)
        labelled = f" labelled {selected}" if selected else ""
        selector = {"label_selector": selected} if selected else {}
        shape = tree(paths)  # the watch cuts each object down to it before walking it (the store keeps it so)
        informer = Informer(
            f"{kind}.{api_version}{where}{labelled} projected on {self.name or 'the management cluster'}",
            lambda: self._live_list(api_version, kind, scope, labels=selected or None),
            lambda rv: self._open_watch(api_version, kind, scope, timeout=self._watch_timeout, bookmarks=True,
                                        shape=shape, **selector, **({"resource_version": rv} if rv else {})),
            log=self._log, cluster=self.name, store=Store(shape), timeout=self._watch_timeout,
        )
        informer.start()
        with self._lock:
            if self._stopped or self._projections.get((api_version.rpartition("/")[0], kind)) != tuple(paths):
                stopped = True
            else:
                stopped = False
                self._projected[(api_version, kind, scope, label)] = informer
                self._by_kind = None
        if stopped:
            informer.stop()
            return None
        return informer

    def _start(self, api_version: str, kind: str, scope: Scope, label: str | None) -> Informer | FedInformer | None:
        where = f" in {scope}" if scope else ""
        labelled = f" labelled {label}" if label else ""
        selector = {"label_selector": label} if label else {}
        informer = Informer(
            f"{kind}.{api_version}{where}{labelled} on {self.name or 'the management cluster'}",
            lambda: self._live_list(api_version, kind, scope, labels=label),
            lambda rv: self._open_watch(api_version, kind, scope, timeout=self._watch_timeout, bookmarks=True,
                                        strip_managed_fields=True, **selector,
                                        **({"resource_version": rv} if rv else {})),
            log=self._log, cluster=self.name, timeout=self._watch_timeout,
        )
        informer.start()  # the first list: its errors (NotFound for an unserved kind) are the read's
        with self._lock:
            shared = self._informers.get((api_version, kind, scope, label))
            if self._stopped or (isinstance(shared, FedInformer) and not shared.dead):
                stopped = True  # stopped meanwhile, or a watch shared meanwhile: that one answers
            else:
                stopped = False
                self._informers[(api_version, kind, scope, label)] = informer
                self._by_kind = None
        if stopped:
            informer.stop()
            return None if self._stopped else shared
        return informer

    def _covering(self, api_version: str, kind: str, namespace: str | None,
                  obj: Obj | None = None) -> builtins.list[Informer | FedInformer]:
        """Informers whose objects include this one's: same group and kind, scope all or its namespace, and
        for a label-scoped informer, ``obj`` carries its label or it holds ``obj`` now (it will see it go)."""
        group = api_version.rpartition("/")[0]
        meta = (obj or {}).get("metadata") or {}
        labels = meta.get("labels") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        with self._lock:
            if self._by_kind is None:
                self._by_kind = {}
                for entry in self._informers.items():
                    self._by_kind.setdefault((entry[0][0].rpartition("/")[0], entry[0][1]), []).append(entry)
                for (api_version, projected_kind, scope, label), projected in self._projected.items():
                    self._by_kind.setdefault((api_version.rpartition("/")[0], projected_kind), []).append(
                        ((api_version, projected_kind, scope,
                          self._projected_selector(api_version, projected_kind, label) or None), projected))
            return [
                informer for (_, _, scope, label), informer in self._by_kind.get((group, kind), ())
                if (scope is None or scope == namespace) and not informer.dead
                and (label is None or (obj is not None
                                       and (holds(label, labels) or informer.store.uid_at(key) is not None)))
            ]
