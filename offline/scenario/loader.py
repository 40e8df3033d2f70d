"""Read a scenario file into the model, checking every form the contract describes.

Errors name ``file:line:col`` and say what is wrong; the loader keeps going past a bad
step or object so one run reports every mistake of a file. A YAML file whose first
document has no top-level ``scenario:`` key is a fixture: ``load_scenario`` returns None.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from engine import durations
from engine.clock import parse_time
from engine.cluster.api import ERRORS_BY_NAME, MANAGEMENT_CLUSTER, VERBS
from offline.scenario import model as m
from offline.scenario.model import Pos, ScenarioError, ScenarioErrors
from offline.scenario.yamlnode import Node, load_documents

__all__ = ["FAIL_ERRORS", "is_scenario_document", "load_scenario", "parse_duration"]

FAIL_ERRORS = ("Conflict", "NotFound", "AlreadyExists", "Invalid", "ServerError", "Timeout",
               *sorted(set(ERRORS_BY_NAME) - {"Conflict", "NotFound", "AlreadyExists", "Invalid",
                                               "ServerError", "Timeout"}))
"""Errors a ``fail`` step may inject: the contract's six, then the rest of the interface's."""

TOP_KEYS = ("scenario", "rules", "clusters", "unserved", "now", "objects", "steps")
WRITE_STEPS = ("create", "update", "patchStatus", "delete", "removeFinalizers")
STEP_KEYS = (*WRITE_STEPS, "settle", "advance", "reconcile", "fail", "serve", "deregister", "register",
             "unreachable", "reachable", "expect")
ERROR_STEPS = (*WRITE_STEPS, "reconcile")
ASSERTION_KEYS = ("present", "absent", "conditions", "message", "count", "requeueAfter", "secretData",
                  "calls", "metric", "noSecretLeak")
CONDITION_STATUSES = ("True", "False", "Unknown")
REF_KEYS = ("apiVersion", "kind", "namespace", "name")

T = TypeVar("T")


def is_scenario_document(doc: Node) -> bool:
    return doc.is_map and "scenario" in doc.value


def load_scenario(path: Path, display: str | None = None) -> m.Scenario | None:
    """The scenario in ``path``, None for a fixture; ScenarioErrors when it is invalid."""
    shown = display if display is not None else str(path)
    try:
        docs = load_documents(path, shown)
    except ScenarioError as exc:
        raise ScenarioErrors([exc]) from None
    docs = [d for d in docs if d.value is not None]
    if not docs or not is_scenario_document(docs[0]):
        return None
    if len(docs) > 1:
        raise ScenarioErrors([docs[1].error("a scenario file holds one YAML document; put objects under `objects:`")])
    return _Loader(path, shown).scenario(docs[0])


def parse_duration(node: Node) -> dt.timedelta:
    """A Go duration (``90s``, ``10m``, ``1h30m``); ``0`` alone needs no unit. Never negative."""
    value = node.value
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise node.error(f"expected a duration such as 90s, 10m or 1h30m, got {_show(value)}")
    if isinstance(value, int):
        if value != 0:
            raise node.error(f"a duration needs a unit: write {value}s, {value}m or {value}h")
        return dt.timedelta(0)
    try:
        ns = durations.parse_ns(value.strip())
    except durations.DurationError as exc:
        raise node.error(f"{exc} ({value!r}); write a Go duration such as 90s, 10m or 1h30m") from None
    if ns < 0:
        raise node.error(f"a duration cannot be negative ({value})")
    return durations.to_timedelta(ns)


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


class _Loader:
    def __init__(self, path: Path, display: str) -> None:
        self.path = path
        self.display = display
        self.errors: list[ScenarioError] = []
        self.clusters: tuple[str, ...] = ()

    def scenario(self, root: Node) -> m.Scenario:
        self._only(root, TOP_KEYS, "a scenario")
        title = self._guard(lambda: self._text(root.child("scenario"), "`scenario`"), "")
        rules = self._guard(lambda: self._rules(root), None)
        self.clusters = self._guard(lambda: self._clusters(root), ())
        no_unserved: tuple[m.Unserved, ...] = ()
        unserved = self._guard(lambda: self._unserved(root), no_unserved)
        now = self._guard(lambda: self._now(root), m.DEFAULT_NOW)
        objects = self._objects(root)
        steps = self._steps(root)
        if self.errors:
            raise ScenarioErrors(self.errors)
        return m.Scenario(self.display, title, root.pos, rules, self.clusters, unserved, now, objects, steps)

    # -- helpers ---------------------------------------------------------------------------------

    def _guard(self, parse: Callable[[], T], default: T) -> T:
        try:
            return parse()
        except ScenarioError as exc:
            self.errors.append(exc)
            return default

    def _only(self, node: Node, allowed: tuple[str, ...], what: str) -> None:
        """Reports unknown keys (the usual typo) at the key."""
        if not node.is_map:
            raise node.error(f"{what} must be a mapping, got {_show(node.value)}")
        for key in node.value:
            if str(key) not in allowed:
                self.errors.append(ScenarioError(node.key_pos(key), f"unknown key {str(key)!r} in {what}; "
                                                 f"expected one of: {', '.join(allowed)}"))

    def _map(self, node: Node, what: str, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> Node:
        if not node.is_map:
            raise node.error(f"{what} must be a mapping, got {_show(node.value)}")
        for key in node.value:
            if str(key) not in allowed:
                raise ScenarioError(node.key_pos(key), f"unknown key {str(key)!r} in {what}; "
                                    f"expected one of: {', '.join(allowed)}")
        for key in required:
            if key not in node.value:
                raise node.error(f"{what} needs `{key}`")
        return node

    @staticmethod
    def _text(node: Node, what: str, *, empty: bool = False) -> str:
        if not isinstance(node.value, str):
            raise node.error(f"{what} must be a string, got {_show(node.value)}")
        if not empty and not node.value.strip():
            raise node.error(f"{what} must not be empty")
        return str(node.value)

    def _opt_text(self, node: Node, key: str, what: str) -> str | None:
        if not node.has(key) or node.value[key] is None:
            return None
        return self._text(node.child(key), f"`{key}` of {what}")

    @staticmethod
    def _int(node: Node, what: str, *, minimum: int = 0) -> int:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int):
            raise node.error(f"{what} must be a whole number, got {_show(value)}")
        if value < minimum:
            raise node.error(f"{what} must be at least {minimum}, got {value}")
        return int(value)

    @staticmethod
    def _number(node: Node, what: str) -> float:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise node.error(f"{what} must be a number, got {_show(value)}")
        return float(value)

    def _list(self, node: Node, what: str) -> list[Node]:
        if not node.is_seq:
            raise node.error(f"{what} must be a list, got {_show(node.value)}")
        return list(node.elements())

    def _cluster(self, node: Node) -> str:
        name = self._text(node, "`cluster`", empty=True)
        if name != MANAGEMENT_CLUSTER and name not in self.clusters:
            declared = ", ".join(repr(c) for c in self.clusters) or "none"
            raise node.error(f"cluster {name!r} is not declared under `clusters:` (declared: {declared}; "
                             f"\"\" is the management cluster)")
        return name

    def _cluster_beside(self, node: Node) -> str:
        return self._cluster(node.child("cluster")) if node.has("cluster") else MANAGEMENT_CLUSTER

    def _labels(self, node: Node, what: str) -> tuple[tuple[str, str], ...]:
        if node.value is None:
            return ()
        if not node.is_map:
            raise node.error(f"{what} must be a mapping of label to value, got {_show(node.value)}")
        out = []
        for key, value in node.items():
            if isinstance(value.value, bool) or not isinstance(value.value, (str, int, float)):
                raise value.error(f"label {key!r} must have a string value, got {_show(value.value)}")
            out.append((key, str(value.value)))
        return tuple(out)

    # -- the file's top level --------------------------------------------------------------------

    def _rules(self, root: Node) -> tuple[tuple[str, Pos], ...] | None:
        if not root.has("rules") or root.value["rules"] is None:
            return None
        return tuple((self._text(n, "a rule name"), n.pos) for n in self._list(root.child("rules"), "`rules`"))

    def _clusters(self, root: Node) -> tuple[str, ...]:
        if not root.has("clusters") or root.value["clusters"] is None:
            return ()
        names: list[str] = []
        for node in self._list(root.child("clusters"), "`clusters`"):
            name = self._text(node, "a cluster name")
            if name in names:
                raise node.error(f"cluster {name!r} is declared twice")
            names.append(name)
        return tuple(names)

    def _unserved(self, root: Node) -> tuple[m.Unserved, ...]:
        if not root.has("unserved") or root.value["unserved"] is None:
            return ()
        out = []
        for node in self._list(root.child("unserved"), "`unserved`"):
            self._map(node, "an `unserved` entry", ("cluster", "apiVersion", "kind"), ("apiVersion", "kind"))
            out.append(m.Unserved(
                self._cluster_beside(node),
                self._text(node.child("apiVersion"), "`apiVersion`"),
                self._text(node.child("kind"), "`kind`"),
                node.pos,
            ))
        return tuple(out)

    def _now(self, root: Node) -> dt.datetime:
        if not root.has("now") or root.value["now"] is None:
            return m.DEFAULT_NOW
        node = root.child("now")
        value = node.value
        if isinstance(value, dt.datetime):
            return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)
        text = self._text(node, "`now`")
        try:
            return parse_time(text)
        except ValueError:
            raise node.error(f"`now` must be an RFC 3339 time such as \"2026-01-01T00:00:00Z\", got {text!r}") from None

    # -- objects ---------------------------------------------------------------------------------

    def _objects(self, root: Node) -> tuple[m.Seed, ...]:
        if not root.has("objects") or root.value["objects"] is None:
            return ()
        seeds: list[m.Seed] = []
        try:
            entries = self._list(root.child("objects"), "`objects`")
        except ScenarioError as exc:
            self.errors.append(exc)
            return ()
        for entry in entries:
            try:
                seeds.extend(self._object_entry(entry))
            except ScenarioError as exc:
                self.errors.append(exc)
        return tuple(seeds)

    def _object_entry(self, entry: Node) -> list[m.Seed]:
        self._map(entry, "an `objects` entry", ("object", "file", "cluster"))
        cluster = self._cluster_beside(entry)
        if entry.has("object") == entry.has("file"):
            raise entry.error("an `objects` entry needs exactly one of `object` or `file`")
        if entry.has("object"):
            node = entry.child("object")
            self._object_identity(node, "an object", need_api_version=True)
            return [m.Seed(node.plain(), cluster, node.pos)]
        path, display = self._fixture(entry.child("file"))
        seeds = []
        for doc in load_documents(path, display):
            if doc.value is None:
                continue
            self._object_identity(doc, "a fixture object", need_api_version=True)
            seeds.append(m.Seed(doc.plain(), cluster, doc.pos))
        return seeds

    def _fixture(self, file_node: Node) -> tuple[Path, str]:
        """A fixture file named relative to the scenario: its path and how to show it."""
        relative = self._text(file_node, "`file`")
        path = self.path.parent / relative
        display = os.path.normpath(os.path.join(os.path.dirname(self.display), relative))
        if not path.is_file():
            raise file_node.error(f"fixture file {relative!r} not found (looked for {display})")
        return path, display

    def _status_from(self, file_node: Node, body: Node) -> dict[str, Any]:
        """The `status` mapping of a fixture file, for a status patch many scenarios write alike."""
        if body.has("status"):
            raise body.error("`patchStatus` takes its status from `status` or from `statusFrom`, not both")
        path, display = self._fixture(file_node)
        docs = [doc for doc in load_documents(path, display) if doc.value is not None]
        if len(docs) != 1 or not docs[0].is_map or not docs[0].has("status") or not docs[0].child("status").is_map:
            raise file_node.error(f"{display} must hold one document with a `status` mapping to merge")
        self._map(docs[0], "a status fixture", ("status",))
        status: dict[str, Any] = docs[0].child("status").plain()
        return status

    def _object_identity(self, node: Node, what: str, *, need_api_version: bool) -> m.Ref:
        """The reference a (partial) object names: apiVersion, kind, metadata.name and .namespace."""
        if not node.is_map:
            raise node.error(f"{what} must be a mapping, got {_show(node.value)}")
        if need_api_version and not node.has("apiVersion"):
            raise node.error(f"{what} needs `apiVersion`")
        api_version = self._opt_text(node, "apiVersion", what)
        if not node.has("kind"):
            raise node.error(f"{what} needs `kind`")
        kind = self._text(node.child("kind"), "`kind`")
        if not node.has("metadata"):
            raise node.error(f"{what} needs `metadata` with a `name`")
        meta = node.child("metadata")
        if not meta.is_map:
            raise meta.error(f"`metadata` must be a mapping, got {_show(meta.value)}")
        if not meta.has("name"):
            raise meta.error("`metadata` needs a `name`")
        name = self._text(meta.child("name"), "`metadata.name`")
        namespace = self._opt_text(meta, "namespace", "metadata") if meta.has("namespace") else None
        return m.Ref(api_version, kind, namespace or None, name, node.pos)

    def _ref(self, node: Node, what: str = "an object reference") -> m.Ref:
        """``{apiVersion, kind, namespace, name}``, or an object's ``{apiVersion, kind, metadata}``."""
        if node.has("metadata"):
            self._map(node, what, ("apiVersion", "kind", "metadata"))
            return self._object_identity(node, what, need_api_version=False)
        self._map(node, what, REF_KEYS, ("kind", "name"))
        return m.Ref(
            self._opt_text(node, "apiVersion", what),
            self._text(node.child("kind"), "`kind`"),
            self._opt_text(node, "namespace", what),
            self._text(node.child("name"), "`name`"),
            node.pos,
        )

    # -- steps -----------------------------------------------------------------------------------

    def _steps(self, root: Node) -> tuple[m.Step, ...]:
        if not root.has("steps"):
            self.errors.append(root.error("a scenario needs `steps:`"))
            return ()
        try:
            entries = self._list(root.child("steps"), "`steps`")
        except ScenarioError as exc:
            self.errors.append(exc)
            return ()
        steps = []
        for index, entry in enumerate(entries, 1):
            try:
                steps.append(self._step(index, entry))
            except _Reported:
                continue
            except ScenarioError as exc:
                self.errors.append(exc)
        return tuple(steps)

    def _one_of(self, node: Node, keys: tuple[str, ...], extra: tuple[str, ...], what: str) -> str:
        if not node.is_map:
            raise node.error(f"{what} must be a mapping with one of: {', '.join(keys)}; got {_show(node.value)}")
        found = [str(k) for k in node.value if str(k) in keys]
        for key in node.value:
            if str(key) not in keys and str(key) not in extra:
                raise ScenarioError(node.key_pos(key), f"unknown key {str(key)!r} in {what}; expected one of: "
                                    f"{', '.join(keys)} (with {', '.join(extra)} beside it)")
        if len(found) != 1:
            named = f" (found {', '.join(found)})" if found else ""
            raise node.error(f"{what} needs exactly one of: {', '.join(keys)}{named}")
        return found[0]

    def _step(self, index: int, node: Node) -> m.Step:
        verb = self._one_of(node, STEP_KEYS, ("cluster", "expectError", "statusFrom"), "a step")
        if node.has("statusFrom") and verb != "patchStatus":
            raise ScenarioError(node.key_pos("statusFrom"), f"`statusFrom` goes with `patchStatus`, not with `{verb}`")
        body = node.child(verb)
        cluster = self._cluster_beside(node)
        expect_error = None
        if node.has("expectError"):
            if verb not in ERROR_STEPS:
                raise ScenarioError(node.key_pos("expectError"),
                                    f"`expectError` goes with {', '.join(ERROR_STEPS)}, not with `{verb}`")
            expect_error = self._expect_error(node.child("expectError"))
        base: dict[str, Any] = {"index": index, "pos": node.pos, "cluster": cluster, "expect_error": expect_error}
        if verb == "create":
            ref = self._object_identity(body, "the object to create", need_api_version=True)
            return m.Create(**base, obj=body.plain(), ref=ref)
        if verb == "update":
            ref = self._object_identity(body, "the object to update", need_api_version=False)
            return m.Update(**base, obj=body.plain(), ref=ref)
        if verb == "patchStatus":
            ref = self._object_identity(body, "the object to patch", need_api_version=False)
            if node.has("statusFrom"):
                return m.PatchStatus(**base, status=self._status_from(node.child("statusFrom"), body), ref=ref)
            if not body.has("status") or not isinstance(body.value["status"], dict):
                raise body.error("`patchStatus` needs a `status` mapping to merge (or `statusFrom:` a fixture file)")
            return m.PatchStatus(**base, status=body.child("status").plain(), ref=ref)
        if verb == "delete":
            return m.Delete(**base, ref=self._ref(body))
        if verb == "removeFinalizers":
            return m.RemoveFinalizers(**base, ref=self._ref(body))
        if verb == "settle":
            if body.value is not None and body.value != {}:
                raise body.error("`settle` takes no options: write `settle: {}`")
            return m.Settle(**base)
        if verb == "advance":
            return m.Advance(**base, delta=parse_duration(body))
        if verb == "reconcile":
            return m.Reconcile(**base, ref=self._ref(body, "the order reference"))
        if verb == "fail":
            return self._fail(base, body)
        if verb == "serve":
            self._map(body, "`serve`", ("apiVersion", "kind", "cluster"), ("apiVersion", "kind"))
            if body.has("cluster"):
                base["cluster"] = self._cluster(body.child("cluster"))
            return m.Serve(**base, api_version=self._text(body.child("apiVersion"), "`apiVersion`"),
                           kind=self._text(body.child("kind"), "`kind`"))
        if verb in ("register", "deregister", "unreachable", "reachable"):
            return self._register(base, node, body, verb)
        return m.Expect(**base, assertions=self._assertions(body))

    def _expect_error(self, node: Node) -> tuple[str, ...]:
        if isinstance(node.value, str):
            parts = [node.value]
        elif node.is_seq:
            parts = [self._text(n, "an expected error substring", empty=True) for n in node.elements()]
        else:
            raise node.error(f"`expectError` must be a substring or a list of substrings, got {_show(node.value)}")
        if not parts:
            raise node.error("`expectError` needs at least one substring")
        return tuple(str(p) for p in parts)

    def _verb(self, node: Node) -> str:
        verb = self._text(node, "a verb")
        if verb not in VERBS:
            raise node.error(f"unknown verb {verb!r}; expected one of: {', '.join(VERBS)}")
        return verb

    def _fail(self, base: dict[str, Any], body: Node) -> m.Fail:
        keys = ("verb", "apiVersion", "kind", "namespace", "name", "error", "times")
        self._map(body, "`fail`", keys, ("error",))
        verb = self._verb(body.child("verb")) if body.has("verb") and body.value["verb"] is not None else None
        error = self._text(body.child("error"), "`error`")
        if error not in FAIL_ERRORS:
            raise body.child("error").error(f"unknown error {error!r}; expected one of: {', '.join(FAIL_ERRORS)}")
        times = self._int(body.child("times"), "`times`", minimum=1) if body.has("times") else 1
        text = {key: self._opt_text(body, key, "`fail`") for key in ("apiVersion", "kind", "namespace", "name")}
        return m.Fail(**base, call_verb=verb, api_version=text["apiVersion"], kind=text["kind"],
                      namespace=text["namespace"], name=text["name"], error=error, times=times)

    def _register(self, base: dict[str, Any], node: Node, body: Node, verb: str) -> m.Step:
        if body.is_map and body.has("cluster"):
            self._map(body, f"`{verb}`", ("cluster",))
            target_node = body.child("cluster")
        elif node.has("cluster") and body.value in (None, {}):
            target_node = node.child("cluster")
        else:
            raise body.error(f"`{verb}` names its cluster: write `{verb}: {{cluster: edge-1}}`")
        target = self._cluster(target_node)
        if target == MANAGEMENT_CLUSTER:
            raise target_node.error(f"the management cluster cannot {verb}; name a target cluster")
        base = {**base, "cluster": target}
        step = {"register": m.Register, "deregister": m.Deregister, "unreachable": m.Unreachable,
                "reachable": m.Reachable}[verb]
        return step(**base, target=target)

    # -- assertions ------------------------------------------------------------------------------

    def _assertions(self, body: Node) -> tuple[m.Assertion, ...]:
        items = self._list(body, "`expect`")
        if not items:
            raise body.error("`expect` needs at least one assertion")
        out = []
        errors_before = len(self.errors)
        for index, item in enumerate(items, 1):
            try:
                out.append(self._assertion(index, item))
            except ScenarioError as exc:
                self.errors.append(exc)
        if len(self.errors) > errors_before:
            # Already reported; raise to drop the step without reporting it twice.
            raise _Reported()
        return tuple(out)

    def _assertion(self, index: int, node: Node) -> m.Assertion:
        verb = self._one_of(node, ASSERTION_KEYS, ("cluster",), "an assertion")
        body = node.child(verb)
        base: dict[str, Any] = {"index": index, "pos": node.pos, "cluster": self._cluster_beside(node)}
        if verb == "present":
            ref = self._object_identity(body, "the expected object", need_api_version=False)
            return m.Present(**base, expected=body.plain(), ref=ref)
        if verb == "absent":
            return m.Absent(**base, ref=self._ref(body))
        if verb == "conditions":
            return self._conditions(base, body)
        if verb == "message":
            self._map(body, "`message`", ("ref", "type", "contains", "excludes"), ("ref", "type"))
            contains = self._opt_text(body, "contains", "`message`") if body.has("contains") else None
            excludes = self._opt_text(body, "excludes", "`message`") if body.has("excludes") else None
            if contains is None and excludes is None:
                raise body.error("`message` needs `contains` or `excludes`")
            return m.Message(**base, ref=self._ref(body.child("ref"), "the order reference"),
                             type=self._text(body.child("type"), "`type`"), contains=contains, excludes=excludes)
        if verb == "count":
            self._map(body, "`count`", ("apiVersion", "kind", "namespace", "labels", "equals"), ("kind", "equals"))
            ref = m.Ref(self._opt_text(body, "apiVersion", "`count`"), self._text(body.child("kind"), "`kind`"),
                        self._opt_text(body, "namespace", "`count`"), "", body.pos)
            labels = self._labels(body.child("labels"), "`labels`") if body.has("labels") else ()
            return m.Count(**base, ref=ref, labels=labels, equals=self._int(body.child("equals"), "`equals`"))
        if verb == "requeueAfter":
            return m.RequeueAfter(**base, delta=None if body.value is None else parse_duration(body))
        if verb == "secretData":
            return self._secret_data(base, body)
        if verb == "calls":
            return self._calls({**base, "any_cluster": not node.has("cluster")}, body)
        if verb == "metric":
            self._map(body, "`metric`", ("name", "labels", "equals", "atLeast"), ("name",))
            if body.has("equals") == body.has("atLeast"):
                raise body.error("`metric` needs exactly one of `equals` or `atLeast`")
            labels = self._labels(body.child("labels"), "`labels`") if body.has("labels") else ()
            return m.Metric(**base, name=self._text(body.child("name"), "`name`"), labels=labels,
                            equals=self._number(body.child("equals"), "`equals`") if body.has("equals") else None,
                            at_least=self._number(body.child("atLeast"), "`atLeast`") if body.has("atLeast") else None)
        if body.value is not None and body.value != {}:
            raise body.error("`noSecretLeak` takes no options: write `noSecretLeak: {}`")
        return m.NoSecretLeak(**base)

    def _conditions(self, base: dict[str, Any], body: Node) -> m.Conditions:
        if not body.is_map:
            raise body.error(f"`conditions` must be a mapping, got {_show(body.value)}")
        if not body.has("ref"):
            raise body.error("`conditions` needs `ref`")
        checks: list[tuple[str, m.ConditionCheck]] = []
        for key, value in body.items():
            if key == "ref":
                continue
            checks.append((key, self._condition_check(value)))
        if not checks:
            raise body.error("`conditions` names no condition: add e.g. `Ready: \"True/AllReady\"`")
        return m.Conditions(**base, ref=self._ref(body.child("ref"), "the order reference"), expected=tuple(checks))

    @staticmethod
    def _condition_check(node: Node) -> m.ConditionCheck:
        value = node.value
        if isinstance(value, bool):
            return ("True" if value else "False", None)
        if not isinstance(value, str):
            raise node.error(f"expected \"Status/Reason\", \"Status\" or \"Absent\", got {_show(value)}")
        if value == "Absent":
            return "Absent"
        status, slash, reason = value.partition("/")
        if status not in CONDITION_STATUSES:
            raise node.error(f"condition status must be one of {', '.join(CONDITION_STATUSES)} "
                             f"(or \"Absent\"), got {status!r}")
        if slash and not reason:
            raise node.error(f"no reason after the slash in {value!r}")
        return (status, reason if slash else None)

    def _secret_data(self, base: dict[str, Any], body: Node) -> m.SecretData:
        self._map(body, "`secretData`", ("ref", "key", "equals", "sameAs", "differsFrom"), ("ref", "key"))
        modes = [k for k in ("equals", "sameAs", "differsFrom") if body.has(k)]
        if len(modes) != 1:
            raise body.error("`secretData` needs exactly one of `equals`, `sameAs` or `differsFrom`")
        key = self._text(body.child("key"), "`key`")
        equals = self._text(body.child("equals"), "`equals`", empty=True) if body.has("equals") else None
        same_as = self._secret_value(body.child("sameAs"), key) if body.has("sameAs") else None
        differs = self._secret_value(body.child("differsFrom"), key) if body.has("differsFrom") else None
        return m.SecretData(**base, ref=self._ref(body.child("ref")), key=key, equals=equals,
                            same_as=same_as, differs_from=differs)

    def _secret_value(self, node: Node, default_key: str) -> m.SecretValue:
        self._map(node, "the other Secret value", ("ref", "key", "cluster"), ("ref",))
        key = self._text(node.child("key"), "`key`") if node.has("key") else default_key
        return m.SecretValue(self._ref(node.child("ref")), key, self._cluster_beside(node))

    def _calls(self, base: dict[str, Any], body: Node) -> m.Calls:
        keys = ("verbs", "verb", "apiVersion", "kind", "namespace", "name", "equals")
        self._map(body, "`calls`", keys, ("equals",))
        if body.has("verbs") and body.has("verb"):
            raise body.error("`calls` takes `verbs` or `verb`, not both")
        nodes: list[Node] | None = None
        if body.has("verbs"):
            nodes = self._list(body.child("verbs"), "`verbs`")
        elif body.has("verb"):
            nodes = [body.child("verb")]
        verbs = None if nodes is None else tuple(self._verb(n) for n in nodes)
        text = {key: self._opt_text(body, key, "`calls`") for key in ("apiVersion", "kind", "namespace", "name")}
        return m.Calls(**base, verbs=verbs, api_version=text["apiVersion"], kind=text["kind"],
                       namespace=text["namespace"], name=text["name"],
                       equals=self._int(body.child("equals"), "`equals`"))


class _Reported(ScenarioError):
    """A step whose assertions were already reported one by one."""

    def __init__(self) -> None:
        Exception.__init__(self, "reported")
