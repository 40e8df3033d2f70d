"""What the API server's CEL compiler refuses in a CRD's ``x-kubernetes-validations``, as far as we can tell.

The API server type-checks every rule against the type of its schema node: a field the schema does not
declare (``undefined field 'colour'``), a name nothing declares (``undeclared reference to 'size'``), an
operator on operands it has no overload for (``'_==_' applied to '(int, string)'``), a rule that is not a
bool, a messageExpression that is not a string. This is a partial checker over celpy's parse tree: types it
cannot work out are ``dyn`` and checked no further, functions it does not know return ``dyn``, so it refuses
only what cel-go certainly refuses (a false refusal would keep a good CRD from installing). Syntax celpy
cannot parse but cel-go can (optional ``.?``, ``[?``, ``{?``) is accepted unchecked.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

import celpy
from celpy.celparser import CELParseError

from offline.cluster.admission.cel import uses_optional_syntax
from offline.cluster.admission.celnames import escape
from offline.cluster.crd_regex import regex_error

Schema = dict[str, Any]
Node = Any
"""A node of celpy's parse tree (lark's Tree: ``data`` and ``children``) or one of its tokens."""

_ENVIRONMENT = celpy.Environment()
_PARSING = threading.Lock()


@dataclass(frozen=True)
class CelType:
    """A CEL type as far as the checker knows it; ``dyn`` is anything."""

    kind: str
    elem: CelType | None = None
    key: CelType | None = None
    fields: tuple[tuple[str, CelType], ...] | None = None

    def field(self, name: str) -> CelType | None:
        return dict(self.fields or ()).get(name)

    @property
    def name(self) -> str:
        if self.kind == "list":
            return f"list({(self.elem or DYN).name})"
        if self.kind == "map":
            return f"map({(self.key or DYN).name}, {(self.elem or DYN).name})"
        if self.kind == "optional":
            return f"optional_type({(self.elem or DYN).name})"
        return {"null_type": "null"}.get(self.kind, self.kind)


DYN = CelType("dyn")
INT, UINT, DOUBLE = CelType("int"), CelType("uint"), CelType("double")
STRING, BOOL, BYTES, NULL = CelType("string"), CelType("bool"), CelType("bytes"), CelType("null_type")
DURATION, TIMESTAMP, TYPE = CelType("duration"), CelType("timestamp"), CelType("type")
NAMESPACE = CelType("namespace")
"""An undeclared name used as the receiver of a call (``math.greatest``, ``optional.of``): a library's."""

_DISPLAY = {"optional": "optional_type"}
_SCALARS = frozenset({"int", "uint", "double", "string", "bool", "bytes", "duration", "timestamp"})
_NUMBERS = frozenset({"int", "uint", "double"})
_TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"})


def declared_type(schema: Schema, *, resource_root: bool = False) -> CelType | None:
    """The CEL type of ``self`` at a schema node (``SchemaDeclType``); None where the API server cannot make one
    (a node without a type that is not int-or-string, an array without items)."""
    return _decl(schema, resource_root)


def _decl(s: Schema, resource_root: bool) -> CelType | None:
    if s.get("x-kubernetes-int-or-string"):
        return DYN
    type_ = s.get("type")
    properties = dict(s.get("properties") or {}) if isinstance(s.get("properties"), dict) else {}
    if resource_root:
        properties = {**properties, "kind": {"type": "string"}, "apiVersion": {"type": "string"},
                      "metadata": {"type": "object", "properties": {"name": {"type": "string"},
                                                                    "generateName": {"type": "string"}}}}
    if type_ == "array":
        items = s.get("items")
        if not isinstance(items, dict):
            return None
        elem = _decl(items, bool(items.get("x-kubernetes-embedded-resource")))
        return None if elem is None else CelType("list", elem=elem)
    if type_ == "object":
        extra = s.get("additionalProperties")
        if isinstance(extra, dict):
            value = _decl(extra, bool(extra.get("x-kubernetes-embedded-resource")))
            return None if value is None else CelType("map", key=STRING, elem=value)
        fields = []
        for name, child in properties.items():
            if not isinstance(child, dict):
                continue
            found = _decl(child, bool(child.get("x-kubernetes-embedded-resource")))
            escaped = escape(name)
            if found is not None and escaped is not None:
                fields.append((escaped, found))
        return CelType("object", fields=tuple(fields))
    if type_ == "string":
        return {"byte": BYTES, "duration": DURATION, "date": TIMESTAMP, "date-time": TIMESTAMP}.get(
            str(s.get("format") or ""), STRING)
    return {"boolean": BOOL, "number": DOUBLE, "integer": INT}.get(str(type_ or ""))


