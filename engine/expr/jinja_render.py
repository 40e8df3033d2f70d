"""Compiling a template and rendering it: through Jinja, or without it for the templates most rules write.

A plain template (text and ``{{ name.attr }}``) is joined directly, one whose outputs ``jinja_closures`` compiles
runs its closures, and anything else renders through Jinja with a context of only the names it reads; every way
writes what Jinja writes. Rule strings (``jinja``) and child-object templates (``object_templates``) both use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any

from jinja2 import TemplateSyntaxError, nodes
from jinja2.environment import Template
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.expr.errors import ExprError, ExprSyntaxError, safe_reason
from engine.expr.jinja_analysis import _analyse, _syntax_offset
from engine.expr.jinja_closures import DICT_ATTRIBUTES, Closure, NotCompiled, Unanswered, compile_output
from engine.expr.jinja_env import _finalize, environment

_TEMPLATE_FILENAME = "<template>"


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
