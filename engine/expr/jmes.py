"""Compiled JMESPath expressions: the language of every expression field in a rule file.

An expression is parsed once (``compile_query``), checked against the function registry, and
analysed for the top-level context names it reads, so the rule compiler can order steps and
lint can flag typos. Evaluation uses one shared ``jmespath.Options`` built at import, and runs the
expression compiled to one Python function (``jmes_source``, with ``jmes_closures`` for the less common
nodes: the interpreter's semantics without its dispatch).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import jmespath
from jmespath import exceptions as jexc
from jmespath import functions as jfunctions
from jmespath import visitor as jvisitor

from engine.expr.errors import ExprError, ExprSyntaxError, FunctionError, PassThrough, safe_reason
from engine.expr.functions import FUNCTIONS, Function, call_described, check_arguments, described_failure
from engine.expr.jmes_closures import Closure
from engine.expr.jmes_source import compile_source
from engine.expr.suggest import did_you_mean

__all__ = ["JMESPATH_BUILTINS", "Query", "compile_query"]

JMESPATH_BUILTINS: frozenset[str] = frozenset(jfunctions.Functions.FUNCTION_TABLE)
"""The functions JMESPath itself provides (abs, contains, join, length, merge, sort_by, ...)."""

REDEFINED_BUILTINS: frozenset[str] = frozenset({"keys", "values"})
"""Built-ins the registry redefines with the same result, so that templates have them too."""

_CLASHES = JMESPATH_BUILTINS & set(FUNCTIONS) - REDEFINED_BUILTINS
if _CLASHES:  # pragma: no cover - a registry mistake, caught on import
    raise RuntimeError(f"registered functions shadow JMESPath builtins: {sorted(_CLASHES)}")


def _method(fn: Function) -> Callable[..., Any]:
    """A ``_func_<name>`` method for the jmespath Functions class, carrying its signature."""
    if fn.variadic:
        # JMESPath does not type-check the repeated tail of a variadic signature; do it here.
        def call(_self: object, *args: Any) -> Any:
            check_arguments(fn, args)
            return call_described(fn, args)
    else:

        def call(_self: object, *args: Any) -> Any:
            return call_described(fn, args)

        # What a compiled call (jmes_closures) runs instead of this method, once JMESPath's type check passed.
        call.direct = (fn.impl, lambda exc, args: described_failure(fn, exc, args))  # type: ignore[attr-defined]

    spec: list[dict[str, Any]] = [{"types": list(types)} for types in fn.jmes_types]
    if fn.variadic and spec:
        spec[-1]["variadic"] = True
    call.signature = tuple(spec)  # type: ignore[attr-defined]
    call.__name__ = f"_func_{fn.name}"
    return call


_EngineFunctions = type(
    "EngineFunctions",
    (jfunctions.Functions,),
    {f"_func_{name}": _method(fn) for name, fn in FUNCTIONS.items()},
)
_OPTIONS = jmespath.Options(custom_functions=_EngineFunctions())
_INTERPRETER = jvisitor.TreeInterpreter(_OPTIONS)
"""One interpreter for every evaluation: it holds no state but its node-type method cache, which
``ParsedResult.search`` would build afresh on each call (about 5x the cost of the evaluation)."""


def _builtin_arity(name: str) -> tuple[int, int | None]:
    signature = jfunctions.Functions.FUNCTION_TABLE[name]["signature"]
    if signature and signature[-1].get("variadic"):
        return len(signature), None
    return len(signature), len(signature)


def _arity(name: str) -> tuple[int, int | None]:
    fn = FUNCTIONS.get(name)
    return fn.arity if fn is not None else _builtin_arity(name)


# Node types whose first child is evaluated against the current value and whose other children
# are evaluated against what the first produced (or per element of it).
_CHAINED = frozenset(
    {"subexpression", "index_expression", "projection", "value_projection", "filter_projection", "pipe"}
)


class _Walk:
    """Collects the root names and the function calls of a parsed expression, checking each call."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.names: set[str] = set()
        self.functions: set[str] = set()
        self.problems: list[ExprSyntaxError] = []
        """Every unknown function, wrong argument count and bad literal argument, in the order met."""

    def visit(self, node: Mapping[str, Any], at_root: bool) -> None:
        kind = node["type"]
        children: list[Mapping[str, Any]] = node.get("children", [])
        if kind == "field":
            if at_root:
                self.names.add(node["value"])
        elif kind in ("current", "identity"):
            if at_root:
                self.names.add("@")
        elif kind == "function_expression":
            self._check_call(node["value"], len(children))
            self._check_literals(node["value"], children)
            for child in children:
                self.visit(child, at_root and child["type"] != "expref")
        elif kind == "expref":
            for child in children:
                self.visit(child, False)
        elif kind in _CHAINED:
            for index, child in enumerate(children):
                self.visit(child, at_root and index == 0)
        else:
            for child in children:
                if isinstance(child, Mapping):
                    self.visit(child, at_root)

    def _offset(self, name: str) -> int | None:
        match = re.search(rf"(?<![\w$]){re.escape(name)}\s*\(", self.source)
        return match.start() if match else None

    def _check_call(self, name: str, count: int) -> None:
        if name not in FUNCTIONS and name not in JMESPATH_BUILTINS:
            hint = did_you_mean(name, FUNCTIONS.keys() | JMESPATH_BUILTINS, call=True)
            self.problems.append(ExprSyntaxError(f"unknown function {name}(){hint}", self._offset(name),
                                                 source=self.source))
            return
        low, high = _arity(name)
        if count < low or (high is not None and count > high):
            expected = f"at least {low}" if high is None else str(low)
            self.problems.append(ExprSyntaxError(
                f"{name}() takes {expected} argument(s), got {count}", self._offset(name), source=self.source
            ))
            return
        self.functions.add(name)

    def _check_literals(self, name: str, args: list[Mapping[str, Any]]) -> None:
        """A literal argument a function can judge before run time (a regular expression) is judged now."""
        fn = FUNCTIONS.get(name)
        for index, check in (fn.literal_checks.items() if fn is not None else ()):
            if index < len(args) and args[index].get("type") == "literal":
                problem = check(args[index].get("value"))
                if problem is not None:
                    self.problems.append(ExprSyntaxError(problem, self._offset(name), source=self.source))