@dataclass(frozen=True)
class RuleCheck:
    """What compiling one rule found: its error, its messageExpression's error, whether it reads oldSelf."""

    rule_error: str = ""
    message_expression_error: str = ""
    uses_old_self: bool = False


def check_rule(rule: str, message_expression: str, declared: CelType, *, optional_old_self: bool = False) -> RuleCheck:
    """Compile a rule (and its messageExpression) against the type of ``self``, as the API server does."""
    variables = {"self": declared, "oldSelf": CelType("optional", elem=declared) if optional_old_self else declared}
    rule_error, uses_old_self = "", bool(re.search(r"\boldSelf\b", rule))
    tree = _parse(rule)
    if isinstance(tree, str):
        rule_error = f"compilation failed: {tree}" if tree else ""
    elif tree is not None:
        uses_old_self = any(str(node.children[0]) == "oldSelf" for node in tree.find_data("ident"))
        checker = _Checker(rule, variables)
        result = checker.check(tree)
        if checker.errors:
            rule_error = "compilation failed: " + "\n".join(checker.errors)
        elif result.kind not in ("dyn", "bool"):
            rule_error = "cel expression must evaluate to a bool"
    if rule_error:
        uses_old_self = False  # cel-go tells whether a rule reads oldSelf from the rule it compiled
    message_error = ""
    if message_expression.strip() and not rule_error:  # cel-go compiles a rule's messageExpression after the rule
        tree = _parse(message_expression)
        if isinstance(tree, str):
            message_error = f"messageExpression compilation failed: {tree}" if tree else ""
        elif tree is not None:
            checker = _Checker(message_expression, variables)
            result = checker.check(tree)
            if checker.errors:
                message_error = "messageExpression compilation failed: " + "\n".join(checker.errors)
            elif result.kind not in ("dyn", "string"):
                message_error = "messageExpression must evaluate to a string"
    return RuleCheck(rule_error, message_error, uses_old_self)


def _parse(source: str) -> Node | str | None:
    """The parse tree; the error's text when it does not parse; None when only cel-go's newer syntax fails."""
    try:
        with _PARSING:
            tree: Node = _ENVIRONMENT.compile(source)
        return tree
    except CELParseError as error:
        if uses_optional_syntax(source):
            return None
        line, column = getattr(error, "line", 1) or 1, getattr(error, "column", 1) or 1
        return _located(source, line, column, "Syntax error: unexpected input")


def _located(source: str, line: int, column: int, message: str) -> str:
    """cel-go's ``ERROR: <input>:L:C: message`` with the source line and a caret under the column."""
    lines = source.split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"ERROR: <input>:{line}:{column}: {message}\n | {text}\n | {'.' * (column - 1)}^"


