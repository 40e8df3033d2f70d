"""Target clusters registered by Secrets on the management cluster: engage, re-engage, disengage.

A registration is a Secret in the clusters namespace labelled ``sigs.k8s.io/multicluster-runtime-kubeconfig:
"true"``, as multicluster-runtime's kubeconfig provider reads them: ``data.kubeconfig`` reaches the cluster, the
optional ``data.namespaces`` restricts what the operator lists and watches there; the cluster's name is the
Secret's. A new Secret, or one whose kubeconfig or namespaces changed, engages its cluster afresh (new client, new
caches, every order listed again); a deleted or unlabelled one disengages it; other edits change nothing. A refused
or unusable registration stays *registered* but not reachable, so a rule can tell it from an unregistered cluster.

The kubeconfig is untrusted input: the production factory reads only its inline material
(``engine.cluster.kubeconfig``). A refusal is one log line and a count in ``cluster_registrations_refused_total``,
once per content of the Secret; the Secret's data is never logged.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from engine.cluster.api import MANAGEMENT_CLUSTER, ApiError, Cluster, Gone, Obj, WatchEvent
from engine.cluster.kubeconfig import KubeconfigRefused
from engine.cluster.retry import CLUSTER_WARNINGS, Backoff, WarningLimiter
from engine.metrics import Metrics
from engine.runtime.kinds import Log

REGISTRATION_LABEL = "sigs.k8s.io/multicluster-runtime-kubeconfig"
KUBECONFIG_KEY = "kubeconfig"
NAMESPACES_KEY = "namespaces"
DEFAULT_CLUSTERS_NAMESPACE = "c5c3-clusters"
SELECTOR = f"{REGISTRATION_LABEL}=true"

WATCH_TIMEOUT = 300.0

NO_KUBECONFIG = "no-kubeconfig"
EMPTY = "empty"
BINARY = "binary"
"""Why a labelled Secret holds no kubeconfig to read: refusal metric reasons beside the kubeconfig reader's."""


@dataclass(frozen=True)
class Registration:
    """What one registration Secret says: the cluster's name, how to reach it, where to look."""

    name: str
    kubeconfig: str = field(repr=False)
    namespaces: tuple[str, ...] | None = None
    """None: every namespace."""

    def fingerprint(self) -> str:
        """Changes exactly when the kubeconfig or the namespaces change."""
        digest = hashlib.sha256(self.kubeconfig.encode("utf-8"))
        digest.update(b"\0" + "\n".join(self.namespaces or ("*",)).encode("utf-8"))
        return digest.hexdigest()

    def scrub(self, text: str) -> str:
        """``text`` with every longer token of the kubeconfig blanked (tokens, keys, certificates)."""
        for word in sorted(set(re.split(r"[\s:\"',{}\[\]]+", self.kubeconfig)), key=len, reverse=True):
            if len(word) >= 8 and word in text:
                text = text.replace(word, "[redacted]")
        return text


@dataclass(frozen=True)
class Refusal:
    """Why a labelled Secret registers no usable cluster: a metric reason, words that quote no value, and a
    fingerprint of what was refused (the same Secret content is refused, logged and counted once)."""

    reason: str
    message: str
    fingerprint: str


ClusterFactory = Callable[[Registration], Cluster]
"""Builds the client of a registered cluster (production: a KubeCluster from the kubeconfig)."""


class Engager(Protocol):
    """Where registered clusters go (the Manager)."""

    def engage(self, name: str, cluster: Cluster, *, namespaces: Sequence[str] | None = None) -> None: ...

    def disengage(self, name: str) -> None: ...


@runtime_checkable
class KnowsUnusable(Protocol):
    """An engager that also keeps registrations it cannot engage (registered, never reachable)."""

    def unusable(self, name: str, why: str) -> None: ...


@runtime_checkable
class Stoppable(Protocol):
    def stop(self) -> None: ...


def parse_namespaces(text: str) -> tuple[str, ...] | None:
    """``a, b\\nc`` -> (a, b, c); nothing -> None (every namespace)."""
    names = tuple(dict.fromkeys(part.strip() for part in re.split(r"[,\n]", text) if part.strip()))
    return names or None


