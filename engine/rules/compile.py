"""Compile rule files into a CompiledKind: load (load.py), compile expressions (here), check names (check.py).

Stages, each reporting every error it finds with file:line:col:
1. load the file and its includes (source.py), 2. validate each against the schema
(schema.py), 3. merge (includes first), 4. compile every query, text and template,
5. check that every name an expression reads is defined where it is read, and that
every condition type and reason written is declared.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, Literal

from engine import durations
from engine.expr.errors import ExprSyntaxError
from engine.expr.jinja import ObjectTemplate, Text, compile_document, compile_object_template, compile_text
from engine.expr.jmes import Query, compile_query
from engine.rules import model, schema
from engine.rules.check import check_kind, pass_names_in_watch
from engine.rules.errors import Position, RuleError, RuleErrors
from engine.rules.limits import MAX_RULE_FILE_BYTES, FileTooLarge, read_limited, refusal
from engine.rules.load import Loader, Located, Merged, Path_, display
from engine.rules.names import about_broken, check_names
from engine.rules.projections import with_reads
from engine.rules.rbac import constant_address
from engine.rules.schema_paths import Site, word_position
from engine.rules.source import SourceFile
from engine.rules.stable import stable_values

_LOOKS_LIKE_DURATION = re.compile(r"^\s*-?[0-9]")
_TEMPLATE_KEYS = (re.compile(r"^apiVersion:", re.M), re.compile(r"^kind:", re.M),
                  re.compile(r"^metadata:\s*(\{.*\bname\b.*|\n(?:[ \t].*\n)*?[ \t]+name:)", re.M))


class Compiler:
    """Compiles one rule file (stage 4: every query, text and template); collects every error."""

    def __init__(self, rules_dir: Path, templates_root: Path) -> None:
        self.rules_dir = rules_dir
        self.templates_root = templates_root
        self.errors: list[RuleError] = []
        self.loader = Loader(self.errors)
        self.templates: dict[str, ObjectTemplate] = {}
        self.templates_dir = templates_root
        self.sites: list[Site] = []
        """Every compiled expression and template with where it came from (for `engine lint`'s path check)."""
        self.watch_sites: list[tuple[Site, str, str, str]] = []
        """A declared watch's queries: (site, apiVersion, kind watched, key), checked against that kind's CRD."""
        self.documents: list[Text] = []
        """Every compiled value text (not path-checked by the lint, but what it names is read)."""
        self.pass_names: frozenset[str] = frozenset()
        """The names of the pass (context, inputs, values) a watch's query cannot read."""
        self.kind: model.CompiledKind | None = None
        """The kind as far as it compiled, its broken sections stood in for, also when the file has errors:
        `engine lint` checks its paths whatever else is wrong in the file."""

    # -- helpers ---------------------------------------------------------------------------------

    def error(self, src: SourceFile, path: Path_, message: str, *, value: bool = False) -> None:
        position = src.locate_value(path) if value else src.locate(path)
        self.errors.append(RuleError(position, message))

    def query(self, loc: Located, key: str | int, source: str | None) -> Query | None:
        if source is None:
            return None
        try:
            compiled = compile_query(source, str(loc.src.locate_value((*loc.path, key))))
        except ExprSyntaxError as err:
            self.text_errors(loc, key, err)
            return None
        self.sites.append(Site(compiled, loc.src, (*loc.path, key)))
        return compiled

    def text(self, loc: Located, key: str | int, source: str | None) -> Text | None:
        if source is None:
            return None
        try:
            compiled = compile_text(source, str(loc.src.locate_value((*loc.path, key))))
        except ExprSyntaxError as err:
            self.text_errors(loc, key, err)
            return None
        self.sites.append(Site(compiled, loc.src, (*loc.path, key)))
        return compiled

    def document(self, loc: Located, key: str, source: str) -> Text | None:
        """A value's text: rendered as written, its final newline included."""
        try:
            compiled = compile_document(source, str(loc.src.locate_value((*loc.path, key))))
            self.documents.append(compiled)
            return compiled
        except ExprSyntaxError as err:
            self.text_errors(loc, key, err)
            return None

    def text_errors(self, loc: Located, key: str | int, err: ExprSyntaxError) -> None:
        """Every problem of a rule string or query, each at its token in the rule file."""
        for problem in err.problems:
            position = loc.src.locate_token((*loc.path, key), problem.offset)
            self.errors.append(RuleError(position, f"{key}: {problem.message}"))

    def requeue(self, loc: Located, key: str, value: str | None) -> model.Requeue:
        if value is None:
            return model.NO_REQUEUE
        if durations.looks_like_duration(value):
            try:
                return model.Requeue(seconds=durations.parse_seconds(value))
            except durations.DurationError as err:
                self.error(loc.src, (*loc.path, key), f"{key}: {err}", value=True)
                return model.NO_REQUEUE
        if _LOOKS_LIKE_DURATION.match(value):
            self.error(loc.src, (*loc.path, key), f"{key}: {value!r} is neither a Go duration (such as 10s, 1m30s "
                       "or 720h: a number and a unit, no space) nor a JMESPath expression giving seconds", value=True)
            return model.NO_REQUEUE
        query = self.query(loc, key, value)
        return model.Requeue(query=query) if query else model.NO_REQUEUE

    def locate_name(self, expr: object, name: str) -> Position | None:
        """Where a name sits in a compiled expression or template (for "unknown name" at its token)."""
        site = next((s for s in self.sites if s.expr is expr), None)
        return None if site is None else word_position(site, name, root=True)

    def cluster(self, loc: Located, value: str) -> model.ClusterScope:
        """`management`, `order`, or a text naming a registered cluster."""
        if value in ("management", "order"):
            return "management" if value == "management" else "order"
        return self.text(loc, "cluster", value) or "management"

    def position(self, loc: Located) -> Position:
        return loc.src.locate(loc.path)

    # -- stage 4-5: compile and check ----------------------------------------------------------

    def compile(self, path: Path) -> model.CompiledKind | None:
        merged = self.loader.load(path)
        if merged is None:
            return None
        src = merged.main
        missing = [r for r in ("order", "conditions", "children", "teardown") if r not in merged.single]
        for required in missing:
            if required not in self.loader.pruned_sections:  # an invalid section was reported already
                self.error(src, (), f"missing required section {required!r} (in this file or an include)")
        # Stage 4 runs on every section there is, so its errors come out with the earlier ones (a missing `kind`,
        # reported, is stood in for by the file's name).
        kind_name = str(src.data.get("kind") or path.stem)
        conditions = self.compile_conditions(merged.single["conditions"]) if "conditions" in merged.single else None
        children = self.compile_children(merged.single["children"]) if "children" in merged.single else None
        templates_dir = self.templates_root / (
            merged.single["templates"].item if "templates" in merged.single else kind_name.lower())
        self.templates = {}
        self.templates_dir = templates_dir
        inputs = {name: self.compile_input(name, loc) for name, loc in merged.maps.get("inputs", {}).items()}
        values = {name: self.compile_value(name, loc) for name, loc in merged.maps.get("values", {}).items()}
        self.pass_names = pass_names_in_watch(inputs, values)
        gates = tuple(gate for i, loc in enumerate(merged.lists.get("gates", [])) for gate in self.compile_gate(i, loc))
        steps = tuple(self.compile_step(loc) for loc in merged.lists.get("steps", []))
        refresh: tuple[model.Outcome, ...] = ()
        if "result" in merged.single:
            result_loc = merged.single["result"]
            rows = [Located(row, result_loc.src, (*result_loc.path, "refresh", i))
                    for i, row in enumerate(result_loc.item.refresh)]
            refresh = tuple(
                model.Outcome("", compile_text(""), self.requeue(row, "requeue", row.item.requeue),
                              self.position(row), self.query(row, "when", row.item.when))
                for row in rows
            )
        teardown = self.compile_teardown(merged.single["teardown"]) if "teardown" in merged.single else None
        index_loc = merged.single.get("indexKey")
        index_query = self.query(Located(None, index_loc.src, ()), "indexKey", index_loc.item) if index_loc else None
        # A missing or broken section (reported) is stood in for, so the later stages check the rest.
        complete = not missing and conditions is not None and children is not None and teardown is not None
        order: schema.OrderSpec = merged.single["order"].item if "order" in merged.single else _NO_ORDER
        key = f"{order.apiVersion}/{kind_name}"
        teardown = teardown or model.Teardown(_NULL, model.NO_REQUEUE, ())
        watches = self.derive_watches(key, order, merged, children, teardown, steps)
        in_watches = {id(site.expr) for site, *_ in self.watch_sites}  # they read the watched object, no pass name
        inputs = with_reads(inputs, [*(site.expr for site in self.sites if id(site.expr) not in in_watches),
                                     *self.documents])
        compiled = model.CompiledKind(
            name=path.stem, api_version=order.apiVersion, kind=kind_name, plural=order.plural,
            finalizer=order.finalizer, field_manager=order.fieldManager, conditions=conditions or _NO_CONDITIONS,
            children=children or _NO_CHILDREN, inputs=inputs, values=values, gates=gates, steps=steps, refresh=refresh,
            teardown=teardown, watches=watches, index_query=index_query, templates=dict(self.templates),
            origin=src.locate(()), index_origin=self.position(index_loc) if index_loc else next(
                (w.origin for w in watches if w.mapping == "referenced"), src.locate(())),
        )
        self.kind = compiled
        found = len(self.errors)
        check_kind(compiled, self.errors, self.locate_name)
        check_names(compiled, self.errors)
        self.errors[found:] = [e for e in self.errors[found:] if not about_broken(e, self.loader.broken)
                               and not (conditions is None and _UNDECLARED in e.message)]
        if self.errors or not complete:
            return None
        return dataclasses.replace(compiled, stable_values=stable_values(compiled))

    def compile_conditions(self, loc: Located) -> model.Conditions | None:
        spec: schema.ConditionsSpec = loc.item
        ready = spec.ready
        reasons = frozenset(spec.reasons)
        for field_name, reason in (("trueReason", ready.trueReason), ("falseReason", ready.falseReason)):
            if reason not in reasons:
                self.error(loc.src, (*loc.path, "ready", field_name), f"reason {reason!r} is not declared in reasons")
        return model.Conditions(tuple(spec.types), ready.type, ready.trueReason, ready.trueMessage, ready.falseReason,
                                ready.falseMessage, reasons, spec.maxMessageBytes, spec.truncateSuffix)

    def compile_children(self, loc: Located) -> model.Children | None:
        spec: schema.ChildrenSpec = loc.item
        missing = [k for k in ("name", "namespace", "cluster") if k not in spec.labels]
        extra = [k for k in spec.labels if k not in ("name", "namespace", "cluster")]
        if missing or extra:
            self.error(loc.src, (*loc.path, "labels"),
                       "children.labels names exactly three label keys: name, namespace and cluster")
            return None
        prefix = self.text(loc, "prefix", spec.prefix)
        namespace = self.text(loc, "namespace", spec.namespace)
        if prefix is None or namespace is None:
            return None
        cached = tuple((item.apiVersion, item.kind) for item in spec.cacheOnlyLabelled)
        return model.Children(prefix, namespace, spec.labels["name"], spec.labels["namespace"], spec.labels["cluster"],
                              cached, self.object_query(loc, "quietRemoval", spec.quietRemoval))

    def object_query(self, loc: Located, key: str, source: str | None) -> Query | None:
        """A query on an object of any kind (not the pass context): its syntax checked, its names not."""
        if source is None:
            return None
        try:
            return compile_query(source, str(loc.src.locate_value((*loc.path, key))))
        except ExprSyntaxError as err:
            self.text_errors(loc, key, err)
            return None

    def compile_input(self, name: str, loc: Located) -> model.Input:
        spec: schema.InputSpec = loc.item
        address: Any = spec.get or spec.list or spec.served
        verb: Literal["get", "list", "served"] = "get" if spec.get else "list" if spec.list else "served"
        sub = Located(address, loc.src, (*loc.path, verb))
        labels = tuple(
            (self.text(sub, "labels", k) or compile_text(k), self.text(sub, "labels", v) or compile_text(v))
            for k, v in (getattr(address, "labels", None) or {}).items()
        )
        return model.Input(
            name=name, verb=verb,
            api_version=self.text(sub, "apiVersion", address.apiVersion) or compile_text(""),
            kind=self.text(sub, "kind", address.kind) or compile_text(""),
            namespace=self.text(sub, "namespace", getattr(address, "namespace", None)),
            object_name=self.text(sub, "name", getattr(address, "name", None)),
            labels=labels, cluster=self.cluster(loc, spec.cluster), where=self.query(loc, "where", spec.where),
            sort_by=self.query(loc, "sortBy", spec.sortBy), children_only=spec.children, live=spec.live,
            unserved_absent=spec.unserved == "absent", error=self.text(loc, "error", spec.error),
            origin=self.position(loc), labelled=spec.labelled,
        )

    def compile_value(self, name: str, loc: Located) -> model.Value:
        spec = loc.item
        if isinstance(spec, str):
            return model.Value(name, self.query(loc.__class__(None, loc.src, loc.path[:-1]), name, spec), (),
                               self.position(loc))
        if isinstance(spec, schema.TextValueSpec):
            return model.Value(name, None, (), self.position(loc), text=self.document(loc, "text", spec.text))
        rows = tuple(self.compile_row(Located(row, loc.src, (*loc.path, i))) for i, row in enumerate(spec))
        return model.Value(name, None, rows, self.position(loc))

    def compile_row(self, loc: Located) -> model.Row:
        row: schema.RowSpec = loc.item
        text = self.document(loc, "text", row.text) if row.text is not None else None
        return model.Row(self.query(loc, "when", row.when), self.query(loc, "value", row.value) or _NULL,
                         self.position(loc), text)

    def compile_outcome(self, loc: Located, spec: Any, when: str | None = None) -> model.Outcome:
        """An outcome from any spec with reason, message and requeue (outcomes, waits, refusals)."""
        reason_text = self.text(loc, "reason", spec.reason) if "{{" in (spec.reason or "") else None
        return model.Outcome(spec.reason, self.text(loc, "message", spec.message) or compile_text(""),
                             self.requeue(loc, "requeue", spec.requeue), self.position(loc),
                             self.query(loc, "when", when), reason_text)

    def compile_error(self, loc: Located, spec: schema.ErrorSpec | None) -> model.ErrorReport | None:
        if spec is None:
            return None
        sub = Located(spec, loc.src, (*loc.path, "error"))
        return model.ErrorReport(spec.reason, self.text(sub, "message", spec.message) or compile_text(""),
                                 self.text(sub, "wrap", spec.wrap), spec.writeCondition)

    def compile_gate(self, index: int, loc: Located) -> tuple[model.Gate, ...]:
        """A gate; one with `verdicts` is a chain of gates, one per row, sharing its name, conditions and
        defaults (a row's name, when given, names its gate)."""
        spec: schema.GateSpec = loc.item
        conditions: tuple[str, ...] = ()
        own: list[tuple[str, str | None, Text | None]] = []
        only_when: list[tuple[str, Query]] = []
        if spec.conditions != "all":
            for i, item in enumerate(spec.conditions):
                if isinstance(item, str):
                    conditions += (item,)
                    continue
                conditions += (item.type,)
                sub = Located(item, loc.src, (*loc.path, "conditions", i))
                own.append((item.type, item.reason, self.text(sub, "message", item.message)))
                if (query := self.query(sub, "when", item.when)) is not None:
                    only_when.append((item.type, query))
        name = spec.name or f"gate {index + 1}"
        shared: dict[str, Any] = {"conditions": conditions, "own": tuple(own), "only_when": tuple(only_when)}
        if spec.verdicts is None:
            outcome = None if spec.finalizer else self.compile_outcome(loc, spec)
            return (model.Gate(name, self.query(loc, "when", spec.when), outcome=outcome, finalizer=spec.finalizer,
                               requeue=self.requeue(loc, "requeue", spec.requeue), origin=self.position(loc),
                               fail=spec.fail, error=self.compile_error(loc, spec.error), **shared),)
        gates: list[model.Gate] = []
        requeue = self.requeue(loc, "requeue", spec.requeue)
        gate_error = self.compile_error(loc, spec.error)  # one object every row shares: lint reports it once
        for i, row in enumerate(spec.verdicts):
            sub = Located(row, loc.src, (*loc.path, "verdicts", i))
            outcome = self.compile_outcome(sub, row)
            if row.requeue is None:
                outcome = dataclasses.replace(outcome, requeue=requeue)
            error = self.compile_error(sub, row.error) if row.error is not None else gate_error
            gates.append(model.Gate(row.name or name, self.query(sub, "when", row.when), outcome=outcome,
                                    finalizer=False, requeue=outcome.requeue, origin=self.position(sub),
                                    fail=spec.fail if row.fail is None else row.fail, error=error, **shared))
        return tuple(gates)

    def template(self, loc: Located, key: str, filename: str) -> ObjectTemplate | None:
        if filename in self.templates:
            return self.templates[filename]
        path = self.templates_dir / filename
        if not path.is_file():
            self.error(loc.src, (*loc.path, key), f"{key}: no template {display(path)}", value=True)
            return None
        try:
            text = read_limited(path, MAX_RULE_FILE_BYTES).decode("utf-8")
        except FileTooLarge as err:
            self.errors.append(RuleError(Position(display(path), 1, 1), refusal("template", err)))
            return None
        except UnicodeDecodeError:
            self.errors.append(RuleError(Position(display(path), 1, 1), "the template is not UTF-8 text"))
            return None
        except OSError as err:
            self.errors.append(RuleError(Position(display(path), 1, 1), f"cannot read the template: {err.strerror}"))
            return None
        try:
            compiled = compile_object_template(text, display(path))
        except ExprSyntaxError as err:
            for problem in err.problems:
                self.errors.append(RuleError(template_position(display(path), text, problem), problem.message))
            return None
        for pattern, what in zip(_TEMPLATE_KEYS, ("apiVersion", "kind", "metadata.name"), strict=True):
            if not pattern.search(text):
                self.errors.append(RuleError(Position(display(path), 1, 1),
                                             f"the template does not render an object with {what}"))
        self.templates[filename] = compiled
        self.sites.append(Site(compiled, None, ()))
        return compiled

    def compile_action(self, loc: Located) -> model.Action:
        spec = loc.item
        common: dict[str, Any] = {
            "origin": self.position(loc), "when": self.query(loc, "when", spec.when),
            "error": self.compile_error(loc, spec.error),
        }
        if isinstance(spec, schema.ApplySpec):
            foreign = None
            if spec.foreign is not None:
                foreign = self.compile_outcome(Located(spec.foreign, loc.src, (*loc.path, "foreign")), spec.foreign)
            return model.Action("apply", template=self.template(loc, "apply", spec.apply),
                                cluster=self.cluster(loc, spec.cluster),
                                adopt=spec.adopt, bind=spec.as_,
                                status_subresource=spec.status, foreign=foreign, once=spec.once,
                                foreign_keep_going=spec.foreign is not None and spec.foreign.continue_,
                                each=self.query(loc, "forEach", spec.for_each), **common)
        if isinstance(spec, schema.EnsureSpec):
            return model.Action("ensure", template=self.template(loc, "ensure", spec.ensure),
                                cluster=self.cluster(loc, spec.cluster),
                                bind=spec.as_, **common)
        if isinstance(spec, schema.PatchSpec):
            return model.Action("patch", target=spec.patch, query=self.query(loc, "body", spec.body),
                                status_subresource=spec.status, bind=spec.as_ or spec.patch,
                                cluster=self.cluster(loc, spec.cluster),
                                tolerate=frozenset(spec.tolerate), **common)
        if isinstance(spec, schema.DeleteSpec):
            return model.Action("delete", query=self.query(loc, "delete", spec.delete),
                                cluster=self.cluster(loc, spec.cluster), **common)
        if isinstance(spec, schema.WaitSpec):
            otherwise = tuple(self.compile_outcome(Located(b, loc.src, (*loc.path, "otherwise", i)), b, b.when)
                              for i, b in enumerate(spec.otherwise))
            return model.Action("wait", query=self.query(loc, "wait", spec.wait),
                                outcome=self.compile_outcome(loc, spec), otherwise=otherwise,
                                keep_going=spec.continue_, **common)
        if isinstance(spec, schema.RefuseSpec):
            return model.Action("refuse", query=self.query(loc, "refuse", spec.refuse),
                                outcome=self.compile_outcome(loc, spec), keep_going=spec.continue_, **common)
        if isinstance(spec, schema.LogSpec):
            outcome = model.Outcome("", self.text(loc, "log", spec.log) or compile_text(""), model.NO_REQUEUE,
                                    self.position(loc))
            return model.Action("log", outcome=outcome, level=spec.level, **common)
        if isinstance(spec, schema.StatusSpec):
            sub = Located(spec, loc.src, (*loc.path, "status"))
            fields = tuple((k, self.query(sub, k, v) or _NULL) for k, v in spec.status.items())
            return model.Action("status", fields=fields, **common)
        if isinstance(spec, schema.SetSpec):
            sub_path = (*loc.path, "set")
            bindings = tuple(self.compile_value(k, Located(v, loc.src, (*sub_path, k))) for k, v in spec.set.items())
            return model.Action("set", bindings=bindings, **common)
        assert isinstance(spec, schema.FailSpec)
        outcome = model.Outcome(spec.reason, self.text(loc, "fail", spec.fail) or compile_text(""), model.NO_REQUEUE,
                                self.position(loc))
        return model.Action("fail", outcome=outcome, **common)

    def compile_step(self, loc: Located) -> model.Step:
        spec: schema.StepSpec = loc.item
        actions = tuple(self.compile_action(Located(a, loc.src, (*loc.path, "do", i))) for i, a in enumerate(spec.do))
        skipped = None
        if spec.skipped is not None:
            skipped = self.compile_outcome(Located(spec.skipped, loc.src, (*loc.path, "skipped")), spec.skipped)
        error = self.compile_error(loc, spec.error) or model.ErrorReport(None, compile_text("{{ error }}"), None)
        done = self.compile_outcome(Located(spec.done, loc.src, (*loc.path, "done")), spec.done)
        otherwise = None
        if spec.otherwise is not None:
            sub = Located(spec.otherwise, loc.src, (*loc.path, "otherwise"))
            otherwise = model.Outcome(spec.otherwise.reason, self.text(sub, "message", spec.otherwise.message)
                                      or compile_text(""), model.NO_REQUEUE, self.position(sub),
                                      status=spec.otherwise.status)
        return model.Step(spec.name, spec.condition, spec.metric, tuple(spec.requires), skipped, error, actions, done,
                          self.position(loc), when=self.query(loc, "when", spec.when), otherwise=otherwise,
                          outputs=self.compile_outputs(loc, spec.outputs))

    def compile_outputs(self, loc: Located, outputs: dict[str, Any]) -> tuple[model.Output, ...]:
        """A step's outputs: each a value (query, text or table), or `{value, default}`."""
        compiled = []
        for name, spec in outputs.items():
            sub = Located(spec, loc.src, (*loc.path, "outputs", name))
            if isinstance(spec, schema.OutputDefaultSpec):
                value = model.Value(name, self.query(sub, "value", spec.value), (), self.position(sub))
                compiled.append(model.Output(value, self.query(sub, "default", spec.default)))
            else:
                compiled.append(model.Output(self.compile_value(name, sub)))
        return tuple(compiled)

    def compile_teardown(self, loc: Located) -> model.Teardown:
        spec: schema.TeardownSpec = loc.item
        actions = tuple(self.compile_teardown_action(Located(a, loc.src, (*loc.path, "do", i)))
                        for i, a in enumerate(spec.do))
        return model.Teardown(self.query(loc, "patientWhile", spec.patientWhile) or _NULL,
                              self.requeue(loc, "patientRequeue", spec.patientRequeue), actions)

    def compile_teardown_action(self, loc: Located) -> model.TeardownAction:
        spec = loc.item
        if isinstance(spec, schema.PhaseSpec):
            return model.TeardownAction("phase", self.position(loc), until=self.query(loc, "until", spec.until))
        common: dict[str, Any] = {"origin": self.position(loc), "name": spec.name,
                                  "when": self.query(loc, "when", spec.when)}
        if isinstance(spec, schema.ReadSpec):
            reads = (spec.read,) if isinstance(spec.read, str) else tuple(spec.read)
            return model.TeardownAction("read", reads=reads, error=self.text(loc, "error", spec.error), **common)
        if isinstance(spec, schema.HoldSpec):
            hold = model.Outcome(spec.reason, self.text(loc, "message", spec.message) or compile_text(""),
                                 self.requeue(loc, "requeue", spec.requeue), self.position(loc))
            return model.TeardownAction("hold", hold=hold, condition=spec.condition,
                                        body=self.query(loc, "hold", spec.hold), **common)
        if isinstance(spec, schema.TeardownLogSpec):
            return model.TeardownAction("log", message=self.text(loc, "log", spec.log), level=spec.level, **common)
        if isinstance(spec, schema.TeardownFailSpec):
            return model.TeardownAction("fail", message=self.text(loc, "fail", spec.fail), **common)
        assert isinstance(spec, (schema.TeardownDeleteSpec, schema.TeardownPatchSpec))
        op: model.TeardownOp = "delete" if isinstance(spec, schema.TeardownDeleteSpec) else "patch"
        target: schema.TeardownTarget = spec.delete if isinstance(spec, schema.TeardownDeleteSpec) else spec.patch
        target_loc = Located(target, loc.src, (*loc.path, op))
        sort_loc = Located(spec.sortBy, loc.src, (*loc.path, "sortBy"))
        sort_by = tuple(q for j, text in enumerate(spec.sortBy) if (q := self.query(sort_loc, j, text)))
        patch_only: dict[str, Any] = {}
        if isinstance(spec, schema.TeardownPatchSpec):
            patch_only = {"body": self.query(loc, "body", spec.body), "guards": tuple(spec.guards)}
        return model.TeardownAction(
            op, api_version=target.apiVersion, kind=target.kind,
            object_name=self.text(target_loc, "name", target.name),
            namespace=self.text(loc, "namespace", spec.namespace), cluster=self.cluster(loc, spec.cluster),
            children=spec.children,
            where=self.query(loc, "where", spec.where), sort_by=sort_by,
            keep_going=spec.onError == "continue" or bool(patch_only.get("guards")),
            read_error=self.text(loc, "readError", spec.readError), error=self.text(loc, "error", spec.error),
            **patch_only, **common)

    def derive_watches(self, key: str, order: schema.OrderSpec, merged: Merged, children: model.Children | None,
                       teardown: model.Teardown, steps: tuple[model.Step, ...] = ()) -> tuple[model.CompiledWatch, ...]:
        """The order, the objects it controls, its labelled children (those the teardown deletes or patches, and
        those a step applies or ensures on a cluster the rules name), and the declared watches."""
        origin = merged.main.locate(("order",))
        watches = [model.CompiledWatch(order.apiVersion, key.rpartition("/")[2], "all", key, "order", origin,
                                       changed=tuple(compile_query(q) for q in model.ORDER_CHANGES))]
        seen: set[tuple[str, ...]] = set()
        labels = (children.name_label, children.namespace_label, children.cluster_label) if children else None
        for action in teardown.actions:
            if action.op not in ("patch", "delete"):
                continue
            if action.cluster == "order" and (action.api_version, action.kind, "owner") not in seen:
                # Objects beside the order, on its cluster: the order controls them.
                seen.add((action.api_version, action.kind, "owner"))
                watches.append(model.CompiledWatch(action.api_version, action.kind, "all", key, "owner",
                                                   action.origin, owner_api_version=order.apiVersion,
                                                   owner_kind=key.rpartition("/")[2]))
            elif action.cluster != "order" and action.children and labels is not None:
                # Children on the management cluster, or on a cluster the rules name (any cluster).
                where: Literal["management", "all"] = "management" if action.cluster == "management" else "all"
                if (action.api_version, action.kind, "labels", where) in seen:
                    continue
                seen.add((action.api_version, action.kind, "labels", where))
                watches.append(model.CompiledWatch(action.api_version, action.kind, where, key, "labels",
                                                   action.origin, labels=labels))
        for step in steps:
            for step_action in step.actions:
                if step_action.op not in ("apply", "ensure") or not isinstance(step_action.cluster, Text) \
                        or step_action.template is None or labels is None:
                    continue
                # A child on a cluster the rules name: its drift or deletion there wakes the order.
                address = constant_address(step_action.template.source)
                if address is None:
                    self.errors.append(RuleError(step_action.origin, f"{step_action.op} action: a child on a "
                                                 "cluster the rules name is watched there, so its template needs a "
                                                 "constant apiVersion and kind"))
                    continue
                if (*address, "labels", "all") not in seen:
                    seen.add((*address, "labels", "all"))
                    watches.append(model.CompiledWatch(*address, "all", key, "labels", step_action.origin,
                                                       labels=labels))
        references = 0
        for loc, spec, written in self.effective_watches(merged.lists.get("watches", [])):
            if spec.apiVersion is None or spec.kind is None:
                self.error(loc.src, loc.path, f"a watch needs `apiVersion` and `kind` (`id: {spec.id}` names no "
                                              "watch of an included file)" if spec.id else
                                              "a watch needs `apiVersion` and `kind`")
                continue
            api_version, watched = spec.apiVersion, spec.kind

            def watch_query(key: str, source: str | None, at: Located | None = None, index: int | None = None,
                            written: dict[str, Located] = written, loc: Located = loc,
                            address: tuple[str, str] = (api_version, watched)) -> Query | None:
                query = self.query(at or written.get(key, loc), key if index is None else index, source)
                if query is not None:
                    self.watch_sites.append((self.sites[-1], *address, key))
                return query

            changed_at = written.get("changed", loc)
            changed_loc = Located(spec.changed, changed_at.src, (*changed_at.path, "changed"))
            changed = tuple(q for i, c in enumerate(spec.changed)
                            if (q := watch_query("changed", c, changed_loc, i)))
            if spec.index is not None:
                watches.append(model.CompiledWatch(api_version, watched, spec.clusters, key, "index",
                                                   self.position(loc), changed=changed,
                                                   index_query=watch_query("index", spec.index)))
            elif spec.orders is not None:
                watches.append(model.CompiledWatch(api_version, watched, spec.clusters, key, "orders",
                                                   self.position(loc), changed=changed,
                                                   orders_query=watch_query("orders", spec.orders)))
            elif spec.name is not None:
                watches.append(model.CompiledWatch(api_version, watched, spec.clusters, key, "reference",
                                                   self.position(loc), changed=changed,
                                                   name_query=watch_query("name", spec.name),
                                                   namespace_query=watch_query("namespace", spec.namespace)))
            elif spec.referencedBy is not None:
                # Queries on the order (checked against the order's CRD and names), not on the watched object.
                ref, at = spec.referencedBy, written.get("referencedBy", loc)
                if isinstance(ref, str):
                    name_query, namespace_query = self.query(at, "referencedBy", ref), None
                else:
                    sub = Located(ref, at.src, (*at.path, "referencedBy"))
                    name_query, namespace_query = self.query(sub, "name", ref.name), self.query(
                        sub, "namespace", ref.namespace)
                references += 1
                watches.append(model.CompiledWatch(api_version, watched, spec.clusters, key, "referenced",
                                                   self.position(loc), changed=changed,
                                                   ref_id=f"{api_version}/{watched}/{references}",
                                                   ref_name_query=name_query, ref_namespace_query=namespace_query))
            elif spec.mapBy == "labels" and labels is not None:
                watches.append(model.CompiledWatch(api_version, watched, spec.clusters, key, "labelled",
                                                   self.position(loc), changed=changed, labels=labels))
            elif spec.mapBy is None:
                self.error(loc.src, loc.path, "a watch needs `name` (a reference), `orders` (the orders an object "
                                              "names), `index` (a fan-out), `referencedBy` (the orders naming the "
                                              "object) or `mapBy: labels` (the order's ownership labels)")
        return tuple(watches)

    def effective_watches(self, declared: list[Located]) -> list[tuple[Located, schema.WatchSpec, dict[str, Located]]]:
        """The declared watches, each with its spec and where each of its fields is written. A watch with the ``id``
        of one in an included file changes it, in its place: the fields it gives replace that watch's (a mapping
        all of its mapping), the others are kept; an id twice in one file is an error."""
        kept: list[tuple[Located, schema.WatchSpec, dict[str, Located]]] = []
        at: dict[str, int] = {}
        for loc in declared:
            spec: schema.WatchSpec = loc.item
            ident = spec.id
            if ident is None or ident not in at:
                if ident is not None:
                    at[ident] = len(kept)
                kept.append((loc, spec, {}))
                continue
            first, earlier, where = kept[at[ident]]
            if first.src.path == loc.src.path or any(w.src.path == loc.src.path for w in where.values()):
                self.error(loc.src, (*loc.path, "id"), f"watch id {ident!r} is used twice in this file (first at "
                                                       f"{first.src.locate(first.path)})", value=True)
                continue
            given = spec.model_fields_set - {"id"}
            update = {name: getattr(spec, name) for name in given}
            if given & _WATCH_MAPPINGS:
                update.update({name: None for name in _WATCH_MAPPINGS - given})
            where = {**where, **{name: loc for name in given}}
            kept[at[ident]] = (first, earlier.model_copy(update=update), where)
        return kept

_NULL = compile_query("`null`")
_WATCH_MAPPINGS = frozenset({"name", "namespace", "orders", "index", "referencedBy", "mapBy"})
"""The fields of a watch that say how it maps (a watch changing another's mapping replaces all of them)."""
_NO_ORDER = schema.OrderSpec.model_construct(apiVersion="", plural="", finalizer="", fieldManager="")
_NO_CONDITIONS = model.Conditions((), "", "", "", "", "", frozenset(), 0, "")
_NO_CHILDREN = model.Children(compile_text(""), compile_text(""), "", "", "")
_UNDECLARED = "is not declared in conditions."
"""What stands in for a missing or broken section, and what that stand-in would report wrongly (with no
conditions section, every condition and reason is undeclared)."""


def template_position(path: str, text: str, problem: ExprSyntaxError) -> Position:
    """Where a problem of a template file sits: its token's line and column, else its line."""
    if problem.offset is not None and 0 <= problem.offset <= len(text):
        line_start = text.rfind("\n", 0, problem.offset) + 1
        return Position(path, text.count("\n", 0, problem.offset) + 1, problem.offset - line_start + 1)
    return Position(path, problem.line or 1, 1)


def compile_kind(path: Path, *, rules_dir: Path | None = None,
                 templates_root: Path | None = None) -> model.CompiledKind:
    """Compile one rule file (with its includes); RuleErrors lists everything wrong with it."""
    rules_dir = rules_dir or path.parent
    compiler = Compiler(rules_dir, templates_root or rules_dir.parent / "templates")
    compiled = compiler.compile(path)
    if compiler.errors or compiled is None:
        fallback = RuleError(Position(display(path), 1, 1), "the rule file did not compile")
        raise RuleErrors(compiler.errors or [fallback])
    return compiled