@dataclass
class _Checker:
    source: str
    variables: dict[str, CelType]
    errors: list[str] = field(default_factory=list)
    scopes: list[dict[str, CelType]] = field(default_factory=list)

    def check(self, tree: Node) -> CelType:
        return self._visit(tree)

    def _error(self, node: Node, message: str, *, after: Node | None = None,
               operator: str = "") -> None:
        line, column = _position(node)
        if after is not None:
            line, column = self._operator_at(after, operator)
        self.errors.append(_located(self.source, line, column, message))

    def _operator_at(self, left: Node, operator: str) -> tuple[int, int]:
        """The line and column of the operator written after ``left``."""
        offset = _offset(self.source, left.meta.end_line, left.meta.end_column)
        found = self.source.find(operator, offset) if operator else -1
        at = found if found >= 0 else offset
        before = self.source[:at]
        return before.count("\n") + 1, at - (before.rfind("\n") + 1) + 1

    def _lookup(self, name: str) -> CelType | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return self.variables.get(name)

    # -- the grammar ------------------------------------------------------------------------------------------

    def _visit(self, node: Node) -> CelType:
        handler = getattr(self, f"_{node.data}", None)
        if handler is not None:
            found: CelType = handler(node)
            return found
        types = [self._visit(child) for child in node.children if _is_tree(child)]
        return types[-1] if len(types) == 1 else DYN

    def _expr(self, node: Node) -> CelType:
        parts = [child for child in node.children if _is_tree(child)]
        if len(parts) == 1:
            return self._visit(parts[0])
        condition, yes, no = parts[0], parts[1], parts[2]
        types = [self._visit(part) for part in (condition, yes, no)]
        if types[0].kind == "bool" and _concrete(types[1]) and _concrete(types[2]) and types[1] != types[2]:
            self._error(condition, _no_overload("_?_:_", *types), after=condition, operator="?")
            return DYN
        return types[1] if types[1] == types[2] else DYN

    def _conditionalor(self, node: Node) -> CelType:
        return self._logic(node, "||")

    def _conditionaland(self, node: Node) -> CelType:
        return self._logic(node, "&&")

    def _logic(self, node: Node, operator: str) -> CelType:
        parts = [child for child in node.children if _is_tree(child)]
        if len(parts) == 1:
            return self._visit(parts[0])
        for part in parts:
            found = self._visit(part)
            if _concrete(found) and found.kind != "bool":
                line, column = self._expression_at(part)
                self.errors.append(_located(self.source, line, column,
                                            f"expected type 'bool' but found '{found.name}'"))
        return BOOL

    def _expression_at(self, node: Node) -> tuple[int, int]:
        """Where cel-go places an expression: a selection at its dot, a call at its parenthesis, else its start."""
        inner = _unwrap(node)
        if _is_tree(inner) and inner.data in ("member_dot", "member_dot_arg"):
            receiver = inner.children[0]
            offset = _offset(self.source, receiver.meta.end_line, receiver.meta.end_column)
            if inner.data == "member_dot_arg":
                offset = self.source.find("(", offset)
            before = self.source[:offset]
            return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1
        return _position(inner)

    def _relation(self, node: Node) -> CelType:
        parts = [child for child in node.children if _is_tree(child)]
        if len(parts) == 1:
            return self._visit(parts[0])
        operation, right_node = parts
        left_node = operation.children[0]
        left, right = self._visit(left_node), self._visit(right_node)
        symbol = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">=",
                  "relation_eq": "==", "relation_ne": "!=", "relation_in": "in"}[operation.data]
        if symbol == "in":
            return BOOL
        if _certain(left) and _certain(right) and not _comparable(symbol, left, right):
            self._error(left_node, _no_overload(f"_{symbol}_", left, right), after=left_node, operator=symbol)
        return BOOL

    def _addition(self, node: Node) -> CelType:
        return self._arithmetic(node, {"addition_add": "+", "addition_sub": "-"})

    def _multiplication(self, node: Node) -> CelType:
        return self._arithmetic(node, {"multiplication_mul": "*", "multiplication_div": "/",
                                       "multiplication_mod": "%"})

    def _arithmetic(self, node: Node, symbols: dict[str, str]) -> CelType:
        parts = [child for child in node.children if _is_tree(child)]
        if len(parts) == 1:
            return self._visit(parts[0])
        operation, right_node = parts
        left_node = operation.children[0]
        left, right = self._visit(left_node), self._visit(right_node)
        symbol = symbols[operation.data]
        if not (_concrete(left) and _concrete(right)):
            return DYN
        result = _arithmetic_result(symbol, left, right)
        if result is None:
            self._error(left_node, _no_overload(f"_{symbol}_", left, right), after=left_node, operator=symbol)
            return DYN
        return result

    def _unary(self, node: Node) -> CelType:
        parts = [child for child in node.children if _is_tree(child)]
        if len(parts) == 1:
            return self._visit(parts[0])
        operator, operand = parts
        found = self._visit(operand)
        if operator.data == "unary_not":
            if _concrete(found) and found.kind != "bool":
                self._error(operator, _no_overload("!_", found))
            return BOOL
        if _concrete(found) and found.kind not in ("int", "double", "duration"):
            self._error(operator, _no_overload("-_", found))
            return DYN
        return found

    def _member(self, node: Node) -> CelType:
        return self._visit(node.children[0])

    def _primary(self, node: Node) -> CelType:
        return self._visit(node.children[0])

    def _paren_expr(self, node: Node) -> CelType:
        return self._visit(node.children[0])

    def _ident(self, node: Node, *, receiver: bool = False) -> CelType:
        name = str(node.children[0])
        found = self._lookup(name)
        if found is not None:
            return found
        if name in _TYPE_NAMES:
            return TYPE
        if receiver:
            return NAMESPACE
        self._error(node, f"undeclared reference to '{name}' (in container '')")
        return DYN

    def _dot_ident(self, node: Node) -> CelType:
        return self._ident(node)

    def _literal(self, node: Node) -> CelType:
        token = node.children[0]
        kind = token.type if _is_token(token) else ""
        return {"INT_LIT": INT, "UINT_LIT": UINT, "FLOAT_LIT": DOUBLE, "STRING_LIT": STRING, "MLSTRING_LIT": STRING,
                "BYTES_LIT": BYTES, "BOOL_LIT": BOOL, "NULL_LIT": NULL}.get(kind, DYN)

    def _list_lit(self, node: Node) -> CelType:
        elems = [self._visit(child) for child in _args(node)]
        kinds = {elem for elem in elems}
        return CelType("list", elem=kinds.pop() if len(kinds) == 1 else DYN)

    def _map_lit(self, node: Node) -> CelType:
        for child in _args(node):
            self._visit(child)
        return CelType("map", key=DYN, elem=DYN)

    def _member_index(self, node: Node) -> CelType:
        container, index = (child for child in node.children if _is_tree(child))
        found, _ = self._visit(container), self._visit(index)
        if found.kind in ("list", "map"):
            return found.elem or DYN
        return DYN

    def _member_object(self, node: Node) -> CelType:
        for child in node.children[1:]:
            if _is_tree(child):
                for value in child.children:
                    if _is_tree(value):
                        self._visit(value)
        return DYN

    def _member_dot(self, node: Node) -> CelType:
        receiver_node, name_token = node.children[0], node.children[1]
        receiver = self._receiver(receiver_node)
        return self._select(receiver, str(name_token), receiver_node)

    def _select(self, receiver: CelType, name: str, receiver_node: Node) -> CelType:
        if receiver.kind == "object":
            found = receiver.field(name)
            if found is None:
                line, column = receiver_node.meta.end_line, receiver_node.meta.end_column
                self.errors.append(_located(self.source, line, column, f"undefined field '{name}'"))
                return DYN
            return found
        if receiver.kind == "map":
            return receiver.elem or DYN
        if receiver.kind == "namespace":
            return NAMESPACE
        return DYN

    def _receiver(self, node: Node) -> CelType:
        """A member's receiver: an undeclared bare name there may be a library's namespace."""
        inner = _unwrap(node)
        if _is_tree(inner) and inner.data == "ident":
            return self._ident(inner, receiver=True)
        if _is_tree(inner) and inner.data == "member_dot":
            receiver = self._receiver(inner.children[0])
            if receiver.kind == "namespace":
                return NAMESPACE
            return self._select(receiver, str(inner.children[1]), inner.children[0])
        return self._visit(node)

    def _member_dot_arg(self, node: Node) -> CelType:
        receiver_node, name = node.children[0], str(node.children[1])
        args = _args(node.children[2]) if len(node.children) > 2 and _is_tree(node.children[2]) else []
        receiver = self._receiver(receiver_node)
        if receiver.kind == "namespace":
            self._bound_args(args, DYN, DYN)
            return DYN
        if name in _MACROS and args and _bare_name(args[0]) is not None:
            return self._comprehension(name, receiver, args)
        arg_types = self._bound_args(args, DYN, DYN)
        if name == "matches" and len(args) == 1:
            self._check_pattern(args[0])
        if name == "size" and not args and receiver.kind in _SIZELESS:
            token = node.children[1]
            offset = _offset(self.source, *_position(token)) if _is_token(token) else -1
            opening = self.source.find("(", offset) if offset >= 0 else -1
            if opening >= 0:
                before = self.source[:opening]
                self.errors.append(_located(self.source, before.count("\n") + 1, opening - (before.rfind("\n") + 1) + 1,
                                            f"found no matching overload for 'size' applied to '{receiver.kind}.()'"))
        return _method_result(name, receiver, arg_types)

    def _check_pattern(self, arg: Node) -> None:
        """A constant pattern given to ``matches`` must compile (RE2), as cel-go checks it."""
        inner = _unwrap(arg)
        if not (_is_tree(inner) and inner.data == "literal"):
            return
        token = inner.children[0]
        if not _is_token(token) or token.type != "STRING_LIT":
            return
        pattern = _string_value(str(token))
        if pattern is not None and regex_error(pattern) is not None:
            self._error(token, "invalid matches argument")

    def _comprehension(self, name: str, receiver: CelType, args: list[Node]) -> CelType:
        two = len(args) >= 3 and _bare_name(args[1]) is not None and name in _TWO_VARIABLE
        first, second = _range_types(receiver)
        names = [_bare_name(args[0])] + ([_bare_name(args[1])] if two else [])
        scope: dict[str, CelType] = {}
        if two:
            scope[str(names[0])], scope[str(names[1])] = (INT if receiver.kind == "list" else first), second
        else:
            scope[str(names[0])] = first
        self.scopes.append(scope)
        try:
            results = [self._visit(arg) for arg in args[len(names):]]
        finally:
            self.scopes.pop()
        if name in ("all", "exists", "exists_one", "existsOne"):
            return BOOL
        if name == "filter":
            return receiver if receiver.kind == "list" else DYN
        if name == "map" and receiver.kind in ("list", "map") and results:
            return CelType("list", elem=results[-1])
        return DYN

    def _bound_args(self, args: list[Node], first: CelType, second: CelType) -> list[CelType]:
        """Arguments of a call; leading bare names nothing declares are a macro's variables (``sortBy(e, e)``)."""
        bound: dict[str, CelType] = {}
        index = 0
        while index < min(2, len(args) - 1):
            name = _bare_name(args[index])
            if name is None or self._lookup(name) is not None:
                break
            bound[name] = DYN
            index += 1
        self.scopes.append(bound)
        try:
            return [DYN] * index + [self._visit(arg) for arg in args[index:]]
        finally:
            self.scopes.pop()

    def _ident_arg(self, node: Node) -> CelType:
        name = str(node.children[0])
        args = _args(node.children[1]) if len(node.children) > 1 and _is_tree(node.children[1]) else []
        if name == "has" and len(args) == 1:
            return self._has(node, args[0])
        types = [self._visit(arg) for arg in args]
        return _function_result(name, types)

    def _dot_ident_arg(self, node: Node) -> CelType:
        return self._ident_arg(node)

    def _has(self, node: Node, arg: Node) -> CelType:
        inner = _unwrap(arg)
        if _is_tree(inner) and inner.data == "member_dot":
            receiver = self._receiver(inner.children[0])
            name = str(inner.children[1])
            if receiver.kind == "object" and receiver.field(name) is None:
                line, column = node.meta.line, node.meta.column
                opening = self.source.find("(", _offset(self.source, line, column))
                if opening >= 0:
                    before = self.source[:opening]
                    line, column = before.count("\n") + 1, opening - (before.rfind("\n") + 1) + 1
                self.errors.append(_located(self.source, line, column, f"undefined field '{name}'"))
        return BOOL


