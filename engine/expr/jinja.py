"""Templates: rule strings (``Text``) here, and the public names of the parts ``jinja_env`` (the environment),
``jinja_analysis`` (names, calls, syntax errors), ``jinja_render`` (compile and render) and ``object_templates``.

A child-object template renders YAML text, so every interpolated value goes through ``| tojson`` (JSON is valid
YAML flow syntax: the value stays one scalar, mapping or list whatever it contains); ``None`` renders as the empty
string and booleans as ``true``/``false``, as Go and JSON write them. docs/rules.md says the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jinja2.environment import Template

from engine.expr.errors import ExprError
from engine.expr.jinja_closures import Unanswered
from engine.expr.jinja_env import environment
from engine.expr.jinja_render import (
    _compile,
    _Compiled,
    _NotPlain,
    _Parts,
    _read,
    _render,
    _render_compiled,
    _render_plain,
)
from engine.expr.object_templates import ObjectTemplate, compile_object_template, untojsoned_outputs

__all__ = [
    "ObjectTemplate",
    "Text",
    "compile_object_template",
    "compile_text",
    "environment",
    "untojsoned_outputs",
]


_DELIMITERS = ("{{", "{%", "{#")


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
