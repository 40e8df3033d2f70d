"""The pass context: what expressions see, with inputs read and values computed only when first named.

A pass builds one ``PassContext`` from the compiled kind and the live order and drops it at
the end. Inputs are read lazily, so a read that only one branch needs (a list taken only when
a rotation falls due) happens only on that branch; each input is read at most once per pass.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from engine.clock import Clock, format_time
from engine.cluster.api import ApiError, Cluster, LabelSelector, NotFound, Obj
from engine.cluster.patches import json_copy
from engine.cluster.registry import ClusterNotFound, ClusterSet
from engine.cluster.selectors import carries_labels, fitting_selector
from engine.expr.errors import ExprError, PassThrough
from engine.expr.functions import FUNCTIONS, redact_secrets, remember_secrets
from engine.expr.jinja import ObjectTemplate, Text
from engine.expr.jmes import Query
from engine.outcome import Request
from engine.reconcile.conditions import ConditionMarker
from engine.reconcile.memo import VALUE_MEMOS, Remembered
from engine.reconcile.stamp import CHILD_STAMP, STAMPED_KINDS
from engine.rules.model import ClusterScope, CompiledKind, Input, Requeue, Value

DERIVED = ("prefix", "childNamespace", "childLabels")
_DERIVED_FIELDS = {"childNamespace": "namespace", "childLabels": "labels"}
"""The ``children`` field each derived name comes from (``prefix`` is its own)."""

_KEPT = (str, int, float, bool, type(None))
"""The values a stable value's memo keeps: immutable scalars (a container could be changed by its reader)."""


class ReadError(PassThrough):
    """An input could not be read; the text is the rule's error text (never object data)."""

    def __init__(self, text: str, cause: ApiError) -> None:
        super().__init__(text)
        self.text = text
        self.cause = cause


class ClusterUnavailable(ApiError):
    """An action or input names a cluster that is not registered (or whose registration is unusable)."""

    code, reason = 503, "ClusterUnavailable"


class RuleRuntimeError(PassThrough):
    """A rule misbehaved at run time (a value cycle, a template that rendered no object)."""


def truthy(value: Any) -> bool:
    """JMESPath truthiness: false, null, and empty strings, lists and objects are false; numbers are true."""
    return not (value is None or value is False or value == "" or value == [] or value == {})


UNKNOWN: Any = object()
"""What a scope's resolver answers for a name it does not know (read as None)."""


class Scope(dict[str, Any]):
    """A dict that resolves missing names through ``resolve`` and caches them (JMESPath and Jinja both read it).
    A name it does not know reads as None, as JMESPath reads a missing key (Jinja asks ``in`` first)."""

    def __init__(self, base: Mapping[str, Any], resolve: Callable[[str], Any], knows: Callable[[str], bool]) -> None:
        """``resolve(name)``: the value of a name not held yet, or ``UNKNOWN`` for a name it does not know;
        ``knows(name)``: whether it would resolve it (``in``)."""
        super().__init__(base)
        self._resolve = resolve
        self._knows = knows

    def __missing__(self, key: str) -> Any:
        value = self._resolve(key)
        if value is UNKNOWN:
            return None
        self[key] = value
        return value

    get = dict.__getitem__  # type: ignore[assignment]
    """``scope.get(name)``, as an expression's field reads it (about a hundred times a pass): the
    dict's own lookup, which calls ``__missing__`` only for a name not resolved yet (no Python frame)."""

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (isinstance(key, str) and self._knows(key))

    def child(self, **names: Any) -> Scope:
        """A scope with a few more names (``item``, ``error``) that falls back to this one."""
        return Scope(names, self._lookup, self.__contains__)

    def _lookup(self, key: str) -> Any:
        return self[key] if key in self else UNKNOWN  # noqa: SIM401 (``get`` takes no default here)