_SIZELESS = frozenset({"int", "uint", "double", "bool", "duration", "timestamp"})
"""Scalar types without ``size()`` (cel-go has it for strings, bytes, lists and maps only)."""
_MACROS = frozenset({"all", "exists", "exists_one", "existsOne", "map", "filter"})
_TWO_VARIABLE = frozenset({"all", "exists", "existsOne", "exists_one"})
_BOOL_METHODS = frozenset({"startsWith", "endsWith", "contains", "matches", "isSorted", "hasValue", "isQuantity",
                           "isURL", "isIP", "isCIDR", "isSemver", "isGreaterThan", "isLessThan", "isInteger"})
_STRING_METHODS = frozenset({"lowerAscii", "upperAscii", "trim", "replace", "substring", "charAt", "format", "join",
                             "quote", "reverse"})


def _string_value(literal: str) -> str | None:
    """The value of a simple CEL string literal (raw, or with only common escapes); None when unsure."""
    raw = literal[:1] in "rR"
    body = literal[1:] if raw else literal
    if len(body) < 2 or body[0] not in "'\"" or body[-1] != body[0]:
        return None
    text = body[1:-1]
    if raw:
        return text
    if "\\" in text:
        simple = {"\\\\": "\\", "\\'": "'", '\\"': '"', "\\n": "\n", "\\t": "\t"}
        out, i = [], 0
        while i < len(text):
            pair = text[i:i + 2]
            if pair in simple:
                out.append(simple[pair])
                i += 2
            elif text[i] == "\\":
                return None
            else:
                out.append(text[i])
                i += 1
        return "".join(out)
    return text


