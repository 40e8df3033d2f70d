"""The one sandboxed Jinja environment every template renders in, with the registry's functions.

``ImmutableSandboxedEnvironment`` (no mutation of the context, no dunder access), null-safe lookups like the
expressions', ``StrictUndefined`` for a name the context lacks; each registered function a global and, when it takes
an argument, a filter. Built once on first use, so analysis, render and the lint all see the same globals.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from jinja2 import StrictUndefined, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.expr.functions import FUNCTIONS, Function, call_described, check_arguments

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
