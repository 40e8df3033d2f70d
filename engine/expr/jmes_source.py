"""JMESPath syntax trees compiled to one Python function each, through Python source and ``compile()``.

The closures of ``jmes_closures`` cost a Python call per node of every evaluation. Here the common node
types (field walks, comparisons, ``&&``, ``||``, ``!``, literals, ``@``, multi-selects and function calls)
become statements of one generated function; any other node (projections, filters, slices, indexes,
calls the closures handle otherwise) is its closure from ``jmes_closures``, called from the generated code.
Each statement is the closure's body written out, so the semantics are the closures', which are the tree
interpreter's. Names and literals reach the source only as ``repr`` of a string or as bound constants.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from engine.expr import jmes_closures as jc

__all__ = ["compile_source"]

_FALSE = "({0} == '' or {0} == [] or {0} == {{}} or {0} is None or {0} is False)"
"""JMESPath falsiness (``jmes_closures._false``) written out for a variable."""

_ORDER_OPERATORS = {"lt": "<", "gt": ">", "lte": "<=", "gte": ">="}


def compile_source(tree: dict[str, Any], functions: Any) -> jc.Closure:
    """One function evaluating ``tree`` on a value; NotImplementedError where the closures do not know a node."""
    if tree["type"] not in _WRITERS:  # the whole tree is one closure: no function around it
        return jc.compile_closure(tree, functions)
    writer = _Writer(functions)
    result = writer.value(tree, "v", 1)
    source = "def _query(v):\n" + "".join(writer.lines) + f"    return {result}\n"
    try:
        code = compile(source, "<jmespath>", "exec")
    except (SyntaxError, RecursionError, MemoryError):  # pragma: no cover - nesting past the compiler's limits
        return jc.compile_closure(tree, functions)
    exec(code, writer.namespace)  # the source above: names as repr(str), operators, bound constants
    compiled: jc.Closure = writer.namespace["_query"]
    return compiled


class _Writer:
    """Collects the generated statements and the constants they name."""

    def __init__(self, functions: Any) -> None:
        self.functions = functions
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {
            "_slow_equals": jc._slow_equals, "_slow_comparable": jc._slow_comparable,
            "_actual_number": jc._actual_number, "_PLAIN": jc._PLAIN_COMPARABLE, "_NEVER": jc._NEVER_NUMBERS,
            "AttributeError": AttributeError, "bool": bool, "type": type,
        }
        self._names = itertools.count()

    def _fresh(self, prefix: str = "t") -> str:
        return f"{prefix}{next(self._names)}"

    def _constant(self, value: Any) -> str:
        name = self._fresh("_c")
        self.namespace[name] = value
        return name

    def _emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text + "\n")

    def value(self, node: dict[str, Any], value: str, indent: int) -> str:
        """The variable holding ``node``'s value on ``value`` once the statements written so far ran."""
        write = _WRITERS.get(node["type"])
        if write is not None:
            written = write(self, node, node.get("children", []), value, indent)
            if written is not None:
                return written
        closure = self._constant(jc.compile_closure(node, self.functions))
        return self._assign(indent, f"{closure}({value})")

    def _assign(self, indent: int, expression: str) -> str:
        target = self._fresh()
        self._emit(indent, f"{target} = {expression}")
        return target

    def path(self, names: list[str], value: str, indent: int) -> str:
        target = self._fresh()
        walk = "".join(f".get({name!r})" for name in names)
        self._emit(indent, "try:")
        self._emit(indent + 1, f"{target} = {value}{walk}")
        self._emit(indent, "except AttributeError:")
        self._emit(indent + 1, f"{target} = None")
        return target


def _field(w: _Writer, node: dict[str, Any], _children: list[Any], value: str, indent: int) -> str:
    return w.path([node["value"]], value, indent)


def _chain(w: _Writer, _node: dict[str, Any], children: list[Any], value: str, indent: int) -> str:
    run: list[str] = []
    for child in children:
        if child["type"] == "field":
            run.append(child["value"])
            continue
        if run:
            value = w.path(run, value, indent)
            run = []
        value = w.value(child, value, indent)
    if run:
        value = w.path(run, value, indent)
    return value


def _literal(w: _Writer, node: dict[str, Any], _children: list[Any], _value: str, _indent: int) -> str:
    return w._constant(node["value"])


def _identity(_w: _Writer, _node: dict[str, Any], _children: list[Any], value: str, _indent: int) -> str:
    return value


def _comparator(w: _Writer, node: dict[str, Any], children: list[Any], value: str, indent: int) -> str:
    op = node["value"]
    left = w.value(children[0], value, indent)
    right = w.value(children[1], value, indent)
    if op in ("eq", "ne"):
        negate = "not " if op == "ne" else ""
        if children[1]["type"] == "literal" and type(children[1]["value"]) is not bool:
            same = f"({left} == {right} if type({left}) is not bool else _slow_equals({left}, {right}))"
        else:
            same = (f"({left} == {right} if type({left}) is not bool and type({right}) is not bool "
                    f"else _slow_equals({left}, {right}))")
        return w._assign(indent, f"{negate}{same}")
    comparable = "(type({0}) in _PLAIN or _slow_comparable({0}))"
    both = f"{comparable.format(left)} and {comparable.format(right)}"
    return w._assign(indent, f"({left} {_ORDER_OPERATORS[op]} {right}) if ({both}) else None")