def _method_result(name: str, receiver: CelType, args: list[CelType]) -> CelType:
    if name == "size" and not args:
        return INT
    if receiver.kind == "optional":
        return {"hasValue": BOOL, "value": receiver.elem or DYN, "orValue": receiver.elem or DYN}.get(name, DYN)
    if name in _BOOL_METHODS and receiver.kind in ("string", "bytes", "list", "map"):
        return BOOL
    if name in _STRING_METHODS and receiver.kind == "string":
        return STRING
    if name in ("indexOf", "lastIndexOf") and receiver.kind in ("string", "list"):
        return INT
    if name == "split" and receiver.kind == "string":
        return CelType("list", elem=STRING)
    return DYN


def _function_result(name: str, args: list[CelType]) -> CelType:
    conversions = {"int": INT, "uint": UINT, "double": DOUBLE, "string": STRING, "bool": BOOL, "bytes": BYTES,
                   "duration": DURATION, "timestamp": TIMESTAMP, "type": TYPE, "size": INT}
    if name in conversions and len(args) == 1:
        return conversions[name]
    return DYN


def _range_types(receiver: CelType) -> tuple[CelType, CelType]:
    """What a comprehension's variables range over: list items, or map keys and values."""
    if receiver.kind == "list":
        return receiver.elem or DYN, receiver.elem or DYN
    if receiver.kind == "map":
        return receiver.key or DYN, receiver.elem or DYN
    return DYN, DYN


