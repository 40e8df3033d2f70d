"""Compiled Jinja templates: rule strings with ``{{ }}`` and child-object templates.

One sandboxed environment serves every template: ``ImmutableSandboxedEnvironment`` (no mutation
of the context, no dunder access), null-safe like the expressions (a missing key of an object, a
key of null and an index past a list's end read as ``None``), ``StrictUndefined`` for what is left
(an undefined top-level name is an error, and ``engine lint`` reports it), autoescape off,
``trim_blocks`` and ``lstrip_blocks``. Every registered function is a
global (``{{ sha256(x) }}``) and, when it takes an argument and Jinja has no filter of that name,
also a filter (``{{ x | sha256 }}``). ``None`` renders as the empty string and booleans as
``true``/``false``, as Go and JSON write them.

The object-template convention: a child-object template renders YAML text that is read as PyYAML's
safe loader reads it (``engine.expr.rendered_yaml`` reads the plain subset templates write without
PyYAML; anything else goes to PyYAML), so **every interpolated value must go through ``| tojson``**:
``name: {{ name | tojson }}``. JSON is valid YAML flow syntax, so the value stays one scalar (or
one mapping or list) whatever it contains; a plain ``{{ v }}`` lets a value such as
``"x\\nkind: Secret"`` rewrite the document. To embed a JSON *string* (for example ConfigMap data)
write ``{{ obj | tojson | tojson }}``. ``untojsoned_outputs`` lists the outputs that break the
convention, for ``engine lint``. ``tojson`` here is ``json.dumps`` (no HTML escaping).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from types import TracebackType
from typing import Any

import yaml
from jinja2 import StrictUndefined, TemplateSyntaxError, Undefined, meta, nodes
from jinja2.environment import Template
from jinja2.lexer import Token, TokenStream
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.expr import rendered_yaml
from engine.expr.errors import LONE_SURROGATE, ExprError, ExprSyntaxError, safe_reason
from engine.expr.functions import FUNCTIONS, Function, call_described, check_arguments
from engine.expr.jinja_closures import DICT_ATTRIBUTES, Closure, NotCompiled, Unanswered, compile_output
from engine.expr.suggest import did_you_mean

__all__ = [
    "ObjectTemplate",
    "Text",
    "compile_object_template",
    "compile_text",
    "environment",
    "untojsoned_outputs",
]

_TEMPLATE_FILENAME = "<template>"
_DELIMITERS = ("{{", "{%", "{#")
_JSON_FILTERS = frozenset({"tojson", "to_json"})

REGISTRY_FILTERS = frozenset({"replace", "lower", "upper", "trim", "items"})
"""Jinja filters replaced by the registry function of the same name, so ``x | lower`` in a template
and ``lower(x)`` in an expression give the same result (and the same type errors)."""


def _fail_if_undefined(value: Any) -> None:
    if isinstance(value, Undefined):
        value._fail_with_undefined_error()


def _json_default(value: Any) -> Any:
    _fail_if_undefined(value)
    raise TypeError(f"{type(value).__name__} object is not JSON serializable")


_JSON = json.JSONEncoder(ensure_ascii=False, default=_json_default)
"""The encoder ``json.dumps(value, ensure_ascii=False, default=_json_default)`` builds on every call."""


def _tojson(value: Any) -> str:
    """``json.dumps``: JSON is YAML flow syntax, so the value stays one node of the document."""
    _fail_if_undefined(value)
    return _JSON.encode(value)


def _finalize(value: Any) -> Any:
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return value


def _jinja_callable(fn: Function) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        for arg in args:
            _fail_if_undefined(arg)
        check_arguments(fn, args)
        return call_described(fn, args)

    call.__name__ = fn.name
    call.__doc__ = fn.doc
    return call


class _NullSafeEnvironment(ImmutableSandboxedEnvironment):
    """Lookups read like JMESPath paths: a missing key, a key of null or a missing index is ``None``.

    Only a name the context does not define stays undefined (and fails): that is a typo, which
    ``engine lint`` reports; a missing field is data, which the author tests with ``or``.
    """

    def getitem(self, obj: Any, argument: Any) -> Any:
        if obj is None:
            return None
        found = super().getitem(obj, argument)
        return None if _absent(obj, found, argument) else found

    def getattr(self, obj: Any, attribute: str) -> Any:
        if obj is None:
            return None
        found = super().getattr(obj, attribute)
        return None if _absent(obj, found, attribute) else found


def _absent(obj: Any, found: Any, key: Any) -> bool:
    """A lookup on data that found nothing; an unsafe attribute (``__class__``) still fails in the sandbox."""
    if not isinstance(found, Undefined) or not isinstance(obj, (Mapping, list, tuple)):
        return False
    return not (isinstance(key, str) and hasattr(obj, key))


@cache
def environment() -> ImmutableSandboxedEnvironment:
    """The one sandboxed environment, built on first use and never changed afterwards."""
    env = _NullSafeEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_finalize,
    )
    for name, fn in FUNCTIONS.items():
        wrapped = _jinja_callable(fn)
        env.globals[name] = wrapped
        if fn.arity[0] >= 1 and (name not in env.filters or name in REGISTRY_FILTERS):
            env.filters[name] = wrapped
    env.filters["tojson"] = _tojson
    return env


# --- analysis ------------------------------------------------------------------------------------


def _declared(ast: nodes.Template) -> set[str]:
    """Names the template binds itself: set/for/with targets, macro names and parameters, ``caller``."""
    names = {node.name for node in ast.find_all(nodes.Name) if node.ctx in ("store", "param")}
    names.update(node.name for node in ast.find_all(nodes.Macro))
    names.add("caller")
    return names


def _analyse(
    ast: nodes.Template, env: ImmutableSandboxedEnvironment, source: str
) -> tuple[frozenset[str], frozenset[str]]:
    """The context names a template reads and the functions it calls; every unknown function or filter, and
    every literal a function refuses, is an error at its token (all of them, in one ExprSyntaxError)."""
    declared = _declared(ast)
    calls: set[str] = set()
    problems: list[ExprSyntaxError] = []
    finder = _TokenFinder(source)
    for call in ast.find_all(nodes.Call):
        if not isinstance(call.node, nodes.Name):
            continue
        name = call.node.name
        if name in declared:
            continue
        offset = finder.call(name, call.lineno)
        if name not in FUNCTIONS and name not in env.globals:
            hint = did_you_mean(name, FUNCTIONS.keys() | env.globals.keys(), call=True)
            problems.append(ExprSyntaxError(f"unknown function {name}(){hint}", offset, line=call.lineno,
                                            source=source))
            continue
        calls.add(name)
        problems.extend(_literal_problems(name, list(call.args), call.lineno, offset, source))
    for flt in ast.find_all(nodes.Filter):
        offset = finder.filter(flt.name, flt.lineno)
        if flt.name not in env.filters:
            hint = did_you_mean(flt.name, env.filters.keys())
            problems.append(ExprSyntaxError(f"unknown filter {flt.name!r}{hint}", offset, line=flt.lineno,
                                            source=source))
            continue
        if flt.name in FUNCTIONS:
            calls.add(flt.name)
            problems.extend(_literal_problems(flt.name, [flt.node, *flt.args], flt.lineno, offset, source))
    if problems:
        problems.sort(key=lambda p: (p.offset is None, p.offset or 0))
        raise ExprSyntaxError(problems[0].message, problems[0].offset, line=problems[0].line, source=source,
                              others=tuple(problems[1:]))
    names = meta.find_undeclared_variables(ast) - set(env.globals) - set(FUNCTIONS)
    return frozenset(names), frozenset(calls)


def _literal_problems(name: str, args: list[nodes.Expr | None], line: int, offset: int | None,
                      source: str) -> list[ExprSyntaxError]:
    """A constant argument a function can judge before run time (a regular expression) is judged now."""
    fn = FUNCTIONS.get(name)
    found: list[ExprSyntaxError] = []
    for index, check in (fn.literal_checks.items() if fn is not None else ()):
        arg = args[index] if index < len(args) else None
        if isinstance(arg, nodes.Const):
            problem = check(arg.value)
            if problem is not None:
                found.append(ExprSyntaxError(problem, offset, line=line, source=source))
    return found


class _TokenFinder:
    """Where a call or filter of a name sits in the source (Jinja's nodes know their line only): each
    occurrence on a line is found after the previous one, so two calls of one name get their own places."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0, *(index + 1 for index, char in enumerate(source) if char == "\n")]
        self._after: dict[tuple[str, str, int], int] = {}

    def _find(self, what: str, pattern: str, name: str, line: int) -> int | None:
        if not 1 <= line <= len(self.starts):
            return None
        key = (what, name, line)
        found = re.compile(pattern).search(self.source, self._after.get(key, self.starts[line - 1]))
        if found is None:
            return None
        self._after[key] = found.end()
        return found.start("name")

    def call(self, name: str, line: int) -> int | None:
        return self._find("call", rf"(?<![\w.])(?P<name>{re.escape(name)})\s*\(", name, line)

    def filter(self, name: str, line: int) -> int | None:
        return self._find("filter", rf"\|\s*(?P<name>{re.escape(name)})(?!\w)", name, line)


def _syntax_offset(env: ImmutableSandboxedEnvironment, source: str) -> int | None:
    """The character offset of the token where Jinja's lexer or parser gives up (None: it does not).

    Jinja's errors carry a line only, so the template is lexed again here with every token's offset
    (each raw token is found in the source after the previous one) and parsed from that stream: the
    parser's current token at the failure is the place; a lexer failure is where lexing stopped."""
    cursor = 0
    start = 0
    lexing_failed = False
    offsets: dict[int, int] = {}

    def raw() -> Iterator[tuple[int, str, str]]:
        nonlocal cursor, start, lexing_failed
        tokens = env.lexer.tokeniter(source, None)
        while True:
            try:
                lineno, kind, value = next(tokens)
            except StopIteration:
                return
            except TemplateSyntaxError:
                lexing_failed = True
                raise
            found = source.find(value, cursor) if value else -1
            start = found if found >= 0 else cursor
            cursor = start + len(value) if found >= 0 else cursor
            yield lineno, kind, value

    def wrapped() -> Iterator[Token]:
        for token in env.lexer.wrap(raw()):
            offsets[id(token)] = start
            yield token

    parser = Parser(env, "")
    try:
        parser.stream = TokenStream(wrapped(), None, None)
        parser.parse()
    except TemplateSyntaxError:
        current = parser.stream.current
        if lexing_failed:
            return cursor
        if current.type == "eof":
            return len(source.rstrip()) or None
        return offsets.get(id(current), cursor)
    except Exception:  # the position is a courtesy: never let finding it fail the report
        return None
    return None


def _compile(source: str) -> tuple[Template, frozenset[str], frozenset[str], dict[str, Any], _Parts | None,
                                   _Compiled | None, nodes.Template]:
    """The template, the context names it reads, the functions it calls, the globals it names, its
    parts when it only writes text and names (``_plain_parts``), its outputs as closures when they are
    all of the kinds ``engine.expr.jinja_closures`` compiles, and its syntax tree."""
    env = environment()
    try:
        ast = env.parse(source)
        names, functions = _analyse(ast, env, source)
        template = env.from_string(ast)
    except TemplateSyntaxError as exc:
        raise ExprSyntaxError(f"template syntax error: {exc.message}", _syntax_offset(env, source),
                              line=exc.lineno, source=source) from None
    loaded = {node.name for node in ast.find_all(nodes.Name) if node.ctx == "load"}
    used = {name: env.globals[name] for name in loaded if name in env.globals}
    return template, names, functions, used, _plain_parts(ast, names), _compiled_parts(ast, env, names), ast


_Parts = tuple["str | tuple[str, tuple[str, ...]]", ...]
"""A plain template's output in order: literal text, or a context name with the attributes read off it."""


def _plain_parts(ast: nodes.Template, names: frozenset[str]) -> _Parts | None:
    """The parts of a template that only writes text and ``{{ name }}`` or ``{{ name.attr.attr }}`` outputs
    (most rule strings: ``{{ prefix }}user``, ``{{ childNamespace }}``), or None for any other template.
    Such a template is rendered without Jinja's machinery (issue 11: a render built a context, a generator
    and a frame per call for what is a string join); ``_render_plain`` writes what Jinja writes."""
    parts: list[str | tuple[str, tuple[str, ...]]] = []
    for node in ast.body:
        if not isinstance(node, nodes.Output):
            return None
        for child in node.nodes:
            if isinstance(child, nodes.TemplateData):
                parts.append(child.data)
                continue
            path: list[str] = []
            while isinstance(child, nodes.Getattr) and child.ctx == "load":
                path.append(child.attr)
                child = child.node
            if not isinstance(child, nodes.Name) or child.ctx != "load" or child.name not in names:
                return None
            parts.append((child.name, tuple(reversed(path))))
    return tuple(parts)


_DICT_ATTRIBUTES = DICT_ATTRIBUTES

_NotPlain = Unanswered
"""A plain render met what only Jinja's own render answers (an undefined name, an attribute of a value
that is not an object): the template is rendered by Jinja, which answers or fails as always."""

_Compiled = tuple["str | Closure", ...]
"""A template's output in order: literal text, or the closure computing one output's value."""


def _compiled_parts(ast: nodes.Template, env: ImmutableSandboxedEnvironment, names: frozenset[str]) -> _Compiled | None:
    """The parts of a template that only writes text and outputs ``engine.expr.jinja_closures`` compiles
    (``{{ (prefix ~ 'user') | tojson }}``, ``{{ hash8(a ~ '/' ~ b) }}``), or None for any other template."""
    parts: list[str | Closure] = []
    try:
        for node in ast.body:
            if not isinstance(node, nodes.Output):
                return None
            for child in node.nodes:
                parts.append(child.data if isinstance(child, nodes.TemplateData) else compile_output(child, env, names))
    except NotCompiled:
        return None
    return tuple(parts)


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


def _render_plain(parts: _Parts, context: Mapping[str, Any]) -> str:
    """What Jinja renders for a plain template: each output ``str(_finalize(value))``, a name's attributes
    read as the null-safe sandbox reads them (a dict's key, None on None or on a missing key)."""
    values = []
    for part in parts:
        if isinstance(part, str):
            continue
        name = part[0]
        if name not in context:
            raise _NotPlain(name)
        values.append(context[name])
    written: list[str] = []
    found = iter(values)
    for part in parts:
        if isinstance(part, str):
            written.append(part)
            continue
        value = next(found)
        for attribute in part[1]:
            if value is None:
                continue
            if type(value) is not dict or attribute in _DICT_ATTRIBUTES:
                raise _NotPlain(attribute)
            value = value.get(attribute)
        written.append(str(_finalize(value)))
    return "".join(written)


def _template_line(tb: TracebackType | None) -> int | None:
    """The template line of the innermost template frame in a traceback Jinja rewrote."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _TEMPLATE_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _variables(names: frozenset[str], used: dict[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
    """What a render sees: the globals the template names, each shadowed by a scope value of its name, and
    the names it reads that the scope defines (each resolved here, in the same order for every renderer)."""
    variables = dict(used)
    for name in used:  # a value already in the scope shadows a global of its name, as in Jinja's own copy
        if dict.__contains__(context, name) if isinstance(context, dict) else name in context:
            variables[name] = dict.__getitem__(context, name) if isinstance(context, dict) else context[name]
    if isinstance(context, dict):
        for name in names:  # a name the scope holds already answers without the scope's own ``in`` (issue 11)
            if dict.__contains__(context, name):
                variables[name] = dict.__getitem__(context, name)
            elif name in context:
                variables[name] = context[name]
        return variables
    for name in names:
        if name in context:
            variables[name] = context[name]
    return variables


def _read(names: frozenset[str], used: dict[str, Any], context: Mapping[str, Any], where: str | None,
          source: str | None) -> dict[str, Any]:
    """``_variables``, where a value the template reads that fails when first computed is named as read by the
    template (``where``: a rule string's origin and ``source`` its text, or a template file's path alone)."""
    try:
        return _variables(names, used, context)
    except ExprError as exc:
        raise exc.read_by(where, source) from None


def _render_compiled(parts: _Compiled, variables: Mapping[str, Any]) -> str:
    """What Jinja renders for a compiled template: each output ``str(_finalize(value))``; Unanswered when
    only Jinja answers."""
    return "".join([part if type(part) is str else str(_finalize(part(variables)))  # type: ignore[operator]
                    for part in parts])


def _render(template: Template, names: frozenset[str], used: dict[str, Any], context: Mapping[str, Any],
            source: str, path: str | None, origin: str | None = None) -> str:
    """Render with a context of only the names and globals the template reads (issue 11): Jinja's own
    ``render`` copies the whole scope and every global into a new dict on each call. Each name is looked up
    here, so a pass's lazy scope resolves just the names the template reads."""
    variables = _read(names, used, context, origin or path, source if path is None else None)
    env = template.environment
    try:
        try:
            # The context Template.new_context would build, minus its copy of every global's name (a set
            # over the environment's globals on each render), which only `{% import %}` reads.
            fresh = env.context_class(env, variables, template.name, template.blocks, globals=None)
            return env.concat(template.root_render_func(fresh))
        except Exception:
            env.handle_exception()  # re-raises with the template's own line numbers
    except ExprError as exc:  # a value read while rendering failed: that error, read by this template
        raise exc.read_by(origin or path, source if path is None else None) from None
    except Exception as exc:
        line = _template_line(exc.__traceback__)
        raise ExprError(source, safe_reason(exc, source), path=path, line=line, origin=origin) from None


# --- rule strings --------------------------------------------------------------------------------


class Text:
    """A rule string: a compiled template when it holds ``{{``, ``{%`` or ``{#``, else a constant."""

    __slots__ = ("_compiled", "_globals", "_parts", "_template", "functions", "names", "origin", "source")

    def __init__(self, source: str, origin: str | None = None) -> None:
        self.source = source
        self.origin = origin
        """Where the rule wrote the string (``rules/x.yaml:12:9``), named by every render error."""
        self._template: Template | None = None
        self.names: frozenset[str] = frozenset()
        self.functions: frozenset[str] = frozenset()
        self._globals: dict[str, Any] = {}
        self._parts: _Parts | None = None
        self._compiled: _Compiled | None = None
        if any(delimiter in source for delimiter in _DELIMITERS):
            (self._template, self.names, self.functions, self._globals, self._parts,
             self._compiled, _ast) = _compile(source)

    @property
    def is_constant(self) -> bool:
        return self._template is None

    def __repr__(self) -> str:
        return f"Text({self.source!r})"

    def render(self, context: Mapping[str, Any]) -> str:
        """The string for ``context``; ExprError (naming no value) on an undefined name or a failed call."""
        if self._template is None:
            return self.source
        if self._parts is not None:
            try:
                return _render_plain(self._parts, context)
            except _NotPlain:
                pass
            except ExprError as exc:  # a value it reads failed when first computed
                raise exc.read_by(self.origin, self.source) from None
        elif self._compiled is not None:
            try:
                return _render_compiled(self._compiled,
                                        _read(self.names, self._globals, context, self.origin, self.source))
            except Unanswered:
                pass
        return _render(self._template, self.names, self._globals, context, self.source, None, self.origin)


def compile_text(source: str, origin: str | None = None) -> Text:
    """Compile a rule string; ExprSyntaxError with the line on bad syntax or an unknown function."""
    return Text(source, origin)


def compile_document(source: str, origin: str | None = None) -> Text:
    """Compile a document text (a YAML file, a URL) that renders exactly as written, final newline
    included: Jinja drops one final newline of a template, so a second is given for it to drop."""
    if source.endswith("\n") and any(delimiter in source for delimiter in _DELIMITERS):
        text = Text(source + "\n", origin)
        text.source = source
        return text
    return Text(source, origin)


# --- child-object templates ----------------------------------------------------------------------

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
