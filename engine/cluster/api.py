"""The Cluster interface: the one way the engine talks to a Kubernetes API.

Objects are plain dicts shaped as the API server serves them. Only the errors
defined here cross this boundary, so the engine never sees a client library's
exception types. Two implementations honour it: ``memory`` (in-process) and
``kube`` (the official client); one contract suite tests both.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict

Obj = dict[str, Any]
"""A Kubernetes object as a JSON-compatible dict."""

MANAGEMENT_CLUSTER = ""
"""The name of the management cluster; target clusters carry their registered name."""

Verb = Literal["get", "list", "create", "update", "patch", "apply", "delete", "watch"]
VERBS: tuple[Verb, ...] = ("get", "list", "create", "update", "patch", "apply", "delete", "watch")

PatchType = Literal["merge", "json"]


@dataclass(frozen=True)
class ObjectRef:
    """Identifies one object: its type, and its namespace (None when cluster-scoped) and name."""

    api_version: str
    kind: str
    namespace: str | None
    name: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        meta = obj.get("metadata") or {}
        return cls(obj["apiVersion"], obj["kind"], meta.get("namespace") or None, meta["name"])

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}.{self.api_version} {where}{self.name}"


@dataclass(frozen=True)
class PrinterColumn:
    """One additionalPrinterColumns entry of a CRD version, for table output (``kubectl get``)."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True)
class ResourceInfo:
    """What discovery says about a kind: how it is addressed and which subresources it has."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool
    status_subresource: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    printer_columns: tuple[PrinterColumn, ...] = ()
    categories: tuple[str, ...] = ()
    """Groupings ``kubectl get <category>`` lists together (a CRD's ``names.categories``)."""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def resource(self) -> str:
        """The resource name as errors spell it: ``secrets`` or ``widgets.example.com``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


class WatchEvent(TypedDict):
    """One watch event: ADDED, MODIFIED, DELETED or BOOKMARK, with the object as of that event."""

    type: str
    object: Obj


@dataclass
class ObjectList:
    """The answer to a list: the items and the resourceVersion to watch from."""

    items: list[Obj]
    resource_version: str


# ---------------------------------------------------------------------------
# Errors: worded like the API server's Status messages.


@dataclass
class Cause:
    """One field-level cause of an Invalid error."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"


class ApiError(Exception):
    """An error answered by the API (or on its way to it). ``code`` is the HTTP status."""

    code: int = 500
    reason: str = "InternalError"

    def __init__(self, message: str, *, causes: list[Cause] | None = None, details: Obj | None = None):
        super().__init__(message)
        self.message = message
        self.causes: list[Cause] = list(causes or [])
        self.details: Obj = dict(details or {})

    def status(self) -> Obj:
        """The error as a metav1 Status document."""
        details = {key: value for key, value in self.details.items() if value != ""}  # Go's omitempty
        if self.causes:
            details["causes"] = [{"field": c.field, "message": c.message, "reason": c.reason} for c in self.causes]
        doc: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if details:
            doc["details"] = details
        return doc


class BadRequest(ApiError):
    code, reason = 400, "BadRequest"


class Forbidden(ApiError):
    code, reason = 403, "Forbidden"


class NotFound(ApiError):
    code, reason = 404, "NotFound"


class NoSuchResource(NotFound):
    """A path that names no resource the server serves: the API server's answer carries empty details."""

    def __init__(self) -> None:
        super().__init__("the server could not find the requested resource")

    def status(self) -> Obj:
        return {**super().status(), "details": {}}


class NotCached(NotFound):
    """A get that a label-scoped cache alone answered (``carries``) with a miss: no object carrying the
    labels is there, but one without them may be on the server (decisions 19, 31)."""


class NotHeld(NotCached):
    """A get a shard member's caches missed: no object it stamped and no unstamped object of the name is there,
    but another member may have stamped one (decision 0075)."""


class MethodNotAllowed(ApiError):
    code, reason = 405, "MethodNotAllowed"


class AlreadyExists(ApiError):
    code, reason = 409, "AlreadyExists"


class Conflict(ApiError):
    code, reason = 409, "Conflict"


NO_OBJECT_VERSION = "9223372036854775807"
"""A resourceVersion no stored object carries (etcd's revisions stay below 2^63 - 1). An apply that names it is
conditional on the object's absence: the API server creates the object as any apply would (the field manager's
Apply entry), or answers Conflict when one of the name exists (decision 0075)."""


class Gone(ApiError):
    code, reason = 410, "Expired"


class UnsupportedMediaType(ApiError):
    code, reason = 415, "UnsupportedMediaType"


class Invalid(ApiError):
    code, reason = 422, "Invalid"


class ServerError(ApiError):
    code, reason = 500, "InternalError"


class Timeout(ApiError):
    code, reason = 504, "Timeout"


ERRORS_BY_NAME: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Invalid": Invalid,
    "ServerError": ServerError,
    "Timeout": Timeout,
}


