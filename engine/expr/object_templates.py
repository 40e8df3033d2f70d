"""Child-object templates: a template file that renders YAML text, parsed into the object it describes.

A template whose outputs all compile and whose text is plain block YAML renders straight to the object
(``rendered_yaml.Skeleton``); otherwise the text is rendered and read, the last texts' objects kept. The
``| tojson`` convention and its lint (``untojsoned_outputs``) live here.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

import yaml
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.expr import rendered_yaml
from engine.expr.errors import LONE_SURROGATE, ExprError, ExprSyntaxError, safe_reason
from engine.expr.jinja_closures import Closure, Unanswered, compile_output
from engine.expr.jinja_env import _finalize, _tojson, environment
from engine.expr.jinja_render import _compile, _read, _render, _render_compiled

_JSON_FILTERS = frozenset({"tojson", "to_json"})


try:
    _BaseLoader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment,unused-ignore]
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _BaseLoader = yaml.SafeLoader


class _ObjectLoader(_BaseLoader):  # type: ignore[valid-type,misc,unused-ignore]
    """The safe loader minus timestamp resolution, so a rendered object stays JSON-compatible."""


_ObjectLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


class ObjectTemplate:
    """A child-object template file: renders YAML text, parsed into the object (None when empty).

    A template whose outputs all compile to closures and whose text around them is plain block YAML
    (``rendered_yaml.Skeleton``: each output a whole value, ``key: {{ x | tojson }}``) renders straight to
    the object: each output's text read as the rendered text's reader reads it in that place, without
    Jinja, the text or its parse (issue 11). Any output the fast path cannot answer renders the text."""

    __slots__ = ("_compiled", "_globals", "_holes", "_skeleton", "_template", "functions", "names", "path",
                 "source")

    def __init__(self, source: str, path: str) -> None:
        self.source = source
        self.path = path
        try:
            (self._template, self.names, self.functions, self._globals, _parts, self._compiled,
             ast) = _compile(source)
        except ExprSyntaxError as exc:
            others = tuple(ExprSyntaxError(f"{path}: {o.message}", o.offset, line=o.line, source=source)
                           for o in exc.others)
            raise ExprSyntaxError(f"{path}: {exc.message}", exc.offset, line=exc.line, source=source,
                                  others=others) from None
        self._skeleton: rendered_yaml.Skeleton | None = None
        self._holes: tuple[Closure, ...] = ()
        if self._compiled is not None:
            pieces = [part if type(part) is str else None for part in self._compiled]
            self._skeleton = rendered_yaml.Skeleton.of(pieces)
            if self._skeleton is not None:
                self._holes = _hole_readers(ast, environment(), self.names)

    def __repr__(self) -> str:
        return f"ObjectTemplate({self.path!r})"

    def render_text(self, context: Mapping[str, Any]) -> str:
        """The rendered YAML text, before parsing."""
        if self._compiled is not None:
            try:
                return _render_compiled(self._compiled, _read(self.names, self._globals, context, self.path, None))
            except Unanswered:
                pass
        return _render(self._template, self.names, self._globals, context, self.source, self.path)

    def render(self, context: Mapping[str, Any]) -> Any:
        """The parsed object for ``context``; ExprError on a render failure or invalid YAML output."""
        if self._skeleton is not None:
            try:
                variables = _read(self.names, self._globals, context, self.path, None)
                return self._skeleton.build([hole(variables) for hole in self._holes])
            except (Unanswered, rendered_yaml.NotPlain):
                pass
        text = self.render_text(context)
        parsed = _PARSED.get(text)
        if parsed is not None:
            return _copy_json(parsed)
        try:
            obj = rendered_yaml.parse(text)
        except rendered_yaml.NotPlain:
            try:
                obj = yaml.load(text, Loader=_ObjectLoader)  # a safe loader
            except yaml.YAMLError as exc:
                raise ExprError(self.source, _yaml_reason(exc, self.source), path=self.path) from None
            except UnicodeEncodeError:  # libyaml reads UTF-8: a lone surrogate in a value has none
                raise ExprError(self.source, _surrogate_reason(text), path=self.path) from None
        _PARSED.put(text, _copy_json(obj))
        return obj


class _ParsedTexts:
    """The objects of the last ``limit`` rendered texts (issue 11): a pass renders the same children
    with the same values as the order's previous pass, and reading the text costs ~4x copying the
    object (PyYAML ~15x). Bounded, oldest first out; it holds what the informer caches hold (children's data)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._objects: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, text: str) -> Any:
        with self._lock:
            return self._objects.get(text)

    def put(self, text: str, obj: Any) -> None:
        with self._lock:
            self._objects[text] = obj
            while len(self._objects) > self.limit:
                del self._objects[next(iter(self._objects))]


_PARSED = _ParsedTexts(2048)


_SHARED = frozenset({str, int, float, bool, type(None)})
"""Parsed values a copy shares (immutable): tested first, so a scalar costs no call."""


def _copy_json(value: Any) -> Any:
    """A deep copy of parsed YAML (dicts, lists, scalars): callers own what render returns."""
    if isinstance(value, dict):
        return {key: item if type(item) in _SHARED else _copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [item if type(item) in _SHARED else _copy_json(item) for item in value]
    if isinstance(value, set):  # a !!set
        return set(value)
    return value


def _yaml_reason(exc: yaml.YAMLError, source: str) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = safe_reason(ValueError(exc.problem or "invalid"), source).removeprefix("ValueError: ")
        mark = exc.problem_mark
        where = f" at rendered line {mark.line + 1}" if mark is not None else ""
        return f"rendered YAML is invalid{where}: {problem}"
    return "rendered YAML is invalid"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogate_reason(text: str) -> str:
    """The error of a rendered text with a lone surrogate: the rendered line where it stands, never the value."""
    found = _SURROGATE.search(text)
    where = f" at rendered line {text.count(chr(10), 0, found.start()) + 1}" if found is not None else ""
    return f"rendered YAML is invalid{where}: {LONE_SURROGATE}"


def compile_object_template(source: str, path: str) -> ObjectTemplate:
    """Compile a template file; ExprSyntaxError with its line on bad syntax or an unknown function."""
    return ObjectTemplate(source, path)


def untojsoned_outputs(template: ObjectTemplate | str) -> list[int]:
    """Lines of ``{{ expr }}`` outputs not piped last through ``tojson`` (the injection lint)."""
    source = template.source if isinstance(template, ObjectTemplate) else template
    ast = environment().parse(source)
    lines: list[int] = []
    for output in ast.find_all(nodes.Output):
        for expr in output.nodes:
            if isinstance(expr, nodes.TemplateData):
                continue
            if isinstance(expr, nodes.Filter) and expr.name in _JSON_FILTERS:
                continue
            lines.append(expr.lineno)
    return sorted(lines)


def _hole_readers(ast: nodes.Template, env: ImmutableSandboxedEnvironment,
                  names: frozenset[str]) -> tuple[Closure, ...]:
    """Per output of a compiled template, the closure giving the value ``rendered_yaml`` reads from its text in
    a whole-value place: ``x | tojson`` reads as ``x`` itself for a printable ASCII string, an integer, a
    boolean or None (JSON writes them so that the reader gives them back), any other value through its text."""
    readers: list[Closure] = []
    for node in ast.body:
        for child in node.nodes:  # type: ignore[attr-defined]
            if isinstance(child, nodes.TemplateData):
                continue
            if (isinstance(child, nodes.Filter) and child.name == "tojson" and child.node is not None
                    and not child.args and env.filters["tojson"] is _tojson):
                readers.append(_json_hole(compile_output(child.node, env, names)))
            else:
                readers.append(_text_hole(compile_output(child, env, names)))
    return tuple(readers)


def _json_hole(value_of: Closure) -> Closure:
    def read(variables: Mapping[str, Any]) -> Any:
        value = value_of(variables)
        kind = type(value)
        if kind is str:
            if value.isascii() and value.isprintable():
                return value
            raise rendered_yaml.NotPlain
        if kind is int or kind is bool or value is None:
            return value
        try:
            text = _tojson(value)
        except Exception:
            raise Unanswered("tojson") from None
        return rendered_yaml.read_value(text)

    return read


def _text_hole(output: Closure) -> Closure:
    return lambda variables: rendered_yaml.read_value(str(_finalize(output(variables))))