def registration_of(secret: Obj) -> Registration | Refusal | str:
    """The registration a Secret holds; a Refusal when it is labelled but holds no usable kubeconfig; or why
    it is no registration at all (not labelled). Never quotes its data."""
    meta = secret.get("metadata") or {}
    name = str(meta.get("name") or "")
    if ((meta.get("labels") or {}).get(REGISTRATION_LABEL)) != "true":
        return f"it is not labelled {REGISTRATION_LABEL}: \"true\""
    data = secret.get("data")
    data = data if isinstance(data, dict) else {}
    fingerprint = _data_fingerprint(data)
    if data.get(KUBECONFIG_KEY) is None:
        return Refusal(NO_KUBECONFIG, f"its data has no key {KUBECONFIG_KEY!r}", fingerprint)
    texts: dict[str, str] = {}
    for key in (KUBECONFIG_KEY, NAMESPACES_KEY):
        try:
            texts[key] = _decode(data.get(key))
        except ValueError:
            return Refusal(BINARY, f"its data key {key!r} is not UTF-8 text", fingerprint)
    if not texts[KUBECONFIG_KEY].strip():
        return Refusal(EMPTY, f"its data key {KUBECONFIG_KEY!r} is empty", fingerprint)
    return Registration(name, texts[KUBECONFIG_KEY], parse_namespaces(texts[NAMESPACES_KEY]))


def _data_fingerprint(data: dict[str, object]) -> str:
    digest = hashlib.sha256()
    for key in (KUBECONFIG_KEY, NAMESPACES_KEY):
        digest.update(f"{key}\0{data.get(key)!r}\0".encode("utf-8", "replace"))
    return digest.hexdigest()


