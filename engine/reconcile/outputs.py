"""A step's outputs: the names it publishes at its end for the steps after it.

When the step's actions went through (done, also with a `continue` verdict recorded), each output is
evaluated once over the step's scope, its own `set`/`as` names included, before its `done` message.
When the step did not go through (a wait or refusal stopped it, a required step was not done, its
`when` did not hold, or it failed), each output reads its `default`, or null: a later step never
reads a name the step left half-computed.
"""

from __future__ import annotations

from engine.reconcile.context import PassContext
from engine.rules.model import Step

__all__ = ["publish", "publish_defaults"]


def publish(ctx: PassContext, step: Step) -> None:
    """Bind each output of a step whose actions went through, in order (a later output reads an earlier)."""
    for output in step.outputs:
        ctx.scope[output.value.name] = ctx.evaluate_value(output.value, ctx.scope)


def publish_defaults(ctx: PassContext, step: Step) -> None:
    """Bind each output of a step that did not go through to its default (null without one)."""
    for output in step.outputs:
        ctx.scope[output.value.name] = None if output.default is None else ctx.evaluate(output.default)
