"""Name mistakes that compile but fail or mislead later: a step named twice, a name hiding a function.

A value, input or bound name (``as``, ``set``) called like a template function hides that
function in every template (a name ``password`` would hide ``password()``: lint clean, the first
pass failing), so it is refused here; JMESPath keeps functions and names apart, Jinja does not. A
name the engine gives every expression (``clusters``, ``order``, ``item``, ...) is reserved the
same way: the engine's meaning would win silently over the rule's.
"""

from __future__ import annotations

import re

from engine.expr.functions import FUNCTIONS
from engine.expr.jinja import environment
from engine.rules import model
from engine.rules.check import CONTEXT_NAMES
from engine.rules.errors import Position, RuleError
from engine.rules.outputs import check_output_names

__all__ = ["RESERVED_NAMES", "check_names"]

RESERVED_NAMES = CONTEXT_NAMES | {"item", "error"}
"""Names the engine binds in expressions and templates: no input, value or bound name may take one."""


def _template_functions() -> frozenset[str]:
    env = environment()
    return frozenset(FUNCTIONS) | frozenset(name for name, value in env.globals.items() if callable(value))


def check_names(kind: model.CompiledKind, errors: list[RuleError]) -> None:
    """Report steps named twice and names that hide a function templates call."""
    functions = _template_functions()
    first_step: dict[str, Position] = {}
    for step in kind.steps:
        if step.name in first_step:
            errors.append(RuleError(step.origin, f"step name {step.name!r} is used twice (first at "
                                                 f"{first_step[step.name]}): step names must be unique"))
        else:
            first_step.setdefault(step.name, step.origin)

    def shadow(what: str, name: str, origin: Position) -> None:
        if name in functions:
            errors.append(RuleError(origin, f"{what} {name!r} hides the function {name}() in every template: "
                                            "rename it"))
        if name in RESERVED_NAMES:
            errors.append(RuleError(origin, f"{what} {name!r} takes the reserved name {name!r}, which the engine "
                                            "gives every expression and template (the engine's would win): "
                                            "rename it"))

    data = {**{name: "input" for name in kind.inputs}, **{name: "value" for name in kind.values}}

    def rebind(what: str, name: str, origin: Position) -> None:
        shadow(what, name, origin)
        if name in data:
            errors.append(RuleError(origin, f"{what} {name!r} hides the {data[name]} {name!r}: a name is either "
                                            "a value/input (one per pass) or bound by a step; rename one"))

    for item in kind.inputs.values():
        shadow(f"inputs.{item.name}: input", item.name, item.origin)
    for value in kind.values.values():
        shadow(f"values.{value.name}: value", value.name, value.origin)
    for step in kind.steps:
        for action in step.actions:
            if action.bind and action.op != "patch":
                rebind(f"as: the name bound by `as` in step {step.name}", action.bind, action.origin)
            for binding in action.bindings:
                rebind(f"set.{binding.name}: the name set in step {step.name}", binding.name, binding.origin)
    check_output_names(kind, errors, rebind)

_NAMED = re.compile(r"unknown name '([^']+)'|requires '([^']+)'")


def about_broken(error: RuleError, broken: set[str]) -> bool:
    """Whether ``error`` only follows from an element that was invalid and already reported (left out)."""
    match = _NAMED.search(error.message)
    return match is not None and (match.group(1) or match.group(2)) in broken
