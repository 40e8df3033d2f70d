"""Lint of a step's outputs: what each reads, and the names they take.

An output is a name a step publishes at its end for every later step: its value reads the step's
own `set`/`as` names (evaluated after the last action), its `default` only what the step saw
before its actions (values, inputs, outputs of earlier steps), since it stands in for a step that
did not go through. An output's name is one meaning for the pass: it may not hide a value, an
input, a function, a reserved name or another step's output; it may repeat a name its own step
binds (publishing that binding).
"""

from __future__ import annotations

from collections.abc import Callable

from engine.rules import model
from engine.rules.errors import Position, RuleError

__all__ = ["check_output", "check_output_names"]


def check_output(output: model.Output, step: str, scope: set[str], before: set[str], need: Callable[..., None]) -> None:
    """The output's value reads the step's scope at its end; its default, what the step saw before it ran."""
    value = output.value
    what = f"step {step}.outputs.{value.name}"
    for expr in (value.query, value.text, *(r.when for r in value.rows), *(r.value for r in value.rows),
                 *(r.text for r in value.rows)):
        need(expr, value.origin, scope, what)
    need(output.default, value.origin, before, f"{what}.default")


def check_output_names(kind: model.CompiledKind, errors: list[RuleError],
                       rebind: Callable[[str, str, Position], None]) -> None:
    """Each output name hides nothing (``rebind`` reports a value, input, function or reserved name); no two
    steps publish one name, and no later step binds an earlier step's output name again."""
    published: dict[str, str] = {}
    for step in kind.steps:
        for action in step.actions:
            names = [action.bind] if action.bind and action.op != "patch" else []
            for name in (*names, *(b.name for b in action.bindings)):
                if name in published:
                    errors.append(RuleError(action.origin, f"step {step.name} binds {name!r}, the output of step "
                                                           f"{published[name]}: later steps read that output by "
                                                           "this name; rename one"))
        for output in step.outputs:
            name = output.value.name
            rebind(f"outputs.{name}: the output of step {step.name}", name, output.value.origin)
            if name in published:
                errors.append(RuleError(output.value.origin, f"outputs.{name}: step {step.name} publishes "
                                                             f"{name!r}, already the output of step "
                                                             f"{published[name]}; rename one"))
        for output in step.outputs:
            published.setdefault(output.value.name, step.name)