def _decode(value: object) -> str:
    if value is None:
        return ""
    try:
        return base64.b64decode(str(value), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("a data value is not base64-encoded UTF-8") from None


class Registrations:
    """Watches the registration Secrets of one namespace and keeps the engaged clusters in step.

    A registration is a Secret in the clusters namespace labelled ``sigs.k8s.io/multicluster-runtime-kubeconfig:
    "true"``, as multicluster-runtime's kubeconfig provider reads them: ``data.kubeconfig`` reaches the cluster, the
    optional ``data.namespaces`` (separated by newlines or commas) restricts what the operator lists and watches
    there. The cluster's name is the Secret's name.

    - A new Secret engages its cluster; one whose kubeconfig or namespaces changed engages it afresh (a new client,
      new caches, every order listed again), which is also how a kind installed later on that cluster gets watched.
    - A deleted Secret (or one that lost its label) disengages it; requests still queued for it are dropped by their
      pass.
    - Other edits (labels, annotations) change nothing.
    - Every labelled Secret is engaged or refused. A refused registration (no ``kubeconfig`` key, an empty one, data
      that is not UTF-8 text, or a kubeconfig refused by its reader) and one whose kubeconfig cannot be used stay
      *registered* but not reachable (the engager's ``unusable``), so a rule can tell them from a cluster nobody
      registered.

    The kubeconfig is untrusted input: the production factory reads only its inline material
    (``engine.cluster.kubeconfig``) and refuses exec plugins, auth providers, token files and file paths. A refusal is
    one log line naming the Secret and why (an error for a refused kubeconfig, a warning for data that holds none) and
    a count in ``cluster_registrations_refused_total{reason}``, once per content of the Secret: listing the
    registrations again neither retries, logs nor counts an unchanged refusal. The Secret's data is never logged;
    values from it that could show up in an error message are blanked first.
    """

    def __init__(
        self,
        management: Cluster,
        namespace: str,
        engager: Engager,
        factory: ClusterFactory,
        *,
        log: Log | None = None,
        metrics: Metrics | None = None,
        warnings: WarningLimiter | None = None,
    ) -> None:
        """warnings: at most one warning about the management cluster a minute (default: the process's limiter)."""
        self._management = management
        self._warnings = warnings if warnings is not None else CLUSTER_WARNINGS
        self.backoff = Backoff()
        """The watch's failures in a row and the waits they call for (``failing``: too many)."""
        self._metrics = metrics
        self.namespace = namespace
        self._engager = engager
        self._factory = factory
        self._log: Log = log if log is not None else logging.getLogger("engine.runtime.clusters")
        self._lock = threading.RLock()
        self._engaged: dict[str, tuple[str, Cluster]] = {}
        """Cluster name -> (fingerprint of its registration, its client)."""
        self._unusable: set[str] = set()
        """Registrations whose kubeconfig is refused or cannot be used: registered, not reachable."""
        self._refused: dict[str, str] = {}
        """Cluster name -> fingerprint of the refused content (logged and counted once)."""
        self._rv: str | None = None
        self._stream: Iterator[WatchEvent] | None = None
        self._stopped = False
        self.synced = threading.Event()
        """Set once the first list has been handled."""

    def engaged(self) -> list[str]:
        """The names of the clusters engaged through registrations, sorted."""
        with self._lock:
            return sorted(self._engaged)

    # -- deterministic ----------------------------------------------------------

    def sync(self) -> None:
        """List the registrations and engage, re-engage or disengage to match them."""
        answer = self._management.list("v1", "Secret", self.namespace, labels=SELECTOR, live=True)
        with self._lock:
            present: set[str] = set()
            for secret in answer.items:
                present.add(str(secret["metadata"]["name"]))
                self.handle("MODIFIED", secret)
            for name in [n for n in {*self._engaged, *self._unusable, *self._refused} if n not in present]:
                self._disengage(name, "its registration Secret is gone")
            self._rv = answer.resource_version or None
        self.synced.set()

    def handle(self, event_type: str, secret: Obj) -> None:
        """Apply one watch event on a registration Secret."""
        name = str((secret.get("metadata") or {}).get("name") or "")
        if not name:
            return
        with self._lock:
            if self._stopped:
                return
            if event_type == "DELETED":
                self._disengage(name, "its registration Secret was deleted")
                return
            found = registration_of(secret)
            if isinstance(found, str):
                self._disengage(name, f"Secret {self.namespace}/{name} is no registration: {found}")
                return
            if isinstance(found, Refusal):
                if self._refused.get(name) != found.fingerprint:
                    self._refuse(name, found)
                    self._log.warning("cluster %r: refused registration Secret %s/%s: %s", name, self.namespace,
                                      name, found.message, extra={"cluster": name})
                return
            engaged = self._engaged.get(name)
            if engaged is not None and engaged[0] == found.fingerprint():
                return
            if self._refused.get(name) == found.fingerprint():
                return  # the same kubeconfig was refused already: not retried, logged or counted again
            self._engage(found, again=engaged is not None)

    def stop(self) -> None:
        """Disengage every registered cluster and close its client (the operator is stopping); events
        after this change nothing, and a running watch is closed so ``run`` returns."""
        with self._lock:
            self._stopped = True
            for name in list(self._engaged):
                self._disengage(name, "the operator is stopping", quiet=True)
        close = getattr(self._stream, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):  # a generator running on the watch thread ends at its timeout
                close()

    # -- threaded ---------------------------------------------------------------

    def run(self, stop: threading.Event, *, watch_timeout: float = WATCH_TIMEOUT) -> None:
        """List, then watch from where the list left off, until ``stop`` is set; re-list on Gone (at once the
        first time in a row, then backing off); a watch that ended before its first event, or failed otherwise,
        waits as after any failure (``engine.cluster.retry``)."""
        backoff = self.backoff
        listed = False
        while not (stop.is_set() or self._stopped):
            try:
                if not listed:
                    self.sync()
                    listed = True
                opened = time.monotonic()
                self._stream = self._management.watch(
                    "v1", "Secret", self.namespace, resource_version=self._rv, labels=SELECTOR,
                    timeout=watch_timeout, bookmarks=True,
                )
                received = 0
                for event in self._stream:
                    if stop.is_set() or self._stopped:
                        break
                    self._event(event)
                    received += 1
                    if backoff.streak:
                        if backoff.failing:
                            self._log.info("watching registration Secrets in %r: events again after %d failure(s) "
                                           "in a row", self.namespace, backoff.streak)
                        backoff.reset()
                if stop.is_set() or self._stopped:
                    return
                delay = backoff.ended(received, lasted=time.monotonic() - opened, timeout=watch_timeout)
                if delay:  # cut before its first event: a failure like any other, not a re-open at once
                    self._failed("ended", f"the watch ended before its first event; watching again in {delay:.1f}s")
                    stop.wait(delay)
            except Gone:
                listed = False
                delay = backoff.after_gone()
                self._failed("gone", f"Gone (410); listing again in {delay:.1f}s" if delay else None)
                if delay:
                    stop.wait(delay)
            except Exception as exc:  # the registration watch must outlive any one failure
                if self._stopped:
                    return
                listed = False
                delay = backoff.after_failure()
                self._failed("error", f"{exc}; retrying in {delay:.1f}s")
                stop.wait(delay)

    def _failed(self, reason: str, text: str | None) -> None:
        """A failure of the registration watch: counted (``reason``), and a warning (``text``, with the streak) unless
        one was written about the management cluster within the minute."""
        if self._metrics is not None:
            self._metrics.record_watch_failure(MANAGEMENT_CLUSTER, "Secret", reason)
        if text is None:
            return
        held = self._warnings.allow(MANAGEMENT_CLUSTER)
        if held is not None:
            failing = "; failing: /readyz fails until it delivers an event" if self.backoff.failing else ""
            self._log.warning("watching registration Secrets in %r: %s (%d failure(s) in a row%s)%s", self.namespace,
                              text, self.backoff.streak, failing, WarningLimiter.suffix(held))

    def _event(self, event: WatchEvent) -> None:
        kind, obj = event["type"], event["object"]
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone(str(obj.get("message") or "watch expired"))
            raise ApiError(str(obj.get("message") or "watch error"))
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind != "BOOKMARK":
            self.handle(kind, obj)
        if rv:
            self._rv = str(rv)

    # -- internals (lock held) --------------------------------------------------

    def _engage(self, registration: Registration, *, again: bool) -> None:
        name = registration.name
        try:
            cluster = self._factory(registration)
        except KubeconfigRefused as refused:
            self._refuse(name, Refusal(refused.reason, str(refused), registration.fingerprint()))
            self._log.error("cluster %r: refused the kubeconfig of Secret %s/%s: %s", name, self.namespace, name,
                            refused, extra={"cluster": name})
            return
        except Exception as exc:
            self._disengage(name, "its kubeconfig cannot be used", quiet=True)
            self._mark_unusable(name, "its kubeconfig cannot be used")
            self._log.error("cluster %r: cannot use the kubeconfig of Secret %s/%s: %s: %s", name, self.namespace,
                            name, type(exc).__name__, registration.scrub(str(exc)), extra={"cluster": name})
            return
        previous = self._engaged.get(name)
        self._unusable.discard(name)
        self._refused.pop(name, None)
        self._engaged[name] = (registration.fingerprint(), cluster)
        self._engager.engage(name, cluster, namespaces=registration.namespaces)
        if previous is not None:
            _stop(previous[1])
        where = ", ".join(registration.namespaces) if registration.namespaces else "all namespaces"
        self._log.info("cluster %r %s (%s)", name, "engaged afresh" if again else "engaged", where,
                       extra={"cluster": name})

    def _refuse(self, name: str, refusal: Refusal) -> None:
        """Registered, never reachable, remembered by what was refused, counted once (the caller logs it)."""
        self._disengage(name, "its registration is refused", quiet=True)
        self._mark_unusable(name, f"its registration is refused: {refusal.message}")
        self._refused[name] = refusal.fingerprint
        if self._metrics is not None:
            self._metrics.record_refused_registration(refusal.reason)

    def _mark_unusable(self, name: str, why: str) -> None:
        if isinstance(self._engager, KnowsUnusable):
            self._unusable.add(name)
            self._engager.unusable(name, why)

    def _disengage(self, name: str, why: str, *, quiet: bool = False) -> None:
        self._refused.pop(name, None)
        if name in self._unusable:
            self._unusable.discard(name)
            self._engager.disengage(name)
        engaged = self._engaged.pop(name, None)
        if engaged is None:
            return
        self._engager.disengage(name)
        _stop(engaged[1])
        if not quiet:
            self._log.info("cluster %r disengaged: %s", name, why, extra={"cluster": name})


def _stop(cluster: Cluster) -> None:
    if isinstance(cluster, Stoppable):
        try:
            cluster.stop()
        except Exception:  # closing a client must never take the operator down
            logging.getLogger("engine.runtime.clusters").exception("closing a cluster client failed")
