"""The differential harness: one request sequence sent to a real kube-apiserver, to the HTTP emulator over a
MemoryCluster and, where a request maps onto it, through a MemoryCluster's own interface; the answers are
normalised and compared step by step.

Requests go over HTTP with a plain client (``http.client``), so what is compared is what kubectl sees. A case
runs in namespaces of its own (made on every leg before the case, not compared), so cases share one server.

What normalisation ignores is listed in ``IGNORED`` with the reason; everything else must be equal. A
``Divergence`` prints the request, every leg's answer and the difference.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import ssl
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from urllib.parse import urlencode

Obj = dict[str, Any]

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json"
JSON = "application/json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
COMPACT = "COMPACT"
"""A step that is no request: each leg compacts its storage (etcd's compaction; the memory cluster's event log) at
the body's ``revision`` (``$rv(step)``: the leg's own), so the servers' own writes do not move it."""
USER_AGENT = "differential-harness"
"""The harness's User-Agent: the field manager of a write that names none (the memory leg passes it as one)."""

IGNORED: Mapping[str, str] = {
    "metadata.uid": "random per server: replaced by <uid:N>, N the order of first appearance in the case, so an "
                    "ownerReference or precondition naming a uid still compares",
    "metadata.resourceVersion": "etcd's revision counts every write of the whole server: replaced by <rv:N>, N the "
                                "order of first appearance in the case, so 'a no-op write keeps the resourceVersion' "
                                "still compares",
    "list and bookmark resourceVersion": "a list's or bookmark's resourceVersion is the server's latest revision, "
                                         "which other writes (leases, other cases) move: replaced by <rv>",
    "order of managedFields entries": "the server orders entries of one operation by their times (in seconds), "
                                      "which differ between servers answering moments apart: entries are compared "
                                      "sorted by operation, manager, apiVersion and subresource",
    "timestamps": "creationTimestamp, deletionTimestamp, managedFields[].time, Table cells of dates and ages "
                  "(Age, Created At, Last Seen, First Seen): wall clock; only their presence compares",
    "numbers in messages": "uids and resourceVersions inside messages (preconditions, 410) are replaced as above",
    "Table column descriptions": "long API documentation strings kubectl never prints; names, types, formats and "
                                 "priorities compare",
    "PartialObjectMetadata managedFields in Table rows": "kubectl get never prints them; the object's own compare",
    "Warning header agent": "the '299 -' prefix is kept; only the text is compared",
    "Service cluster IPs": "allocated at random on both sides: spec.clusterIP(s) and the Table's Cluster-IP cell "
                           "are numbered <ip:N> by first appearance",
    "bookmarks before a watch's end": "a server sends them when it likes (the real one about once a minute and "
                                      "before a timeout; the emulator once caught up); the initial-events-end "
                                      "bookmark compares",
    "the order of an Invalid's causes": "the API server validates a custom resource's sibling properties in Go map "
                                        "order, which differs from one request to the next: causes (and the list "
                                        "in the message) are compared sorted",
}
"""What the comparison ignores, and why. Nothing else is ignored."""

TIME_COLUMNS = ("Age", "Created At", "Last Seen", "First Seen")


# ---------------------------------------------------------------------------------------------------------------
# Requests and answers.


@dataclass(frozen=True)
class Call:
    """One request of a case. ``{ns}`` (and ``{ns2}``) in the path, query and body become the case's namespaces;
    ``$rv(step)`` and ``$uid(step)`` become, on each leg, the resourceVersion or uid of that leg's answer to the
    step named ``step``. A watch (``watch=1``) reads events until its ``sentinel`` (an object created in the
    watched collection once the watch is open) arrives, or until the stream ends (``timeoutSeconds``)."""

    method: str
    path: str
    body: Any = None
    query: tuple[tuple[str, str], ...] = ()
    content_type: str = JSON
    accept: str = JSON
    name: str = ""
    sentinel: Obj | None = None
    compare: bool = True
    """False: run it on every leg (setup) but do not compare the answers."""

    @property
    def is_watch(self) -> bool:
        return dict(self.query).get("watch") in ("1", "true")

    def describe(self) -> str:
        query = f"?{urlencode(self.query)}" if self.query else ""
        body = "" if self.body is None else "\n  " + json.dumps(self.body, sort_keys=True)[:2000]
        return f"{self.method} {self.path}{query} [{self.content_type}; accept {self.accept}]{body}"


