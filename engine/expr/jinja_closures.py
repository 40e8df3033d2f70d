"""Template outputs compiled to closures, for the few Jinja node kinds rule strings and child templates use.

Issue 11: a render through Jinja builds a context, a generator and a frame, and routes every call through
the sandbox's checks, for what is mostly ``{{ (prefix ~ 'user') | tojson }}``. A template whose body only
writes text and outputs made of names, attributes, constants, ``~``, ``and``/``or``/``not``, registered
function calls and plain filters is compiled here to one closure per output; ``engine.expr.jinja_render`` runs
them over the same variables Jinja would see. Each closure computes what Jinja's generated code computes for the
node (``str_join`` for ``~``, the null-safe sandbox's lookups on plain dicts, the filter or function called
as Jinja calls it); anything it cannot answer the same way (a name the variables lack, an attribute of a
value that is not a plain dict, a name that a value shadows, any exception) raises ``Unanswered``, and the
caller renders with Jinja, which answers or fails as always (same texts, same lines).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jinja2 import nodes
from jinja2.utils import _PassArg

from engine.expr.functions import FUNCTIONS

__all__ = ["DICT_ATTRIBUTES", "Closure", "NotCompiled", "Unanswered", "compile_output"]

Closure = Callable[[Mapping[str, Any]], Any]


class NotCompiled(Exception):
    """A node kind (or form) the closures do not cover: the template renders through Jinja."""


class Unanswered(Exception):
    """At render time, a case only Jinja answers: the caller renders the template through Jinja."""


DICT_ATTRIBUTES = frozenset(dir(dict))
"""Names Jinja's ``a.name`` finds as a dict's own attribute (a method) before its key."""


def compile_output(node: nodes.Expr, env: Any, names: frozenset[str]) -> Closure:
    """The closure computing ``node``'s value from the render's variables; NotCompiled for any other node."""
    build = _BUILDERS.get(type(node))
    if build is None:
        raise NotCompiled(type(node).__name__)
    return build(node, env, names)


def _name(node: Any, _env: Any, _names: frozenset[str]) -> Closure:
    if node.ctx != "load":
        raise NotCompiled("store")
    name = node.name

    def load(variables: Mapping[str, Any]) -> Any:
        if name not in variables:  # undefined: Jinja's StrictUndefined decides (and names it)
            raise Unanswered(name)
        return variables[name]

    return load


def _const(node: Any, _env: Any, _names: frozenset[str]) -> Closure:
    value = node.value
    if type(value) not in (str, int, bool, type(None)):
        raise NotCompiled("const")
    return lambda _variables: value


def _getattr(node: Any, env: Any, names: frozenset[str]) -> Closure:
    if node.ctx != "load":
        raise NotCompiled("store")
    inner = compile_output(node.node, env, names)
    attribute = node.attr
    if attribute in DICT_ATTRIBUTES:
        raise NotCompiled(attribute)

    def getattr_(variables: Mapping[str, Any]) -> Any:
        value = inner(variables)
        if value is None:
            return None
        if type(value) is not dict:  # the sandbox's getattr on anything else: Jinja answers
            raise Unanswered(attribute)
        return value.get(attribute)

    return getattr_


def _getitem(node: Any, env: Any, names: frozenset[str]) -> Closure:
    """``a['key']`` with a constant string key, on a plain dict: its key, else None (as ``a.key``)."""
    if node.ctx != "load" or not isinstance(node.arg, nodes.Const) or type(node.arg.value) is not str:
        raise NotCompiled("getitem")
    key = node.arg.value
    if key in DICT_ATTRIBUTES:
        raise NotCompiled(key)
    inner = compile_output(node.node, env, names)

    def getitem(variables: Mapping[str, Any]) -> Any:
        value = inner(variables)
        if value is None:
            return None
        if type(value) is not dict:
            raise Unanswered(key)
        return value.get(key)

    return getitem


def _concat(node: Any, env: Any, names: frozenset[str]) -> Closure:
    parts = [compile_output(child, env, names) for child in node.nodes]

    def concat(variables: Mapping[str, Any]) -> Any:
        return "".join([str(part(variables)) for part in parts])  # Jinja's str_join

    return concat


def _or(node: Any, env: Any, names: frozenset[str]) -> Closure:
    left, right = compile_output(node.left, env, names), compile_output(node.right, env, names)
    return lambda variables: left(variables) or right(variables)


def _and(node: Any, env: Any, names: frozenset[str]) -> Closure:
    left, right = compile_output(node.left, env, names), compile_output(node.right, env, names)
    return lambda variables: left(variables) and right(variables)


def _not(node: Any, env: Any, names: frozenset[str]) -> Closure:
    if "not" in env.intercepted_unops:
        raise NotCompiled("not")
    inner = compile_output(node.node, env, names)
    return lambda variables: not inner(variables)


def _plain_arguments(node: Any) -> None:
    if node.kwargs or node.dyn_args is not None or node.dyn_kwargs is not None:
        raise NotCompiled("keyword or star arguments")


def _call(node: Any, env: Any, names: frozenset[str]) -> Closure:
    """A registered function's call, ``sha256(x)``: the global the variables hold (a value of that name
    shadows it: Jinja answers), called as the sandbox calls a plain function."""
    _plain_arguments(node)
    if not isinstance(node.node, nodes.Name) or node.node.name not in FUNCTIONS or node.node.name in names:
        raise NotCompiled("call")
    name = node.node.name
    found = env.globals.get(name)
    if found is None or _PassArg.from_obj(found) is not None:
        raise NotCompiled(name)
    expected: Callable[..., Any] = found
    args = [compile_output(arg, env, names) for arg in node.args]

    def call(variables: Mapping[str, Any]) -> Any:
        if variables.get(name) is not expected:
            raise Unanswered(name)
        resolved = [arg(variables) for arg in args]
        try:
            return expected(*resolved)
        except Exception:  # Jinja calls it again and reports the failure its own way
            raise Unanswered(name) from None

    return call


def _filter(node: Any, env: Any, names: frozenset[str]) -> Closure:
    """``x | name(args)``: the environment's filter, called as Jinja's generated code calls it (directly)."""
    _plain_arguments(node)
    if node.node is None:
        raise NotCompiled("filter block")
    function = env.filters.get(node.name)
    if function is None or _PassArg.from_obj(function) is not None:
        raise NotCompiled(node.name)
    inner = compile_output(node.node, env, names)
    args = [compile_output(arg, env, names) for arg in node.args]
    name = node.name

    def filter_(variables: Mapping[str, Any]) -> Any:
        value = inner(variables)
        resolved = [arg(variables) for arg in args]
        try:
            return function(value, *resolved)
        except Exception:
            raise Unanswered(name) from None

    return filter_


_BUILDERS: dict[type, Callable[[Any, Any, frozenset[str]], Closure]] = {
    nodes.Name: _name,
    nodes.Const: _const,
    nodes.Getattr: _getattr,
    nodes.Getitem: _getitem,
    nodes.Concat: _concat,
    nodes.Or: _or,
    nodes.And: _and,
    nodes.Not: _not,
    nodes.Call: _call,
    nodes.Filter: _filter,
}
