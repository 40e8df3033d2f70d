"""The expression layer: compiled JMESPath queries, Jinja templates, and the function library they share.

Modules: ``functions`` (the registry lint reads), ``jmes`` (expression fields), ``jinja`` (rule
strings and child-object templates), ``golang`` (Go-exact formatting), ``errors``.
"""

from engine.expr.errors import ExprError, ExprSyntaxError, FunctionError
from engine.expr.functions import FUNCTIONS, Function, SecretSink, current_sink, use_sink
from engine.expr.jinja import ObjectTemplate, Text, compile_object_template, compile_text, untojsoned_outputs
from engine.expr.jmes import JMESPATH_BUILTINS, Query, compile_query

__all__ = [
    "FUNCTIONS",
    "JMESPATH_BUILTINS",
    "ExprError",
    "ExprSyntaxError",
    "Function",
    "FunctionError",
    "ObjectTemplate",
    "Query",
    "SecretSink",
    "Text",
    "compile_object_template",
    "compile_query",
    "compile_text",
    "current_sink",
    "untojsoned_outputs",
    "use_sink",
]
