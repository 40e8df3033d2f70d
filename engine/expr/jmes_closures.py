"""JMESPath syntax trees compiled to Python closures: the tree interpreter's semantics, node by node,
without its per-node dispatch, which made expressions a fifth of the operator's CPU.

``jmespath.visitor.TreeInterpreter`` looks up a method by the node's type and reads the node's
dict for every node of every evaluation. Here each node becomes one closure once, at compile time;
evaluating calls the closures. Every ``visit_*`` method has its counterpart below with the same
result for every input (the same falsiness, comparisons, projections, null handling); functions
are called through the same ``Functions.call_function`` (its type checks and errors), and an
``&expr`` is the same ``_Expression`` object the built-in functions expect. A node type this module
does not know raises ``NotImplementedError`` at compile time, and the caller keeps the interpreter.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from jmespath import visitor as jvisitor

__all__ = ["Closure", "compile_closure"]

Closure = Callable[[Any], Any]

_slow_equals = jvisitor._equals
_slow_comparable = jvisitor._is_comparable
_actual_number = jvisitor._is_actual_number
_ORDERING = {"lt": operator.lt, "gt": operator.gt, "lte": operator.le, "gte": operator.ge}


def _equals(x: Any, y: Any) -> Any:
    """The interpreter's ``_equals``: ``==`` except that 0 and 1 never equal a boolean. Only a pair with a
    boolean in it can meet that exception, so any other pair is compared at once (its ``Number`` test is an
    ABC check, the most expensive part of a comparison)."""
    if type(x) is not bool and type(y) is not bool:
        return x == y
    return _slow_equals(x, y)


_PLAIN_COMPARABLE = frozenset({int, float, str})
_NEVER_NUMBERS = frozenset({bool, str, type(None), dict, list})


def _comparable(x: Any) -> bool:
    """The interpreter's ``_is_comparable`` (a number but not a boolean, or a string), plain types first."""
    return type(x) in _PLAIN_COMPARABLE or bool(_slow_comparable(x))


def _false(value: Any) -> bool:
    """JMESPath falsiness, spelled as the interpreter's ``_is_false``."""
    return value == "" or value == [] or value == {} or value is None or value is False


class _Runner:
    """What an ``_Expression`` calls back: ``visit(node, value)`` runs the compiled expression."""

    __slots__ = ("_closure",)

    def __init__(self, closure: Closure) -> None:
        self._closure = closure

    def visit(self, _node: Any, value: Any) -> Any:
        return self._closure(value)


def compile_closure(node: dict[str, Any], functions: Any) -> Closure:
    """The closure evaluating ``node`` (a ``jmespath`` AST) on a value; ``functions`` as the interpreter's."""
    kind = node["type"]
    children = node.get("children", [])
    build = _BUILDERS.get(kind)
    if build is None:
        raise NotImplementedError(kind)
    return build(node, children, functions)


def _sub(node: dict[str, Any], functions: Any) -> Closure:
    return compile_closure(node, functions)


def _field(node: dict[str, Any], _children: list[Any], _functions: Any) -> Closure:
    name = node["value"]

    def field(value: Any) -> Any:
        try:
            return value.get(name)
        except AttributeError:
            return None

    return field