def call(method: str, path: str, body: Any = None, *, name: str = "", content_type: str = JSON,
         accept: str = JSON, sentinel: Obj | None = None, compare: bool = True, **query: str | int | bool) -> Call:
    """A Call with query parameters as keywords (``fieldManager="me"``, ``dryRun="All"``)."""
    pairs = tuple((key, str(value).lower() if isinstance(value, bool) else str(value)) for key, value in query.items())
    return Call(method, path, body, pairs, content_type, accept, name, sentinel, compare)


@dataclass
class Answer:
    """What a leg answered: the HTTP status, the JSON body (or text), the warnings, and for a watch its events."""

    code: int
    body: Any = None
    warnings: tuple[str, ...] = ()
    events: list[Obj] | None = None
    compared: bool = True
    """False: an answer kept for later references (``$rv(step)``) but not compared (a leg's stand-in)."""

    def as_json(self) -> Obj:
        out: Obj = {"code": self.code}
        if self.events is not None:
            out["events"] = self.events
        else:
            out["body"] = self.body
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


UNMAPPED = Answer(0, "not mapped onto the MemoryCluster interface")
"""What the memory leg answers for a request its interface has no counterpart for; such steps are not compared."""


class Leg(Protocol):
    """One server under comparison."""

    name: str

    def send(self, request: Call) -> Answer: ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------------------------------------------------
# HTTP legs.