def error_from_status(code: int, reason: str, message: str, causes: list[Cause] | None = None) -> ApiError:
    """Rebuild our error from an HTTP status and Status reason (the kube client's answers)."""
    if code == 409:
        cls: type[ApiError] = AlreadyExists if reason == "AlreadyExists" else Conflict
    else:
        by_code: dict[int, type[ApiError]] = {
            400: BadRequest, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed, 410: Gone,
            415: UnsupportedMediaType, 422: Invalid, 504: Timeout,
        }
        cls = by_code.get(code, ServerError)
    err = cls(message, causes=causes)
    err.code = code
    return err


# ---------------------------------------------------------------------------
# The interface.

LabelSelector = str | Mapping[str, str] | None
"""A label selector as a string (``a=b,c in (d),!e``) or an equality map."""


class Reader(Protocol):
    def get(self, api_version: str, kind: str, namespace: str | None, name: str, *, live: bool = False,
            carries: Collection[str] = ()) -> Obj:
        """The object, or NotFound. live=True reads from the API server even where a cache could answer
        (an implementation without a cache ignores it). carries: label keys the wanted object carries
        (an order's ownership labels); where the kind is cached only by one of them, that cache alone
        answers and a miss there is NotFound (an unlabelled object of that name is not the one wanted).
        An implementation without label-scoped caches ignores it."""
        ...

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        labels: LabelSelector = None,
        fields: str | None = None,
        live: bool = False,
        reads: Collection[tuple[str, ...]] | None = None,
    ) -> ObjectList:
        """Objects of a kind, in one namespace or (namespace None) all, filtered by selectors;
        live as for get. reads: the caller reads only these paths of each item (``[]``: every element of a
        list): a cache that keeps only some fields of every object may answer then (decision 0040); None: the
        whole object. An implementation without such caches ignores it."""
        ...


class Writer(Protocol):
    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        """Create; AlreadyExists if the name is taken. Returns the object as stored."""
        ...

    def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        """Replace everything but status; Conflict if a given resourceVersion is stale."""
        ...

    def update_status(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        """Replace the status subresource only; Conflict if a given resourceVersion is stale."""
        ...

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
        """A JSON merge patch (RFC 7386) or JSON patch (RFC 6902) of the object or its status."""
        ...

    def apply(self, obj: Obj, *, field_manager: str, force: bool = False, status: bool = False) -> Obj:
        """Server-Side Apply: the manager owns what it applies; returns the object as stored."""
        ...

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj | None:
        """Delete; returns the object while finalizers hold it, None once it is gone."""
        ...


class Watcher(Protocol):
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
        """Events after resource_version, in order, until timeout seconds have passed
        (timeout 0: only what is already there; None: until the iterator is closed), as the
        API server's timeoutSeconds. Gone (410) when resource_version is too old; no
        resource_version (or "0") starts with ADDED for every current object. With bookmarks,
        a stream that times out ends with a BOOKMARK carrying the resourceVersion reached."""
        ...


class WatchFeed(Protocol):
    """A cluster's read cache of one (kind, namespace scope, label) kept current by the caller's own watch
    (``KubeCluster.share_watch``), so one watch serves both the caller's events and the cluster's reads."""

    def replace(self, items: list[Obj], resource_version: str) -> None:
        """Everything, as a list answered it (the first list, or a list again after Gone)."""
        ...

    def apply(self, event: WatchEvent, key: tuple[str, str] | None = None) -> None:
        """One watch event (ADDED, MODIFIED, DELETED or BOOKMARK), before the caller maps it; key: the object's
        (namespace or "", name), when the caller has read it already."""
        ...

    def lost(self) -> None:
        """The kind is no longer served: reads go to the server until the next ``replace``."""
        ...

    def release(self) -> None:
        """The caller's watch ends for good: the cluster keeps its cache by a watch of its own again."""
        ...


class WriteObserver(Protocol):
    """Told of a cluster's writes as they are sent and answered, and of its reads (``KubeCluster.observe_writes``),
    so the runtime can tell the watch events that only echo a pass's own writes or that a pass already saw."""

    def sending(self, api_version: str, kind: str, namespace: str | None, name: str) -> object:
        """A write of this object is about to be sent; returns a ticket for ``answered``."""
        ...

    def answered(self, ticket: object, obj: Obj | None, *, deleted: bool = False) -> None:
        """The write's answer as the cluster returns it; None when the write failed (or was a delete that removed
        the object at once: there is no object whose echo could come). deleted: the write was a delete (its
        answer the object finalizers hold)."""
        ...

    def read(self, api_version: str, kind: str, namespace: str | None, name: str, obj: Obj | None) -> None:
        """A get or list on this thread found ``obj`` (None: a get found nothing), so the runtime can tell
        which events a running pass already saw."""
        ...


class Discovery(Protocol):
    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        """How a kind is served; NotFound when this cluster does not serve it."""
        ...

    def serves(self, api_version: str, kind: str) -> bool:
        """Whether this cluster serves the kind now."""
        ...


class Cluster(Reader, Writer, Watcher, Discovery, Protocol):
    """Everything the engine does with one cluster."""

    name: str


@dataclass
class Call:
    """One call through the interface, as counted for scenarios and metrics."""

    cluster: str
    verb: Verb
    api_version: str
    kind: str
    namespace: str | None
    name: str | None
    failed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