def _chain(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    steps = _steps(children, functions)
    if len(steps) == 1:
        return steps[0]
    if len(steps) == 2:
        first, second = steps

        def pair(value: Any) -> Any:
            return second(first(value))

        return pair

    def chain(value: Any) -> Any:
        for step in steps:
            value = step(value)
        return value

    return chain


def _steps(children: list[Any], functions: Any) -> list[Closure]:
    """A chain's children as closures, each run of plain field reads (``a.b.c``) one walk: every step of a
    chain reads what the previous one produced, so the fields' walk is the same as their chain."""
    steps: list[Closure] = []
    run: list[str] = []
    for child in children:
        if child["type"] == "field":
            run.append(child["value"])
            continue
        if run:
            steps.append(_path(run))
            run = []
        steps.append(_sub(child, functions))
    if run:
        steps.append(_path(run))
    return steps


def _path(names: list[str]) -> Closure:
    """Fields read one after another: None as soon as a value has no ``get`` (null, a string, a list)."""
    if len(names) == 1:
        return _field({"value": names[0]}, [], None)
    walk = tuple(names)

    def path(value: Any) -> Any:
        try:
            for name in walk:
                value = value.get(name)
        except AttributeError:
            return None
        return value

    return path


def _comparator(node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    left, right = (_sub(child, functions) for child in children)
    op = node["value"]
    if op in ("eq", "ne"):
        return _equality(left, right, children[1], op == "ne")
    compare = _ORDERING[op]

    def ordering(value: Any) -> Any:
        a, b = left(value), right(value)
        if not (_comparable(a) and _comparable(b)):
            return None
        return compare(a, b)

    return ordering


def _equality(left: Closure, right: Closure, right_node: dict[str, Any], negate: bool) -> Closure:
    """``==`` or ``!=``: ``_equals`` written out in the closure, a literal right side read once."""
    if right_node["type"] == "literal":
        constant = right_node["value"]
        if type(constant) is not bool:

            def equals_constant(value: Any) -> Any:
                a = left(value)
                same = a == constant if type(a) is not bool else _slow_equals(a, constant)
                return not same if negate else same

            return equals_constant

    def equals(value: Any) -> Any:
        a, b = left(value), right(value)
        same = a == b if type(a) is not bool and type(b) is not bool else _slow_equals(a, b)
        return not same if negate else same

    return equals


def _identity(_node: dict[str, Any], _children: list[Any], _functions: Any) -> Closure:
    return lambda value: value


def _expref(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    ref = jvisitor._Expression(children[0], _Runner(_sub(children[0], functions)))
    return lambda _value: ref


def _function(node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    name = node["value"]
    args = [_sub(child, functions) for child in children]
    call = functions.call_function
    checks = _argument_checks(functions, name, len(args))
    if checks is None:
        return lambda value: call(name, [arg(value) for arg in args])
    method, tests = checks
    direct: tuple[Callable[..., Any], Callable[[Exception, list[Any]], Exception | None]] | None = getattr(
        method, "direct", None)
    if len(args) in (1, 2):
        return _function_of_few(name, args, call, method, tests, direct, functions)
    if direct is None:

        def through_method(value: Any) -> Any:
            resolved = [arg(value) for arg in args]
            if tests and not _fits(resolved, tests):
                return call(name, resolved)  # its checks raise the error the interpreter raises
            return method(functions, *resolved)

        return through_method
    impl, failure = direct

    def function(value: Any) -> Any:
        resolved = [arg(value) for arg in args]
        if tests and not _fits(resolved, tests):
            return call(name, resolved)  # its checks raise the error the interpreter raises
        try:
            return impl(*resolved)
        except Exception as exc:
            _raise_described(failure, exc, resolved)

    return function


def _function_of_few(name: str, args: list[Closure], call: Callable[..., Any], method: Callable[..., Any],
                     tests: list[_Test], direct: Any, functions: Any) -> Closure:
    """``_function``'s closures written out for one and two arguments (most calls): the same checks
    in the same order, without a list and a ``_fits`` call per evaluation."""
    per_argument: list[tuple[bool, frozenset[type], tuple[frozenset[type], ...]]] = [(False, frozenset(), ())] * len(
        args)
    for index, accepted, element_types in tests:
        per_argument[index] = (True, accepted, element_types)
    check0, accepted0, elements0 = per_argument[0]
    impl: Any = direct[0] if direct is not None else None
    failure: Any = direct[1] if direct is not None else None

    if len(args) == 1:
        (arg0,) = args

        def one(value: Any) -> Any:
            a = arg0(value)
            if check0 and (type(a) not in accepted0 or (elements0 and not _elements_fit(a, elements0))):
                return call(name, [a])  # its checks raise the error the interpreter raises
            if impl is None:
                return method(functions, a)
            try:
                return impl(a)
            except Exception as exc:
                _raise_described(failure, exc, [a])

        return one
    arg0, arg1 = args
    check1, accepted1, elements1 = per_argument[1]

    def two(value: Any) -> Any:
        a, b = arg0(value), arg1(value)
        if ((check0 and (type(a) not in accepted0 or (elements0 and not _elements_fit(a, elements0))))
                or (check1 and (type(b) not in accepted1 or (elements1 and not _elements_fit(b, elements1))))):
            return call(name, [a, b])  # its checks raise the error the interpreter raises
        if impl is None:
            return method(functions, a, b)
        try:
            return impl(a, b)
        except Exception as exc:
            _raise_described(failure, exc, [a, b])

    return two


def _raise_described(failure: Callable[[Exception, list[Any]], Exception | None], exc: Exception,
                     resolved: list[Any]) -> NoReturn:
    """What ``call_described`` raises for a function's failure: its described error (the argument types, never
    the values), or the failure itself where it passes through as it is."""
    problem = failure(exc, resolved)
    if problem is None:
        raise exc
    raise problem from None


_KNOWN_TYPES = (bool, int, float, str, list, dict, type(None), OrderedDict, jvisitor._Expression)
"""Python types whose names JMESPath's type check knows; a value of any other type takes the checked path."""

_Test = tuple[int, frozenset[type], tuple[frozenset[type], ...]]


def _types_named(names: Iterable[str]) -> frozenset[type]:
    """The known types whose ``__name__`` is one of ``names`` (JMESPath checks ``type(value).__name__``)."""
    wanted = set(names)
    return frozenset(kind for kind in _KNOWN_TYPES if kind.__name__ in wanted)


def _argument_checks(functions: Any, name: str, count: int) -> tuple[Callable[..., Any], list[_Test]] | None:
    """What ``Functions.call_function`` checks before it calls ``name`` with ``count`` arguments, precomputed:
    the method it calls, and per declared argument that restricts its type the index, the types it accepts
    and, for an array of given element types, the accepted element types per alternative. None when the
    count is wrong (``call_function`` raises the arity error) or the function is unknown."""
    spec = type(functions).FUNCTION_TABLE.get(name)
    if spec is None:
        return None
    signature = spec["signature"]
    variadic = bool(signature and signature[-1].get("variadic"))
    if count < len(signature) if variadic else count != len(signature):
        return None
    tests: list[_Test] = []
    for index, argument in enumerate(signature):
        types = argument["types"]
        if types:
            names, subtypes = functions._get_allowed_pytypes(types)
            tests.append((index, _types_named(names), tuple(_types_named(group) for group in subtypes)))
    return spec["function"], tests


def _fits(resolved: list[Any], tests: list[_Test]) -> bool:
    """Whether JMESPath's type check passes ``resolved`` (False also when it might not: the checked path
    then decides, and raises its error)."""
    for index, accepted, element_types in tests:
        current = resolved[index]
        if type(current) not in accepted:
            return False
        if element_types and not _elements_fit(current, element_types):
            return False
    return True


def _elements_fit(current: Any, alternatives: tuple[frozenset[type], ...]) -> bool:
    """``Functions._subtype_check`` as a test: one alternative holds for every element; with several, the
    first element's type chooses it (an empty array passes)."""
    try:
        if len(alternatives) == 1:
            accepted = alternatives[0]
            return all(type(element) in accepted for element in current)
        if not current:
            return True
        first = type(current[0])
        for accepted in alternatives:
            if first in accepted:
                return all(type(element) in accepted for element in current)
        return False
    except Exception:
        return False


def _filter_projection(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    base, project, keep = (_sub(child, functions) for child in children)

    def filtered(value: Any) -> Any:
        items = base(value)
        if not isinstance(items, list):
            return None
        return [current for element in items
                if not _false(keep(element)) and (current := project(element)) is not None]

    return filtered


def _flatten(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    base = _sub(children[0], functions)

    def flatten(value: Any) -> Any:
        items = base(value)
        if not isinstance(items, list):
            return None
        merged: list[Any] = []
        for element in items:
            if isinstance(element, list):
                merged.extend(element)
            else:
                merged.append(element)
        return merged

    return flatten


def _index(node: dict[str, Any], _children: list[Any], _functions: Any) -> Closure:
    at = node["value"]

    def index(value: Any) -> Any:
        if not isinstance(value, list):
            return None
        try:
            return value[at]
        except IndexError:
            return None

    return index


def _slice(_node: dict[str, Any], children: list[Any], _functions: Any) -> Closure:
    cut = slice(*children)
    return lambda value: value[cut] if isinstance(value, list) else None


def _literal(node: dict[str, Any], _children: list[Any], _functions: Any) -> Closure:
    constant = node["value"]
    return lambda _value: constant


def _multi_select_dict(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    pairs = [(child["value"], _sub(child["children"][0], functions)) for child in children]

    def select(value: Any) -> Any:
        if value is None:
            return None
        return {key: get(value) for key, get in pairs}

    return select


def _multi_select_list(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    parts = [_sub(child, functions) for child in children]
    return lambda value: None if value is None else [part(value) for part in parts]


def _or(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    left, right = (_sub(child, functions) for child in children)

    def either(value: Any) -> Any:
        matched = left(value)
        return right(value) if _false(matched) else matched

    return either


def _and(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    left, right = (_sub(child, functions) for child in children)

    def both(value: Any) -> Any:
        matched = left(value)
        return matched if _false(matched) else right(value)

    return both


def _not(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    operand = _sub(children[0], functions)

    def negated(value: Any) -> Any:
        result = operand(value)
        if type(result) in _NEVER_NUMBERS:
            return not result
        if _actual_number(result) and result == 0:
            return False  # !0 is false: 0 is no special value in JMESPath
        return not result

    return negated


def _projection(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    base, project = (_sub(child, functions) for child in children)

    def projected(value: Any) -> Any:
        items = base(value)
        if not isinstance(items, list):
            return None
        return _projected_each(items, project)

    return projected


def _value_projection(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    base, project = (_sub(child, functions) for child in children)

    def projected(value: Any) -> Any:
        found = base(value)
        try:
            items = found.values()
        except AttributeError:
            return None
        return _projected_each(items, project)

    return projected


def _projected_each(items: Iterable[Any], project: Closure) -> list[Any]:
    """A projection's result: each element projected, in order, the nulls left out."""
    return [current for element in items if (current := project(element)) is not None]


def _key_val_pair(_node: dict[str, Any], children: list[Any], functions: Any) -> Closure:
    return _sub(children[0], functions)


_BUILDERS: dict[str, Callable[[dict[str, Any], list[Any], Any], Closure]] = {
    "field": _field, "subexpression": _chain, "index_expression": _chain, "pipe": _chain,
    "comparator": _comparator, "current": _identity, "identity": _identity, "expref": _expref,
    "function_expression": _function, "filter_projection": _filter_projection, "flatten": _flatten,
    "index": _index, "slice": _slice, "literal": _literal, "multi_select_dict": _multi_select_dict,
    "multi_select_list": _multi_select_list, "or_expression": _or, "and_expression": _and,
    "not_expression": _not, "projection": _projection, "value_projection": _value_projection,
    "key_val_pair": _key_val_pair,
}