def _concrete(found: CelType) -> bool:
    """A type the checker is sure of: a scalar (null and the rest are left alone)."""
    return found.kind in _SCALARS


def _certain(found: CelType) -> bool:
    """A type whose comparisons the checker judges: a scalar, null, or an optional of one."""
    return _concrete(found) or found.kind == "null_type" or (found.kind == "optional" and _concrete(found.elem or DYN))


def _comparable(symbol: str, left: CelType, right: CelType) -> bool:
    if symbol in ("==", "!="):
        if "null_type" in (left.kind, right.kind):
            other = right if left.kind == "null_type" else left
            return other.kind not in ("int", "uint", "double", "string", "bool", "bytes")
        return left == right
    if "null_type" in (left.kind, right.kind) or "optional" in (left.kind, right.kind):
        return False
    if left.kind in _NUMBERS and right.kind in _NUMBERS:
        return True
    return left.kind == right.kind and left.kind in ("string", "bytes", "bool", "duration", "timestamp")


_ARITHMETIC: dict[str, dict[tuple[str, str], CelType]] = {
    "+": {("int", "int"): INT, ("uint", "uint"): UINT, ("double", "double"): DOUBLE, ("string", "string"): STRING,
          ("bytes", "bytes"): BYTES, ("duration", "duration"): DURATION, ("timestamp", "duration"): TIMESTAMP,
          ("duration", "timestamp"): TIMESTAMP},
    "-": {("int", "int"): INT, ("uint", "uint"): UINT, ("double", "double"): DOUBLE,
          ("duration", "duration"): DURATION, ("timestamp", "timestamp"): DURATION,
          ("timestamp", "duration"): TIMESTAMP},
    "*": {("int", "int"): INT, ("uint", "uint"): UINT, ("double", "double"): DOUBLE},
    "/": {("int", "int"): INT, ("uint", "uint"): UINT, ("double", "double"): DOUBLE},
    "%": {("int", "int"): INT, ("uint", "uint"): UINT},
}