class HttpLeg:
    """A server spoken to over HTTP(S) with a keep-alive connection; watches get connections of their own."""

    def __init__(self, name: str, url: str, *, token: str | None = None, ca_pem: bytes | None = None,
                 watch_patience: float = 10.0, compact: Callable[[str], None] | None = None,
                 fresh_cache: bool = False) -> None:
        self.name = name
        self.fresh_cache = fresh_cache
        self.compact = compact
        self.url = url
        scheme, _, rest = url.partition("://")
        host, _, port = rest.partition(":")
        self._host, self._port, self._tls = host, int(port), scheme == "https"
        self._context = ssl.create_default_context(cadata=ca_pem.decode()) if ca_pem else None
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._connection: http.client.HTTPConnection | None = None
        self.watch_patience = watch_patience

    def _connect(self, timeout: float = 30.0) -> http.client.HTTPConnection:
        if self._tls:
            return http.client.HTTPSConnection(self._host, self._port, context=self._context, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _headers_for(self, request: Call) -> dict[str, str]:
        headers = {**self._headers, "Accept": request.accept, "User-Agent": f"{USER_AGENT}/1.0"}
        if request.body is not None:
            headers["Content-Type"] = request.content_type
        return headers

    @staticmethod
    def _target(request: Call) -> str:
        return request.path + (f"?{urlencode(request.query)}" if request.query else "")

    @staticmethod
    def _payload(request: Call) -> bytes | None:
        if request.body is None:
            return None
        return request.body.encode() if isinstance(request.body, str) else json.dumps(request.body).encode()

    def send(self, request: Call) -> Answer:
        if request.method == COMPACT:
            if self.compact is None:
                raise AssertionError(f"{self.name}: this leg cannot compact its storage")
            self.compact(str((request.body or {}).get("revision") or ""))
            return Answer(0, "compacted")
        if request.is_watch:
            return self._watch(request)
        for attempt in (1, 2):
            if self._connection is None:
                self._connection = self._connect()
            try:
                self._connection.request(request.method, self._target(request), body=self._payload(request),
                                         headers=self._headers_for(request))
                response = self._connection.getresponse()
                data = response.read()
            except (http.client.RemoteDisconnected, http.client.CannotSendRequest, ConnectionResetError,
                    BrokenPipeError, ssl.SSLEOFError):  # a keep-alive connection the server closed while idle
                self._connection.close()
                self._connection = None
                if attempt == 2:
                    raise
                continue
            if response.getheader("Connection", "").lower() == "close":
                self._connection.close()
                self._connection = None
            answer = Answer(response.status, _decode(data), _warnings(response))
            if self.fresh_cache:
                self._await_cache(request, answer)
            return answer
        raise AssertionError("unreachable")

    def _await_cache(self, request: Call, answer: Answer) -> None:
        """After a write, read the object back at the written resourceVersion: a real API server answers that
        from its watch cache once the cache holds the write. Its next write of the object then starts from the
        current copy: the server tries a write on its cached copy first, and the warnings of a try on a stale
        copy (retried after the conflict) stay in the answer, so a write sent too soon can warn about an object
        state already gone."""
        body: Obj = answer.body if isinstance(answer.body, dict) else {}
        meta: Obj = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
        if request.method not in ("POST", "PUT", "PATCH") or not 200 <= answer.code < 300 or not meta.get("name"):
            return
        if dict(request.query).get("dryRun") or not meta.get("resourceVersion"):
            return
        path = request.path.split("?")[0]
        path = re.sub(r"/(status|scale)$", "", path) if request.method != "POST" else f"{path}/{meta['name']}"
        self.send(call("GET", path, resourceVersion=str(meta["resourceVersion"])))

    def _watch(self, request: Call) -> Answer:
        """Open the watch, create the sentinel, read until it (or the end of the stream) arrives."""
        connection = self._connect(self.watch_patience)
        try:
            connection.request("GET", self._target(request), headers=self._headers_for(request))
            response = connection.getresponse()
            if response.status != 200:
                return Answer(response.status, _decode(response.read()), _warnings(response))
            sentinel = request.sentinel
            if sentinel is not None:
                created = self.send(Call("POST", request.path, sentinel))
                if created.code != 201:
                    raise AssertionError(f"{self.name}: the watch sentinel was refused: {created.as_json()}")
            events: list[Obj] = []
            deadline = time.monotonic() + self.watch_patience
            for event in _lines(response, deadline):
                if sentinel is not None and _names(event, sentinel):
                    break
                events.append(event)
            else:
                if sentinel is not None:
                    raise AssertionError(f"{self.name}: the watch ended before its sentinel arrived: {events}")
            return Answer(200, None, _warnings(response), events)
        finally:
            connection.close()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _lines(response: http.client.HTTPResponse, deadline: float) -> Iterator[Obj]:
    """The watch events of a stream, until it ends or the deadline passes."""
    while time.monotonic() < deadline:
        try:
            line = response.readline()
        except TimeoutError:
            return
        if not line:
            return
        if line.strip():
            yield json.loads(line)


def _names(event: Obj, sentinel: Obj) -> bool:
    obj = event.get("object") or {}
    return bool(event.get("type") == "ADDED" and (obj.get("metadata") or {}).get("name")
                == sentinel["metadata"]["name"])


def _decode(data: bytes) -> Any:
    text = data.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


_WARNING = re.compile(r'\d{3} \S+ "((?:[^"\\]|\\.)*)"')


def _warnings(response: http.client.HTTPResponse) -> tuple[str, ...]:
    found = []
    for header in response.headers.get_all("Warning") or []:
        for match in _WARNING.finditer(header):
            found.append(match.group(1).replace('\\"', '"').replace("\\\\", "\\"))
    return tuple(found)


# ---------------------------------------------------------------------------------------------------------------
# Cases.


@dataclass
class Divergence:
    """Legs that answered one step differently: the request, each answer, and the difference."""

    case: str
    step: int
    request: Call
    answers: dict[str, Any]
    raw: dict[str, Answer] = field(default_factory=dict)

    def __str__(self) -> str:
        names = list(self.answers)
        reference = self.answers[names[0]]
        first = json.dumps(reference, indent=1, sort_keys=True).splitlines()
        lines = [f"case {self.case!r}, step {self.step}: {self.request.describe()}"]
        for other in names[1:]:
            if self.answers[other] == reference:
                continue
            lines.append(f"--- {names[0]} vs {other}, where they differ:")
            for path, mine, theirs in differences(reference, self.answers[other])[:40]:
                lines.append(f"  {path}: {names[0]} {_short(mine)} / {other} {_short(theirs)}")
        lines.append(f"{names[0]} answered (normalised):")
        lines += ["  " + line for line in first[:60]]
        if len(first) > 60:
            lines.append(f"  ... ({len(first) - 60} more lines)")
        return "\n".join(lines)


_ABSENT = "<absent>"


def differences(one: Any, two: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, one's value, two's value) for every leaf or shape where two JSON documents differ."""
    if isinstance(one, dict) and isinstance(two, dict):
        found = []
        for key in sorted(set(one) | set(two)):
            where = f"{path}.{key}" if path else str(key)
            if key not in one or key not in two:
                found.append((where, one.get(key, _ABSENT), two.get(key, _ABSENT)))
            else:
                found += differences(one[key], two[key], where)
        return found
    if isinstance(one, list) and isinstance(two, list):
        found = [d for at, (a, b) in enumerate(zip(one, two, strict=False)) for d in differences(a, b, f"{path}[{at}]")]
        for at in range(min(len(one), len(two)), max(len(one), len(two))):
            found.append((f"{path}[{at}]", one[at] if at < len(one) else _ABSENT,
                          two[at] if at < len(two) else _ABSENT))
        return found
    return [] if one == two else [(path, one, two)]


def _short(value: Any) -> str:
    text = value if value == _ABSENT else json.dumps(value, sort_keys=True)
    return text if len(text) <= 300 else text[:300] + "..."


@dataclass
class Case:
    """A named request sequence; ``namespaces`` are created on every leg first."""

    name: str
    steps: Sequence[Call]
    namespaces: tuple[str, ...] = ("{ns}",)


@dataclass(frozen=True)
class Kept:
    """A difference kept on purpose: which answers it covers (a request and a path where the legs differ), why it
    is kept, and a case that shows it (``test_kept`` checks each still happens, so the list stays true)."""

    name: str
    reason: str
    covers: Callable[[Call, str], bool]
    case: Case
    where: str = "shared"
    """The runner whose real server shows it: "shared" (the session's), "compaction" (no watch cache)."""


class Runner:
    """Runs cases on legs; every case gets fresh namespaces (``prefix`` + a counter) on every leg. Differences a
    ``Kept`` entry covers are not divergences; ``excused`` counts them by entry."""

    def __init__(self, legs: Sequence[Leg], *, prefix: str = "d", kept: Sequence[Kept] = ()) -> None:
        self.legs = list(legs)
        self.prefix = prefix
        self.kept = list(kept)
        self.excused: dict[str, int] = {}
        self._count = 0
        self.cases = 0
        self.requests = 0

    def namespaces(self) -> dict[str, str]:
        self._count += 1
        return {"ns": f"{self.prefix}{self._count}", "ns2": f"{self.prefix}{self._count}-b"}

    def run(self, case: Case) -> list[Divergence]:
        """Every step on every leg, then the divergences (none: the legs agree)."""
        names = self.namespaces()
        contexts = {leg.name: _Context(names) for leg in self.legs}
        for leg in self.legs:
            for namespace in case.namespaces:
                made = leg.send(Call("POST", "/api/v1/namespaces", {"metadata": {"name": _fill(namespace, names)}}))
                if made.code not in (0, 201):
                    raise AssertionError(f"{leg.name}: namespace {namespace} not made: {made.as_json()}")
        found: list[Divergence] = []
        self.cases += 1
        for index, step in enumerate(case.steps):
            answers: dict[str, Any] = {}
            raw: dict[str, Answer] = {}
            for leg in self.legs:
                context = contexts[leg.name]
                concrete = context.resolve(step)
                answer = leg.send(concrete)
                self.requests += 1
                context.record(step.name, answer)
                raw[leg.name] = answer
                if answer is not UNMAPPED and answer.compared:
                    answers[leg.name] = normalise(answer, context)
            if step.compare and self._diverge(context_free(step, names), answers):
                found.append(Divergence(case.name, index, context_free(step, names), answers, raw))
        return found

    def _diverge(self, request: Call, answers: dict[str, Any]) -> bool:
        """Whether some leg differs from the first where no kept difference covers it (a leg that gives no
        warnings is compared without them)."""
        names = list(answers)
        warns = {leg.name: getattr(leg, "warns", True) for leg in self.legs}
        for other in names[1:]:
            one, two = answers[names[0]], answers[other]
            if not warns.get(other, True):
                one, two = _without_warnings(one), _without_warnings(two)
            for path, _, _ in differences(one, two):
                covering = next((k for k in self.kept if k.covers(request, path)), None)
                if covering is None:
                    return True
                self.excused[covering.name] = self.excused.get(covering.name, 0) + 1
        return False

    def close(self) -> None:
        for leg in self.legs:
            with contextlib.suppress(Exception):
                leg.close()


def _without_warnings(answer: Any) -> Any:
    return {key: value for key, value in answer.items() if key != "warnings"} if isinstance(answer, dict) else answer


def context_free(step: Call, names: Mapping[str, str]) -> Call:
    return replace(step, path=_fill(step.path, names))


class _Context:
    """One leg's view of a case: its namespaces, its answers by step name, and the uids and resourceVersions it
    has seen (numbered in order of appearance)."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = dict(names)
        self.answers: dict[str, Answer] = {}
        self.uids: dict[str, int] = {}
        self.rvs: dict[str, int] = {}

    def resolve(self, step: Call) -> Call:
        def fill(value: Any) -> Any:
            if isinstance(value, str):
                return self._substitute(_fill(value, self.names))
            if isinstance(value, dict):
                return {fill(k): fill(v) for k, v in value.items()}
            if isinstance(value, list):
                return [fill(v) for v in value]
            return value

        return replace(step, path=fill(step.path), body=fill(step.body),
                       query=tuple((k, fill(v)) for k, v in step.query), sentinel=fill(step.sentinel))

    def _substitute(self, text: str) -> Any:
        def value(match: re.Match[str]) -> str:
            what, step = match.group(1), match.group(2)
            answer = self.answers.get(step)
            body = answer.body if answer is not None and isinstance(answer.body, dict) else {}
            meta = body.get("metadata") or {}
            return str(meta.get("resourceVersion" if what == "rv" else "uid") or "")

        return re.sub(r"\$(rv|uid)\(([^)]*)\)", value, text)

    def record(self, name: str, answer: Answer) -> None:
        if name:
            self.answers[name] = answer

    def uid(self, value: str) -> str:
        return f"<uid:{self.uids.setdefault(value, len(self.uids) + 1)}>"

    def rv(self, value: str) -> str:
        return f"<rv:{self.rvs.setdefault(value, len(self.rvs) + 1)}>"

    def ip(self, value: Any) -> Any:
        if not isinstance(value, str) or value in ("None", "", "<none>"):
            return value
        self.ips = getattr(self, "ips", {})
        return f"<ip:{self.ips.setdefault(value, len(self.ips) + 1)}>"


def _fill(text: str, names: Mapping[str, str]) -> str:
    for key, value in names.items():
        text = text.replace("{" + key + "}", value)
    return text


# ---------------------------------------------------------------------------------------------------------------
# Normalisation.


def normalise(answer: Answer, context: _Context) -> Obj:
    """The answer with what ``IGNORED`` names replaced, as a JSON-comparable document."""
    out: Obj = {"code": answer.code}
    if answer.events is not None:
        events = [_event(e, context) for e in answer.events]
        out["events"] = [e for e in events if e is not None]
    else:
        out["body"] = _document(answer.body, context)
    if answer.warnings:
        out["warnings"] = sorted(_message(w, context) for w in answer.warnings)
    return out


def normalised(doc: Any) -> Any:
    """One document normalised on its own (uids and resourceVersions numbered from 1)."""
    return _document(doc, _Context({}))


def _event(event: Obj, context: _Context) -> Obj | None:
    kind, obj = event.get("type"), event.get("object")
    if kind == "BOOKMARK":
        annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
        if annotations.get("k8s.io/initial-events-end") != "true":
            return None
        return {"type": kind, "object": {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"),
                                         "metadata": {"resourceVersion": "<rv>", "annotations": annotations}}}
    return {"type": kind, "object": _document(obj, context)}


def _document(doc: Any, context: _Context) -> Any:
    if not isinstance(doc, dict):
        return doc
    kind = doc.get("kind")
    if kind == "Status":
        return _status(doc, context)
    if kind == "Table":
        return _table(doc, context)
    if isinstance(doc.get("items"), list) and str(kind or "").endswith("List"):
        meta = dict(doc.get("metadata") or {})
        if "resourceVersion" in meta:
            meta["resourceVersion"] = "<rv>"
        return {**doc, "metadata": meta, "items": [_object(item, context) for item in doc["items"]]}
    return _object(doc, context)


def _object(obj: Obj, context: _Context) -> Obj:
    obj = dict(obj)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta = dict(meta)
        if "uid" in meta:
            meta["uid"] = context.uid(str(meta["uid"]))
        if "resourceVersion" in meta:
            meta["resourceVersion"] = context.rv(str(meta["resourceVersion"]))
        for key in ("creationTimestamp", "deletionTimestamp"):
            if meta.get(key):
                meta[key] = "<time>"
        if isinstance(meta.get("managedFields"), list):
            rows = [{k: ("<time>" if k == "time" else v) for k, v in row.items()} if isinstance(row, dict) else row
                    for row in meta["managedFields"]]
            meta["managedFields"] = sorted(rows, key=lambda row: json.dumps(
                [row.get(k) for k in ("operation", "manager", "apiVersion", "subresource")]
                if isinstance(row, dict) else row))
        if isinstance(meta.get("ownerReferences"), list):
            meta["ownerReferences"] = [{**r, "uid": context.uid(str(r.get("uid")))} if isinstance(r, dict) else r
                                       for r in meta["ownerReferences"]]
        obj["metadata"] = meta
    spec = obj.get("spec")
    if obj.get("kind") == "Service" and isinstance(spec, dict) and "clusterIP" in spec:
        obj["spec"] = {**spec, "clusterIP": context.ip(spec["clusterIP"]),
                       "clusterIPs": [context.ip(ip) for ip in spec.get("clusterIPs") or []]}
    return obj


def _status(doc: Obj, context: _Context) -> Obj:
    doc = dict(doc)
    if isinstance(doc.get("message"), str):
        doc["message"] = _message(doc["message"], context)
    details = doc.get("details")
    if isinstance(details, dict):
        details = dict(details)
        if "uid" in details:
            details["uid"] = context.uid(str(details["uid"]))
        if isinstance(details.get("causes"), list):
            details["causes"] = [{**c, "message": _message(str(c.get("message", "")), context)}
                                 if isinstance(c, dict) and "message" in c else c for c in details["causes"]]
            doc["message"] = _sorted_summary(doc.get("message"), details["causes"])
            details["causes"] = sorted(details["causes"], key=lambda c: json.dumps(c, sort_keys=True))
        doc["details"] = details
    return doc


def _sorted_summary(message: Any, causes: list[Any]) -> Any:
    """An Invalid's message with its ``[cause, cause]`` list in sorted order (when it is that list)."""
    if not isinstance(message, str) or not all(isinstance(c, dict) for c in causes):
        return message
    rendered = []
    for cause in causes:
        text = f"{cause.get('field')}: {cause.get('message')}"
        if text not in rendered:
            rendered.append(text)
    listed = "[" + ", ".join(rendered) + "]"
    if len(rendered) < 2 or not message.endswith(listed):
        return message
    return message[:-len(listed)] + "[" + ", ".join(sorted(rendered)) + "]"


def _message(text: str, context: _Context) -> str:
    for uid in sorted(context.uids, key=len, reverse=True):
        text = text.replace(uid, context.uid(uid))
    text = re.sub(r"too old resource version: \d+ \(\d+\)", "too old resource version: <rv> (<rv>)", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z", "<time>", text)
    text = re.sub(r'(\\"resourceVersion\\":\\")(\d+)', lambda m: m.group(1) + context.rv(m.group(2)), text)
    return re.sub(r"(ResourceVersion in (?:precondition|object meta): |ResourceVersion in the precondition \(|"
                  r"ResourceVersion in record \()(\d+)", lambda m: m.group(1) + context.rv(m.group(2)), text)


def _table(doc: Obj, context: _Context) -> Obj:
    columns = [{k: c.get(k) for k in ("name", "type", "format", "priority")} for c in doc.get("columnDefinitions", [])]
    ages = {i for i, c in enumerate(columns) if c["name"] in TIME_COLUMNS or c["type"] == "date"}
    ips = {i for i, c in enumerate(columns) if c["name"] == "Cluster-IP"}
    rows = []
    for row in doc.get("rows") or []:
        cells = ["<age>" if i in ages and cell is not None else context.ip(cell) if i in ips else cell
                 for i, cell in enumerate(row.get("cells", []))]
        out: Obj = {"cells": cells}
        if isinstance(row.get("object"), dict):
            obj = _object(row["object"], context)
            if obj.get("kind") == "PartialObjectMetadata":
                obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
            out["object"] = obj
        rows.append(out)
    meta = dict(doc.get("metadata") or {})
    if "resourceVersion" in meta:
        meta["resourceVersion"] = "<rv>"
    return {"kind": "Table", "apiVersion": doc.get("apiVersion"), "metadata": meta, "columnDefinitions": columns,
            "rows": rows}


def report(found: Sequence[Divergence], limit: int = 5) -> str:
    """The first divergences, readable, for an assertion message."""
    shown = "\n\n".join(str(d) for d in found[:limit])
    more = f"\n\n... and {len(found) - limit} more" if len(found) > limit else ""
    return f"{len(found)} divergence(s):\n\n{shown}{more}"


Check = Callable[[Runner, Case], None]
