"""Static analysis of a parsed template: the context names it reads, the functions it calls, and every unknown
function or filter and refused literal as an ``ExprSyntaxError`` at its token.

Jinja's nodes and errors know their line only; the offsets here are found in the source (``_TokenFinder``) or by
lexing it again (``_syntax_offset``), so ``engine lint`` can point at the token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from jinja2 import TemplateSyntaxError, meta, nodes
from jinja2.lexer import Token, TokenStream
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.expr.errors import ExprSyntaxError
from engine.expr.functions import FUNCTIONS
from engine.expr.suggest import did_you_mean


def _declared(ast: nodes.Template) -> set[str]:
    """Names the template binds itself: set/for/with targets, macro names and parameters, ``caller``."""
    names = {node.name for node in ast.find_all(nodes.Name) if node.ctx in ("store", "param")}
    names.update(node.name for node in ast.find_all(nodes.Macro))
    names.add("caller")
    return names


def _analyse(
    ast: nodes.Template, env: ImmutableSandboxedEnvironment, source: str
) -> tuple[frozenset[str], frozenset[str]]:
    """The context names a template reads and the functions it calls; every unknown function or filter, and
    every literal a function refuses, is an error at its token (all of them, in one ExprSyntaxError)."""
    declared = _declared(ast)
    calls: set[str] = set()
    problems: list[ExprSyntaxError] = []
    finder = _TokenFinder(source)
    for call in ast.find_all(nodes.Call):
        if not isinstance(call.node, nodes.Name):
            continue
        name = call.node.name
        if name in declared:
            continue
        offset = finder.call(name, call.lineno)
        if name not in FUNCTIONS and name not in env.globals:
            hint = did_you_mean(name, FUNCTIONS.keys() | env.globals.keys(), call=True)
            problems.append(ExprSyntaxError(f"unknown function {name}(){hint}", offset, line=call.lineno,
                                            source=source))
            continue
        calls.add(name)
        problems.extend(_literal_problems(name, list(call.args), call.lineno, offset, source))
    for flt in ast.find_all(nodes.Filter):
        offset = finder.filter(flt.name, flt.lineno)
        if flt.name not in env.filters:
            hint = did_you_mean(flt.name, env.filters.keys())
            problems.append(ExprSyntaxError(f"unknown filter {flt.name!r}{hint}", offset, line=flt.lineno,
                                            source=source))
            continue
        if flt.name in FUNCTIONS:
            calls.add(flt.name)
            problems.extend(_literal_problems(flt.name, [flt.node, *flt.args], flt.lineno, offset, source))
    if problems:
        problems.sort(key=lambda p: (p.offset is None, p.offset or 0))
        raise ExprSyntaxError(problems[0].message, problems[0].offset, line=problems[0].line, source=source,
                              others=tuple(problems[1:]))
    names = meta.find_undeclared_variables(ast) - set(env.globals) - set(FUNCTIONS)
    return frozenset(names), frozenset(calls)


def _literal_problems(name: str, args: list[nodes.Expr | None], line: int, offset: int | None,
                      source: str) -> list[ExprSyntaxError]:
    """A constant argument a function can judge before run time (a regular expression) is judged now."""
    fn = FUNCTIONS.get(name)
    found: list[ExprSyntaxError] = []
    for index, check in (fn.literal_checks.items() if fn is not None else ()):
        arg = args[index] if index < len(args) else None
        if isinstance(arg, nodes.Const):
            problem = check(arg.value)
            if problem is not None:
                found.append(ExprSyntaxError(problem, offset, line=line, source=source))
    return found


class _TokenFinder:
    """Where a call or filter of a name sits in the source (Jinja's nodes know their line only): each
    occurrence on a line is found after the previous one, so two calls of one name get their own places."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0, *(index + 1 for index, char in enumerate(source) if char == "\n")]
        self._after: dict[tuple[str, str, int], int] = {}

    def _find(self, what: str, pattern: str, name: str, line: int) -> int | None:
        if not 1 <= line <= len(self.starts):
            return None
        key = (what, name, line)
        found = re.compile(pattern).search(self.source, self._after.get(key, self.starts[line - 1]))
        if found is None:
            return None
        self._after[key] = found.end()
        return found.start("name")

    def call(self, name: str, line: int) -> int | None:
        return self._find("call", rf"(?<![\w.])(?P<name>{re.escape(name)})\s*\(", name, line)

    def filter(self, name: str, line: int) -> int | None:
        return self._find("filter", rf"\|\s*(?P<name>{re.escape(name)})(?!\w)", name, line)


def _syntax_offset(env: ImmutableSandboxedEnvironment, source: str) -> int | None:
    """The character offset of the token where Jinja's lexer or parser gives up (None: it does not).

    Jinja's errors carry a line only, so the template is lexed again here with every token's offset
    (each raw token is found in the source after the previous one) and parsed from that stream: the
    parser's current token at the failure is the place; a lexer failure is where lexing stopped."""
    cursor = 0
    start = 0
    lexing_failed = False
    offsets: dict[int, int] = {}

    def raw() -> Iterator[tuple[int, str, str]]:
        nonlocal cursor, start, lexing_failed
        tokens = env.lexer.tokeniter(source, None)
        while True:
            try:
                lineno, kind, value = next(tokens)
            except StopIteration:
                return
            except TemplateSyntaxError:
                lexing_failed = True
                raise
            found = source.find(value, cursor) if value else -1
            start = found if found >= 0 else cursor
            cursor = start + len(value) if found >= 0 else cursor
            yield lineno, kind, value

    def wrapped() -> Iterator[Token]:
        for token in env.lexer.wrap(raw()):
            offsets[id(token)] = start
            yield token

    parser = Parser(env, "")
    try:
        parser.stream = TokenStream(wrapped(), None, None)
        parser.parse()
    except TemplateSyntaxError:
        current = parser.stream.current
        if lexing_failed:
            return cursor
        if current.type == "eof":
            return len(source.rstrip()) or None
        return offsets.get(id(current), cursor)
    except Exception:  # the position is a courtesy: never let finding it fail the report
        return None
    return None