def _arithmetic_result(symbol: str, left: CelType, right: CelType) -> CelType | None:
    return _ARITHMETIC[symbol].get((left.kind, right.kind))


def _no_overload(function: str, *operands: CelType) -> str:
    return f"found no matching overload for '{function}' applied to '({', '.join(t.name for t in operands)})'"


def _args(node: Node) -> list[Node]:
    """The expressions of an exprlist (or of a node holding one)."""
    if node.data in ("exprlist", "mapinits"):
        return [child for child in node.children if _is_tree(child)]
    for child in node.children:
        if _is_tree(child) and child.data in ("exprlist", "mapinits"):
            return [item for item in child.children if _is_tree(item)]
    return []


def _unwrap(node: Any) -> Any:
    """The node below a chain of single-child wrappers (expr, conditionalor, ..., member, primary)."""
    while _is_tree(node) and node.data in _WRAPPERS:
        trees = [child for child in node.children if _is_tree(child)]
        if len(trees) != 1 or len(node.children) != 1:
            return node
        node = trees[0]
    return node


_WRAPPERS = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary",
                       "member", "primary"})


def _bare_name(node: Node) -> str | None:
    inner = _unwrap(node)
    if _is_tree(inner) and inner.data == "ident":
        return str(inner.children[0])
    return None


def _is_tree(node: Any) -> bool:
    return hasattr(node, "data") and hasattr(node, "children")


def _is_token(node: Any) -> bool:
    return isinstance(node, str) and hasattr(node, "type")


def _position(node: Node) -> tuple[int, int]:
    if _is_token(node):
        return node.line or 1, node.column or 1
    return getattr(node.meta, "line", 1), getattr(node.meta, "column", 1)


def _offset(source: str, line: int, column: int) -> int:
    """The index in ``source`` of a 1-based line and column."""
    starts = [0] + [index + 1 for index, char in enumerate(source) if char == "\n"]
    return starts[min(line, len(starts)) - 1] + column - 1

