"""The one function library that rule expressions (JMESPath) and templates (Jinja) share.

Every function is registered once, with its JMESPath argument types and its implementation, in a module of its
family (``hashing``, ``text_encoding``, ``arithmetic``, ``times``, ``lists``, ``strings_and_maps``, ``ownership``,
``cluster_state``); importing this module imports them all, so ``FUNCTIONS`` is complete. ``jmes.py`` turns the
registry into JMESPath custom functions, ``jinja.py`` into Jinja globals and filters, and ``engine lint`` reads it to
report unknown functions. All functions are pure except ``password`` and the cluster questions (``cluster_state``).
Implementations raise ``FunctionError`` with messages that never quote an argument, since arguments may be secrets.
"""

from __future__ import annotations

# Each family registers its functions on import.
from engine.expr import (  # noqa: F401
    arithmetic,
    cluster_state,
    hashing,
    lists,
    ownership,
    strings_and_maps,
    text_encoding,
    times,
)
from engine.expr.errors import ExprError, ExprSyntaxError, FunctionError
from engine.expr.hashing import address_only
from engine.expr.lists import controlled_by
from engine.expr.registry import FUNCTIONS, Function, call_described, check_arguments, described_failure
from engine.expr.secret_sink import SecretSink, current_sink, redact_secrets, remember_secrets, use_sink
from engine.expr.text_encoding import fold

__all__ = [
    "FUNCTIONS",
    "ExprError",
    "ExprSyntaxError",
    "Function",
    "FunctionError",
    "SecretSink",
    "address_only",
    "call_described",
    "check_arguments",
    "controlled_by",
    "current_sink",
    "described_failure",
    "fold",
    "redact_secrets",
    "remember_secrets",
    "use_sink",
]
