"""The registry of the rule function library: what a function is, how it is registered, how a call is checked.

The library's modules (``functions``, ``strings_and_maps``, ``cluster_state``, ``ownership``) register into it on
import; ``functions`` imports the others, so importing it completes ``FUNCTIONS``. The registry imports none of
them, so no module of the library imports one that imports it back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from engine.expr.errors import LONE_SURROGATE, ExprError, FunctionError, PassThrough

__all__ = ["FUNCTIONS", "Function", "call_described", "check_arguments", "described_failure", "register"]


@dataclass(frozen=True)
class Function:
    """One registered function: its name, how many arguments it takes and of which JMESPath types.

    ``jmes_types`` has one entry per declared argument, each a tuple of JMESPath type names
    (``string``, ``number``, ``boolean``, ``array``, ``object``, ``null``, ``array-string``...);
    an empty tuple accepts anything. When ``arity[1]`` is None the last entry repeats.
    """

    name: str
    arity: tuple[int, int | None]
    jmes_types: tuple[tuple[str, ...], ...]
    impl: Callable[..., Any]
    doc: str
    returns: str = "any"
    pure: bool = True
    literal_checks: Mapping[int, Callable[[Any], str | None]] = field(default_factory=dict)
    """Argument index to a check of a literal argument at compile time (lint): the problem, or None."""

    @property
    def variadic(self) -> bool:
        return self.arity[1] is None

    @property
    def signature(self) -> str:
        """A readable signature such as ``time_add(string, string|number) -> string``."""
        args = ["|".join(types) or "any" for types in self.jmes_types]
        if self.variadic and args:
            args[-1] += "..."
        return f"{self.name}({', '.join(args)}) -> {self.returns}"


_REGISTRY: dict[str, Function] = {}
_F = TypeVar("_F", bound=Callable[..., Any])

FUNCTIONS: Mapping[str, Function] = MappingProxyType(_REGISTRY)
"""Every registered function by name (complete once ``engine.expr.functions`` is imported)."""


def register(
    name: str,
    *types: tuple[str, ...],
    returns: str,
    variadic: bool = False,
    pure: bool = True,
    literal_checks: Mapping[int, Callable[[Any], str | None]] | None = None,
) -> Callable[[_F], _F]:
    """Decorate a function's implementation to add it to the library under ``name``, with its argument types."""

    def add(impl: _F) -> _F:
        if name in _REGISTRY:
            raise RuntimeError(f"function {name}() registered twice")
        arity = (len(types), None if variadic else len(types))
        doc = (impl.__doc__ or "").strip()
        checks = MappingProxyType(dict(literal_checks or {}))
        _REGISTRY[name] = Function(name, arity, tuple(types), impl, doc, returns, pure, checks)
        return impl

    return add


# --- argument checking (JMESPath does its own; Jinja calls go through this) -----------------------

_PY_TO_JMES = {
    bool: "boolean",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    tuple: "array",
    dict: "object",
    type(None): "null",
}


def _jmes_type(value: Any) -> str:
    kind = _PY_TO_JMES.get(type(value))
    if kind is not None:
        return kind
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _accepts(value: Any, allowed: tuple[str, ...]) -> bool:
    if not allowed:
        return True
    actual = _jmes_type(value)
    for name in allowed:
        base, _, sub = name.partition("-")
        if base != actual:
            continue
        if not sub or all(_jmes_type(item) == sub for item in value):
            return True
    return False


def call_described(fn: Function, args: tuple[Any, ...]) -> Any:
    """Call ``fn``; a failure names the argument types it met (never their values)."""
    try:
        return fn.impl(*args)
    except Exception as exc:
        problem = described_failure(fn, exc, args)
        if problem is None:
            raise
        raise problem from None


def described_failure(fn: Function, exc: Exception, args: Sequence[Any]) -> FunctionError | None:
    """What a failure of ``fn`` on ``args`` is reported as: a FunctionError naming the argument types it met
    (never their values), or None for an error that passes through as it is."""
    if isinstance(exc, PassThrough | ExprError):  # an ExprError: a value read inside the call failed, named
        return None
    if isinstance(exc, FunctionError):
        reason = str(exc)
    elif isinstance(exc, UnicodeEncodeError) and exc.reason == "surrogates not allowed":
        reason = f"{fn.name}(): {LONE_SURROGATE}"  # the only text str.encode("utf-8") refuses
    else:
        reason = f"{fn.name}(): {type(exc).__name__}"
    met = ", ".join(_jmes_type(arg) for arg in args) or "no arguments"
    return FunctionError(f"{reason} (arguments: {met})")


def check_arguments(fn: Function, args: tuple[Any, ...]) -> None:
    """Check arity and JMESPath types the way JMESPath would; the message names types, not values."""
    low, high = fn.arity
    if len(args) < low or (high is not None and len(args) > high):
        expected = f"at least {low}" if high is None else str(low)
        raise FunctionError(f"{fn.name}() takes {expected} argument(s), got {len(args)}")
    for index, value in enumerate(args):
        allowed = fn.jmes_types[min(index, len(fn.jmes_types) - 1)] if fn.jmes_types else ()
        if not _accepts(value, allowed):
            raise FunctionError(
                f"{fn.name}() argument {index + 1} must be {'|'.join(allowed)}, got {_jmes_type(value)}"
            )