def _parse_error(exc: jexc.ParseError, source: str) -> ExprSyntaxError:
    if isinstance(exc, jexc.LexerError):
        message = f"invalid JMESPath expression: {exc.message}"
    elif isinstance(exc, jexc.IncompleteExpressionError):
        message = "invalid JMESPath expression: incomplete expression"
    else:
        message = f"invalid JMESPath expression: {exc.msg} (token {exc.token_value!r})"
    return ExprSyntaxError(message, exc.lex_position, source=source)


class Query:
    """A compiled JMESPath expression, with the context names and functions it uses."""

    __slots__ = ("_closure", "_parsed", "functions", "names", "origin", "source")

    def __init__(self, source: str, parsed: Any, names: frozenset[str], functions: frozenset[str],
                 origin: str | None = None) -> None:
        self.source = source
        self.origin = origin
        """Where the expression was written (``rules/x.yaml:12:9``), named by every evaluation error."""
        self.names = names
        """Top-level context names read (``@`` when the whole context is read)."""
        self.functions = functions
        self._parsed = parsed
        self._closure = _compiled(parsed.parsed)

    def __repr__(self) -> str:
        return f"Query({self.source!r})"

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        """The expression's value on ``context``; ExprError (naming no value) when a function fails, or the
        error of a value it read (named as read by this expression)."""
        try:
            if self._closure is not None:
                return self._closure(context)
            return _INTERPRETER.visit(self._parsed.parsed, context)
        except jexc.JMESPathTypeError as exc:
            actual = jfunctions.TYPES_MAP.get(exc.actual_type, exc.actual_type)
            reason = f"{exc.function_name}() expected {'|'.join(exc.expected_types)}, got {actual}"
            raise ExprError(self.source, reason, origin=self.origin) from None
        except jexc.ArityError as exc:
            reason = f"{exc.function_name}() got {exc.actual_arity} argument(s)"
            raise ExprError(self.source, reason, origin=self.origin) from None
        except FunctionError as exc:
            raise ExprError(self.source, str(exc), origin=self.origin) from None
        except PassThrough:
            raise
        except ExprError as exc:  # a value it read failed when first computed: that error, read by this one
            raise exc.read_by(self.origin, self.source) from None
        except Exception as exc:
            raise ExprError(self.source, safe_reason(exc, self.source), origin=self.origin) from None


def _compiled(tree: dict[str, Any]) -> Closure | None:
    """The expression as one compiled function (the tree interpreter's dispatch is most of its cost), or None
    to keep the interpreter for a node type the compiler does not know."""
    try:
        return compile_source(tree, _OPTIONS.custom_functions)
    except NotImplementedError:
        return None


def _negation_trap(node: Mapping[str, Any]) -> bool:
    """``!a.b`` parses as ``(!a).b``: a path read off a boolean, always null."""
    children = [c for c in node.get("children", []) if isinstance(c, Mapping)]
    if node.get("type") in _CHAINED and children and children[0].get("type") == "not_expression":
        return True
    return any(_negation_trap(child) for child in children)


def compile_query(source: str, origin: str | None = None) -> Query:
    """Parse and check ``source``; ExprSyntaxError(message, offset) on bad syntax or an unknown function.

    ``origin`` (file:line:col) is named by every error evaluating it."""
    try:
        parsed = jmespath.compile(source)
    except jexc.ParseError as exc:
        raise _parse_error(exc, source) from None
    except jexc.EmptyExpressionError:
        raise ExprSyntaxError("empty JMESPath expression", 0, source=source) from None
    if _negation_trap(parsed.parsed):
        raise ExprSyntaxError("`!a.b` reads as `(!a).b`, which is always null; write `!(a.b)`",
                              source.find("!"), source=source)
    walk = _Walk(source)
    walk.visit(parsed.parsed, True)
    if walk.problems:
        first, *others = walk.problems
        raise ExprSyntaxError(first.message, first.offset, source=source, others=tuple(others))
    return Query(source, parsed, frozenset(walk.names), frozenset(walk.functions), origin)