def _and_or(w: _Writer, node: dict[str, Any], children: list[Any], value: str, indent: int) -> str:
    left = w.value(children[0], value, indent)
    target = w._fresh()
    test = _FALSE.format(left)
    w._emit(indent, f"if {test}:" if node["type"] == "and_expression" else f"if not {test}:")
    w._emit(indent + 1, f"{target} = {left}")
    w._emit(indent, "else:")
    right = w.value(children[1], value, indent + 1)
    w._emit(indent + 1, f"{target} = {right}")
    return target


def _not(w: _Writer, _node: dict[str, Any], children: list[Any], value: str, indent: int) -> str:
    r = w.value(children[0], value, indent)
    return w._assign(indent, f"(not {r}) if type({r}) in _NEVER else "
                             f"(False if _actual_number({r}) and {r} == 0 else not {r})")


def _multi_select(w: _Writer, node: dict[str, Any], children: list[Any], value: str, indent: int) -> str:
    """``[a, b]`` or ``{x: a, y: b}``: null on null (its parts not evaluated), else its parts in order."""
    target = w._fresh()
    w._emit(indent, f"if {value} is None:")
    w._emit(indent + 1, f"{target} = None")
    w._emit(indent, "else:")
    if node["type"] == "multi_select_list":
        parts = [w.value(child, value, indent + 1) for child in children]
        w._emit(indent + 1, f"{target} = [{', '.join(parts)}]")
    else:
        pairs = [(w._constant(child["value"]), w.value(child["children"][0], value, indent + 1)) for child in children]
        w._emit(indent + 1, f"{target} = {{{', '.join(f'{key}: {part}' for key, part in pairs)}}}")
    return target


def _function(w: _Writer, node: dict[str, Any], children: list[Any], value: str, indent: int) -> str | None:
    """A call: the arguments written out, then one call doing the closure's checks."""
    if not children:
        return None
    apply = _applier(node["value"], len(children), w.functions)
    if apply is None:
        return None
    args = [w.value(child, value, indent) for child in children]
    return w._assign(indent, f"{w._constant(apply)}({', '.join(args)})")


def _applier(name: str, count: int, functions: Any) -> Callable[..., Any] | None:
    """``jmes_closures._function_of_few``'s body over resolved arguments, or None when the closures call the
    function otherwise (unknown or wrong count: the closure raises the interpreter's error)."""
    checks = jc._argument_checks(functions, name, count)
    if checks is None:
        return None
    method, tests = checks
    direct = getattr(method, "direct", None)
    call = functions.call_function
    per_argument: list[tuple[bool, frozenset[type], tuple[frozenset[type], ...]]] = [(False, frozenset(), ())] * count
    for index, accepted, element_types in tests:
        per_argument[index] = (True, accepted, element_types)
    impl: Any = direct[0] if direct is not None else None
    failure: Any = direct[1] if direct is not None else None
    fits = jc._elements_fit
    if count > 2:

        def many(*resolved: Any) -> Any:
            if tests and not jc._fits(list(resolved), tests):
                return call(name, list(resolved))  # its checks raise the error the interpreter raises
            if impl is None:
                return method(functions, *resolved)
            try:
                return impl(*resolved)
            except Exception as exc:
                jc._raise_described(failure, exc, list(resolved))

        return many
    check0, accepted0, elements0 = per_argument[0]

    if count == 1:

        def one(a: Any) -> Any:
            if check0 and (type(a) not in accepted0 or (elements0 and not fits(a, elements0))):
                return call(name, [a])  # its checks raise the error the interpreter raises
            if impl is None:
                return method(functions, a)
            try:
                return impl(a)
            except Exception as exc:
                jc._raise_described(failure, exc, [a])

        return one
    check1, accepted1, elements1 = per_argument[1]

    def two(a: Any, b: Any) -> Any:
        if ((check0 and (type(a) not in accepted0 or (elements0 and not fits(a, elements0))))
                or (check1 and (type(b) not in accepted1 or (elements1 and not fits(b, elements1))))):
            return call(name, [a, b])  # its checks raise the error the interpreter raises
        if impl is None:
            return method(functions, a, b)
        try:
            return impl(a, b)
        except Exception as exc:
            jc._raise_described(failure, exc, [a, b])

    return two


_WRITERS: dict[str, Callable[[_Writer, dict[str, Any], list[Any], str, int], str | None]] = {
    "field": _field, "subexpression": _chain, "index_expression": _chain, "pipe": _chain,
    "literal": _literal, "current": _identity, "identity": _identity, "comparator": _comparator,
    "and_expression": _and_or, "or_expression": _and_or, "not_expression": _not,
    "function_expression": _function, "multi_select_list": _multi_select, "multi_select_dict": _multi_select,
}