class PassContext:
    """Everything one pass reads and writes, in one place."""

    def __init__(self, kind: CompiledKind, request: Request, order: Obj, *, clusters: ClusterSet,
                 order_cluster: Cluster, clock: Clock, log: logging.Logger | logging.LoggerAdapter[Any]) -> None:
        self.kind = kind
        self.request = request
        self.order = order
        self.clusters = clusters
        self.order_cluster = order_cluster
        self.management = clusters.management
        self.now = clock.now()
        now = format_time(self.now)
        self.log = log
        self.before_status: Obj = json_copy(order.get("status") or {})
        self.status_fields: dict[str, Any] = {}
        self.conditions = ConditionMarker(kind.conditions, self.before_status.get("conditions") or [],
                                          int(order.get("metadata", {}).get("generation") or 0), now)
        self.steps_done: dict[str, bool] = {}
        self._resolving: list[str] = []
        self.stamp: Mapping[str, str] = CHILD_STAMP.get()
        """Labels every object written for the order carries (a shard member's; none elsewhere)."""
        self.stamped_kinds = STAMPED_KINDS.get()
        base = {
            "order": order, "cluster": request.cluster, "now": now,
            "status": self.before_status, "conditions": {}, "steps": {},
            "clusters": clusters.reachable_names(),
        }
        self.scope = Scope(base, self._resolve, self._knows)
        self._stable = kind.stable_values
        self._remembered = self._memo_of(kind, request, order)
        self._waiting: list[tuple[tuple[str, ...], tuple[Any, ...], dict[str, Any]]] = []
        if self._remembered:
            self._recall(self._remembered)
        self.refresh_progress()

    def _memo_of(self, kind: CompiledKind, request: Request, order: Obj) -> Remembered | None:
        """The order's stable values from its earlier passes (decision 52), at this order version; None when
        the order carries no uid or generation (nothing then says its spec is the one they were computed on)."""
        meta = order.get("metadata")
        if not self._stable or type(meta) is not dict:
            return None
        uid, generation = meta.get("uid"), meta.get("generation")
        if not uid or type(generation) is not int:
            return None
        memos = VALUE_MEMOS.get()
        if memos is None:
            return None
        return memos.of(kind, (kind.key, request.cluster, request.namespace, request.name), (uid, generation))

    def _recall(self, remembered: Remembered) -> None:
        """Put the remembered values that read no input in the scope now; the others wait for their inputs."""
        for inputs, (versions, values) in remembered.items():
            if inputs:
                self._waiting.append((inputs, versions, values))
            else:
                dict.update(self.scope, values)

    def _recall_after(self) -> None:
        """An input was read: the remembered values whose inputs are all read now go in the scope when those
        inputs read the versions they were computed on."""
        waiting = []
        for inputs, versions, values in self._waiting:
            now = self._versions(inputs)
            if now is None:
                waiting.append((inputs, versions, values))
            elif now == versions:
                dict.update(self.scope, values)
        self._waiting = waiting

    # -- names ---------------------------------------------------------------------------------------

    def _knows(self, name: str) -> bool:
        return name in self.kind.inputs or name in self.kind.values or name in DERIVED

    def _resolve(self, name: str) -> Any:
        """The value of an input, a value or a derived name (UNKNOWN for any other name), computed now."""
        kind = self.kind
        source: Any = kind.inputs.get(name)
        is_input = source is not None
        if not is_input:
            source = kind.values.get(name)
            if source is None and name not in DERIVED:
                return UNKNOWN
        if name in self._resolving:
            cycle = " -> ".join([*self._resolving[self._resolving.index(name):], name])
            raise RuleRuntimeError(f"values depend on each other: {cycle}")
        value = self._compute(name, source, is_input)
        remembered = self._remembered
        if remembered is None:
            return value
        if is_input:
            if self._waiting:
                dict.__setitem__(self.scope, name, value)
                self._recall_after()
            return value
        reads = self._stable.get(name)
        if reads is not None and type(value) in _KEPT:
            versions = self._versions(reads)  # what it read is in the scope now
            if versions is not None:
                group = remembered.get(reads)
                if group is None or group[0] != versions:
                    remembered[reads] = group = (versions, {})
                group[1][name] = value
        return value

    def _versions(self, inputs: tuple[str, ...]) -> tuple[Any, ...] | None:
        """The (uid, resourceVersion) of what each of these inputs read this pass (None: nothing), or None when
        one is not read yet or its object says no version: the key a stable value is remembered by."""
        if not inputs:
            return ()
        scope = self.scope
        versions: list[Any] = []
        for name in inputs:
            if not dict.__contains__(scope, name):
                return None
            obj = dict.__getitem__(scope, name)
            if obj is None:
                versions.append(None)
                continue
            meta = obj.get("metadata") if type(obj) is dict else None
            uid = meta.get("uid") if type(meta) is dict else None
            version = meta.get("resourceVersion") if type(meta) is dict else None
            if not uid or not version:
                return None
            versions.append((uid, version))
        return tuple(versions)

    def _compute(self, name: str, source: Any, is_input: bool) -> Any:
        """The value of an input, value or derived name; an expression failing on the way is told as this name's."""
        self._resolving.append(name)
        try:
            if is_input:
                return self.read(source)
            if source is not None:
                query = source.query
                return query.evaluate(self.scope) if query is not None else self.evaluate_value(source, self.scope)
            return self.derive(name)
        except ExprError as err:
            section = "inputs" if is_input else "values" if source is not None else "children"
            raise err.named(f"{section}.{_DERIVED_FIELDS.get(name, name) if source is None else name}") from None
        finally:
            self._resolving.pop()

    def derive(self, name: str) -> Any:
        children = self.kind.children
        if name == "prefix":
            return self.render(children.prefix)
        if name == "childNamespace":
            return self.render(children.namespace)
        return {
            children.name_label: self.order["metadata"]["name"],
            children.namespace_label: self.order["metadata"].get("namespace", ""),
            children.cluster_label: self.request.cluster,
        }

    def log_fields(self, **more: Any) -> dict[str, Any]:
        """The fields every log line about this pass carries."""
        request = self.request
        return {"order": f"{request.namespace}/{request.name}", "kind": self.kind.kind, "cluster": request.cluster,
                **more}

    def rule_failed(self, err: ExprError | RuleRuntimeError) -> str:
        """One error line a platform team can act on (where the failing expression is, what it is, what it met,
        and who read it); returns the failure's text for a condition, an Event and the pass error, with every
        secret the process knows blanked (a cause names types, never values: this holds if one ever did)."""
        text = redact_secrets(str(err))
        fields: dict[str, Any] = {"error": text}
        if isinstance(err, ExprError):
            fields.update(rule=err.origin or err.path or "", expression=redact_secrets(_one_line(err.source)),
                          reason=redact_secrets(err.reason))
        self.log.error("a rule failed at run time", extra=self.log_fields(**fields))
        return text

    def set_order(self, order: Obj) -> None:
        """The order as the API server returned it after our write (keeps the resourceVersion current)."""
        self.order = order
        self.scope["order"] = order

    def refresh_progress(self) -> None:
        """Expose the conditions and steps written so far to expressions."""
        self.scope["conditions"] = self.conditions.snapshot()
        self.scope["steps"] = {name: {"done": done} for name, done in self.steps_done.items()}

    # -- evaluation ----------------------------------------------------------------------------------

    def evaluate(self, query: Query, scope: Scope | None = None) -> Any:
        return query.evaluate(self.scope if scope is None else scope)

    def render(self, text: Text, scope: Scope | None = None) -> str:
        return text.render(self.scope if scope is None else scope)

    def render_object(self, template: ObjectTemplate, scope: Scope | None = None) -> Obj:
        """A child rendered from its template; it must be an object with apiVersion, kind and metadata.name."""
        obj = template.render(self.scope if scope is None else scope)
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind") \
                or not isinstance(meta, dict) or not meta.get("name"):
            raise RuleRuntimeError(f"{template.path} did not render an object with apiVersion, kind and metadata.name")
        return obj

    def evaluate_value(self, value: Value, scope: Scope) -> Any:
        if value.query is not None:
            return value.query.evaluate(scope)
        if value.text is not None:
            return self.render(value.text, scope)
        for row in value.rows:
            if row.when is None or truthy(row.when.evaluate(scope)):
                return row.value.evaluate(scope) if row.text is None else self.render(row.text, scope)
        return None

    # -- reads ---------------------------------------------------------------------------------------

    def cluster_for(self, scope: ClusterScope) -> Cluster:
        """The cluster an action or input names; ClusterUnavailable when a named one is not registered."""
        if scope == "management":
            return self.management
        if scope == "order":
            return self.order_cluster
        assert isinstance(scope, Text)
        name = self.render(scope)
        try:
            return self.clusters.resolve(name)
        except ClusterNotFound:
            raise ClusterUnavailable(f"cluster {go_quote(name)} is not registered") from None

    def ownership_labels(self) -> tuple[str, ...]:
        """The label keys every child (and delivered object) of the order carries."""
        children = self.kind.children
        return (children.name_label, children.namespace_label, children.cluster_label)

    def children_selector(self, api_version: str, kind: str) -> LabelSelector:
        """The labels a list of the order's children of a kind selects by: the ownership labels, and the stamp for
        the kinds whose children all carry it (``STAMPED_KINDS``: a member's caches of those hold only its own).
        A value no label can hold (a name of 64 characters) is only required to be there (``fitting_selector``):
        what the list answers is then kept only when ``is_child``, which compares every value."""
        return fitting_selector(self.children_labels(api_version, kind))

    def children_labels(self, api_version: str, kind: str) -> Mapping[str, str]:
        """The label map ``children_selector`` selects by."""
        if (api_version, kind) in self.stamped_kinds:
            return {**self.scope["childLabels"], **self.stamp}
        labels: Mapping[str, str] = self.scope["childLabels"]
        return labels

    def stamped(self, obj: Obj) -> Obj:
        """``obj`` with the stamp's labels when it is the order's own (it carries the order's name label, and its
        namespace and cluster labels when it has them); else ``obj`` as it is."""
        if not self.stamp:
            return obj
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        if not isinstance(meta, dict) or not isinstance(labels, dict):
            return obj
        children = self.kind.children
        own = {children.name_label: self.order["metadata"]["name"],
               children.namespace_label: self.order["metadata"].get("namespace", ""),
               children.cluster_label: self.request.cluster}
        if children.name_label not in labels or any(labels.get(k, v) != v for k, v in own.items()):
            return obj
        if all(labels.get(k) == v for k, v in self.stamp.items()):
            return obj
        return {**obj, "metadata": {**meta, "labels": {**labels, **self.stamp}}}

    def is_child(self, obj: Obj) -> bool:
        """The order's child: all three ownership labels match AND the name carries the prefix."""
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        expected: dict[str, str] = self.scope["childLabels"]
        if any(key not in labels or labels[key] != value for key, value in expected.items()):
            return False
        return str(meta.get("name", "")).startswith(self.scope["prefix"])

    def read(self, spec: Input) -> Any:
        api_version = self.render(spec.api_version)
        kind = self.render(spec.kind)
        namespace = self.render(spec.namespace) if spec.namespace is not None else None
        name = self.render(spec.object_name) if spec.object_name is not None else None
        try:
            cluster = self.cluster_for(spec.cluster)
            if spec.verb == "served":
                return cluster.serves(api_version, kind)
            if spec.verb == "get":
                assert name is not None
                try:
                    carries = (*self.ownership_labels(), *self.stamp) if spec.labelled else ()
                    return remember_secrets(cluster.get(api_version, kind, namespace or None, name, live=spec.live,
                                                        carries=carries))
                except NotFound:
                    return None
            labels = {self.render(k): self.render(v) for k, v in spec.labels}
            selector = fitting_selector(labels) if labels else None
            if spec.children_only:
                own = self.children_labels(api_version, kind)
                if not labels:
                    selector = fitting_selector(own)
                # The order's own labels narrow the list to what ``is_child`` keeps anyway, and make it one a shard
                # member's cache of its own children answers (a conflicting value: the list by ``labels`` alone).
                elif all(labels.get(key, value) == value for key, value in own.items()):
                    selector = fitting_selector({**labels, **own})
            try:
                items = remember_secrets(
                    cluster.list(api_version, kind, namespace or None, labels=selector, live=spec.live,
                                 reads=spec.reads).items)
            except NotFound:
                if spec.unserved_absent:
                    return []
                raise
        except ApiError as err:
            where = f"{namespace}/{name}" if namespace and name else (name or namespace or "")
            if spec.error is not None:
                text = self.render(spec.error, self.scope.child(error=str(err)))
            else:
                text = f"reading {kind} {where}: {err}".replace("  ", " ")
            raise ReadError(text, err) from None
        if isinstance(selector, str) and labels:  # a value no label can hold was only required to be there
            items = [item for item in items if carries_labels(item, labels)]
        if spec.children_only:
            items = [item for item in items if self.is_child(item)]
        if spec.where is not None:
            where_query = spec.where
            items = [item for item in items if truthy(where_query.evaluate(self.scope.child(item=item)))]
        if spec.sort_by is not None:
            sort_query = spec.sort_by
            items.sort(key=lambda item: sort_key(sort_query.evaluate(self.scope.child(item=item))))
        return items


def _one_line(source: str) -> str:
    return " ".join(source.split())[:200]


def go_quote(text: str) -> str:
    return str(FUNCTIONS["go_quote"].impl(text))


def requeue_seconds(ctx: PassContext, requeue: Requeue) -> float | None:
    """Seconds until the order should come back: a fixed duration, a query's number, or None."""
    if requeue.seconds is not None:
        return requeue.seconds
    if requeue.query is not None:
        value = ctx.evaluate(requeue.query)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return max(float(value), 0.0)
    return None


def as_delta(seconds: float | None) -> dt.timedelta | None:
    return None if seconds is None else dt.timedelta(seconds=seconds)


def sort_key(value: Any) -> tuple[int, Any]:
    """Orders mixed query results: booleans, then numbers, then anything else as text."""
    if isinstance(value, bool):
        return (0, int(value))
    if isinstance(value, (int, float)):
        return (1, value)
    return (2, "" if value is None else str(value))


def walk_objects(value: Any) -> Iterator[Obj]:
    """The objects in a query's answer: one object, or a list of them (nulls skipped)."""
    if isinstance(value, dict) and "metadata" in value:
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from walk_objects(item)


__all__ = [
    "ClusterUnavailable", "ExprError", "PassContext",
    "ReadError", "RuleRuntimeError", "Scope", "as_delta", "requeue_seconds", "sort_key",
    "truthy", "walk_objects",
]
