"""Label and field selectors: parsed once, matched against many objects.

The grammar and the label syntax rules are the API server's, so a selector the
in-memory cluster accepts is one a real cluster accepts, and a bad one fails
with a BadRequest that says what is wrong instead of silently matching nothing.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine.cluster.api import BadRequest, LabelSelector, Obj

Operator = Literal["=", "!=", "in", "notin", "exists", "!", "gt", "lt"]

_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

_KEY_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric"
    " character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is"
    " '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_NAME_MSG = "name part " + _KEY_RULE
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must"
    " start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used"
    " for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and"
    " end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is"
    " '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must"
    " start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is"
    " '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def is_subdomain(text: str) -> bool:
    """Whether text is a DNS-1123 subdomain (object names, label key prefixes)."""
    return len(text) <= 253 and _SUBDOMAIN_RE.fullmatch(text) is not None


def namespace_name_errors(name: str) -> list[str]:
    """What is wrong with a Namespace's name (an RFC 1123 label), as the API server words it; [] when valid."""
    if "." in name:
        return ["must not contain dots"]
    errors = ["must be no more than 63 characters"] if len(name) > 63 else []
    if not _LABEL_RE.fullmatch(name):
        errors.append(LABEL_MSG)
    return errors


def label_key_errors(key: str, *, unit: str = "bytes") -> list[str]:
    """What is wrong with a label key (a qualified name), as the API server words it (apimachinery's
    ``content.IsLabelKey``); [] when valid. unit: how a length limit is worded."""
    parts = key.split("/")
    errors: list[str] = []
    if len(parts) > 2:
        return ["a valid label key " + _KEY_RULE + " with an optional DNS subdomain prefix and '/' (e.g. "
                "'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + problem for problem in subdomain_errors(prefix, unit=unit)]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append(f"name part must be no more than 63 {unit}")
    if not _NAME_RE.fullmatch(name):
        errors.append(_NAME_MSG)
    return errors


def subdomain_errors(text: str, *, unit: str = "bytes") -> list[str]:
    """What is wrong with a DNS-1123 subdomain, as ``content.IsDNS1123Subdomain`` words it; [] when valid."""
    errors = []
    if len(text.encode()) > 253:
        errors.append(f"must be no more than 253 {unit}")
    if not _SUBDOMAIN_RE.fullmatch(text):
        errors.append(SUBDOMAIN_MSG)
    return errors


def label_value_errors(value: str, *, unit: str = "bytes") -> list[str]:
    """What is wrong with a label value, as the API server words it; [] when valid. unit: as for keys."""
    errors: list[str] = []
    if len(value.encode()) > 63:
        errors.append(f"must be no more than 63 {unit}")
    if not _VALUE_RE.fullmatch(value):
        errors.append(_VALUE_MSG)
    return errors


# ---------------------------------------------------------------------------
# Label selectors.


@dataclass(frozen=True)
class Requirement:
    """One clause of a label selector: a key, an operator and (for all but exists/!) values."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if self.operator in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.operator in ("gt", "lt"):
            return present and _compare(labels[self.key], self.values[0], self.operator)
        # "!=" and "notin" match objects that lack the key, as the API server's do.
        return not present or labels[self.key] not in self.values

    def __str__(self) -> str:
        if self.operator == "exists":
            return self.key
        if self.operator == "!":
            return f"!{self.key}"
        if self.operator in ("=", "!="):
            return f"{self.key}{self.operator}{self.values[0]}"
        if self.operator in ("gt", "lt"):
            return f"{self.key}{'>' if self.operator == 'gt' else '<'}{self.values[0]}"
        return f"{self.key} {self.operator} ({','.join(self.values)})"


def _compare(label: str, bound: str, operator: str) -> bool:
    """``gt``/``lt``: the label read as an integer against the bound; a label that is no integer never matches."""
    if not re.fullmatch(r"[-+]?[0-9]+", label):
        return False
    return int(label) > int(bound) if operator == "gt" else int(label) < int(bound)


@dataclass(frozen=True)
class Selector:
    """A parsed label selector: every requirement must hold. Empty matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def matches_object(self, obj: Obj) -> bool:
        return self.matches((obj.get("metadata") or {}).get("labels"))

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = Selector()

# apimachinery's labels lexer and parser (pkg/labels/selector.go), ported token for token so that a selector fails
# with the API server's own message.

_KEYWORDS = {")": ")", ",": ",", "!": "!", "==": "==", "=": "=", ">": "gt", "in": "in", "<": "lt", "!=": "!=",
             "notin": "notin", "(": "("}
"""Literal -> token; anything else is an identifier (``id``)."""
_SYMBOLS = "=!(),><"
_BLANKS = " \t\r\n"
_BINARY = "in, notin, =, ==, !=, gt, lt"
_END, _ID, _ERROR = "end", "id", "error"


def _lex(text: str) -> list[tuple[str, str]]:
    """Every token of a selector, ``end`` last."""
    out: list[tuple[str, str]] = []
    at = 0
    while True:
        while at < len(text) and text[at] in _BLANKS:
            at += 1
        if at >= len(text):
            out.append((_END, ""))
            return out
        if text[at] in _SYMBOLS:
            buffer, last, last_end = "", None, at
            while at < len(text) and text[at] in _SYMBOLS:
                buffer += text[at]
                if buffer in _KEYWORDS:
                    last, last_end = (_KEYWORDS[buffer], buffer), at + 1
                elif last is not None:
                    break
                at += 1
            if last is None:
                out.append((_ERROR, f"error expected: keyword found '{buffer}'"))
            else:
                out.append(last)
                at = last_end
            continue
        start = at
        while at < len(text) and text[at] not in _SYMBOLS and text[at] not in _BLANKS:
            at += 1
        word = text[start:at]
        out.append((_KEYWORDS.get(word, _ID), word) if word in ("in", "notin") else (_ID, word))


class _Parser:
    """apimachinery's recursive descent over the tokens; in a value position ``in`` and ``notin`` are
    identifiers."""

    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.at = 0

    def peek(self, values: bool = True) -> tuple[str, str]:
        return self._as(self.items[self.at], values)

    def take(self, values: bool = True) -> tuple[str, str]:
        self.at += 1
        return self._as(self.items[self.at - 1], values)

    @staticmethod
    def _as(item: tuple[str, str], values: bool) -> tuple[str, str]:
        return (_ID, item[1]) if values and item[0] in ("in", "notin") else item

    def parse(self) -> Selector:
        requirements: list[Requirement] = []
        while True:
            token, literal = self.peek()
            if token in (_ID, "!"):
                try:
                    requirements.append(self.requirement())
                except _Refused as refused:
                    raise BadRequest(f"unable to parse requirement: {refused}") from None
                token, literal = self.take()
                if token == _END:
                    break
                if token == ",":
                    after, text = self.peek()
                    if after not in (_ID, "!"):
                        raise BadRequest(f"found '{text}', expected: identifier after ','")
                    continue
                raise BadRequest(f"found '{literal}', expected: ',' or 'end of string'")
            if token == _END:
                break
            raise BadRequest(f"found '{literal}', expected: !, identifier, or 'end of string'")
        return Selector(tuple(sorted(requirements, key=lambda r: r.key)))

    def requirement(self) -> Requirement:
        operator: str | None = None
        token, literal = self.take()
        if token == "!":
            operator = "!"
            token, literal = self.take()
        if token != _ID:
            raise _Refused(f"found '{literal}', expected: identifier")
        errors = label_key_errors(literal)
        if errors:
            raise _Refused(f'<nil>: Invalid value: "{literal}": {"; ".join(errors)}')
        key = literal
        if self.peek()[0] in (_END, ","):
            return _requirement(key, "!" if operator == "!" else "exists", [])
        if operator == "!":
            return _requirement(key, "!", [])
        token, literal = self.take(values=False)
        if token not in ("in", "notin", "=", "==", "!=", "gt", "lt"):
            raise _Refused(f"found '{literal}', expected: {_BINARY}")
        found = self.value_set() if token in ("in", "notin") else self.exact_value()
        return _requirement(key, {"==": "="}.get(token, token), sorted(set(found)))

    def value_set(self) -> list[str]:
        token, literal = self.take()
        if token != "(":
            raise _Refused(f"found '{literal}' expected: '('")
        token, literal = self.peek()
        if token in (_ID, ","):
            found = self.identifiers()
            if self.take()[0] != ")":
                raise _Refused(f"found '{literal}', expected: ')'")
            return found
        if token == ")":
            self.take()
            return [""]
        raise _Refused(f"found '{literal}', expected: ',', ')' or identifier")

    def identifiers(self) -> list[str]:
        found: list[str] = []
        while True:
            token, literal = self.take()
            if token == _ID:
                found.append(literal)
                after, text = self.peek()
                if after == ",":
                    continue
                if after == ")":
                    return found
                raise _Refused(f"found '{text}', expected: ',' or ')'")
            if token == ",":
                if not found:
                    found.append("")
                after = self.peek()[0]
                if after == ")":
                    found.append("")
                    return found
                if after == ",":
                    found.append("")
                continue
            raise _Refused(f"found '{literal}', expected: ',', or identifier")

    def exact_value(self) -> list[str]:
        if self.peek()[0] in (_END, ","):
            return [""]
        token, literal = self.take()
        if token == _ID:
            return [literal]
        raise _Refused(f"found '{literal}', expected: identifier")


class _Refused(Exception):
    """A requirement apimachinery refuses; the message is its own."""


def _requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """``labels.NewRequirement``: the values checked as the API server checks them (every error, aggregated)."""
    errors: list[str] = []
    if operator in ("gt", "lt"):
        for at, value in enumerate(values):
            if not re.fullmatch(r"[-+]?[0-9]+", value):
                errors.append(f'values[{at}]: Invalid value: "{value}": for \'Gt\', \'Lt\' operators, the value '
                              "must be an integer")
    for at, value in enumerate(values):
        problems = label_value_errors(value)
        if problems:
            errors.append(f'values[{at}][{key}]: Invalid value: "{value}": {"; ".join(problems)}')
    unique = list(dict.fromkeys(errors))
    if unique:
        raise _Refused(unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")
    return Requirement(key, operator, tuple(values))  # type: ignore[arg-type]


def parse_labels(selector: LabelSelector) -> Selector:
    """Parse a label selector string (``a=b,c in (d),!e``) or an equality map; BadRequest if malformed.

    A pass lists with the same few selectors again and again: each text (or map, as its keys and value texts) is
    parsed once (a Selector is immutable); a malformed one raises every time."""
    if selector is None:
        return EVERYTHING
    if isinstance(selector, str):
        return _parsed_text(selector)
    pairs = tuple((key, str(value)) for key, value in selector.items())
    if all(type(key) is str for key, _ in pairs):
        return _parsed_pairs(pairs)
    return _parse_pairs(pairs)


@functools.lru_cache(maxsize=1024)
def _parsed_text(text: str) -> Selector:
    return _Parser(text).parse()


def _parse_pairs(pairs: tuple[tuple[str, str], ...]) -> Selector:
    """An equality map's selector: each key and value checked as the text ``key=value`` would be, without
    tokenizing that text (each order lists with selectors of its own, more than the cache holds)."""
    requirements = []
    for key, value in pairs:
        errors = label_key_errors(key)
        if errors:
            raise BadRequest(f'unable to parse requirement: <nil>: Invalid value: "{key}": {"; ".join(errors)}')
        errors = label_value_errors(value)
        if errors:
            raise BadRequest(f'unable to parse requirement: values[0][{key}]: Invalid value: "{value}": '
                             + "; ".join(errors))
        requirements.append(Requirement(key, "=", (value,)))
    requirements.sort(key=_BY_KEY)
    return Selector(tuple(requirements))


_BY_KEY = operator.attrgetter("key")


_parsed_pairs = functools.lru_cache(maxsize=1024)(_parse_pairs)


def fitting_selector(labels: Mapping[str, str]) -> LabelSelector:
    """An equality map as a selector the API server accepts whatever its values hold: the map itself when every
    value can be a label value; else a text in which each value that cannot (an order's name of 64 characters) is
    only required to be there (``key``), so the caller must check the exact values on what the list answers
    (``carries_labels``). An API server stores no such value, so that list finds nothing of the map's there; an
    emulator's seeded objects may hold one."""
    if all(not label_value_errors(str(value)) for value in labels.values()):
        return labels
    return ",".join(key if label_value_errors(str(value)) else f"{key}={value}" for key, value in labels.items())


def carries_labels(obj: Obj, labels: Mapping[str, str]) -> bool:
    """Whether ``obj`` carries every label of the map with exactly its value."""
    meta = obj.get("metadata")
    found = meta.get("labels") if isinstance(meta, dict) else None
    if not isinstance(found, dict):
        return not labels
    return all(found.get(key) == value for key, value in labels.items())


# ---------------------------------------------------------------------------
# Field selectors.

SUPPORTED_FIELDS = ("metadata.name", "metadata.namespace")


@dataclass(frozen=True)
class FieldRequirement:
    """One clause of a field selector: ``path=value`` or ``path!=value``."""

    path: str
    operator: Literal["=", "!="]
    value: str

    def matches(self, obj: Obj) -> bool:
        node: Any = obj
        for part in self.path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        actual = "" if node is None else str(node)
        return (actual == self.value) == (self.operator == "=")


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector: every requirement must hold. Empty matches everything."""

    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Obj) -> bool:
        return all(r.matches(obj) for r in self.requirements)


def parse_fields(selector: str | None, supported: tuple[str, ...] = SUPPORTED_FIELDS, *,
                 labelled: bool = False) -> FieldSelector:
    """Parse ``metadata.name=x,metadata.namespace!=y`` as apimachinery does (terms sorted, split at the first
    operator, values unescaped); BadRequest on syntax or a field the kind does not select by. ``labelled``: the
    kind has a field label conversion of its own (Secret, Namespace, Service, Event), which words the refusal
    ``field label not supported``; other kinds answer with the default conversion's wording."""
    if not selector:
        return FieldSelector()
    requirements: list[FieldRequirement] = []
    for term in sorted(_split_terms(selector)):
        if not term:
            continue
        found = _split_term(term)
        if found is None:
            raise BadRequest(f"invalid selector: '{selector}'; can't understand '{term}'")
        path, operator, value = found
        requirements.append(FieldRequirement(path, "!=" if operator == "!=" else "=", _unescape(value)))
    for requirement in requirements:
        if requirement.path not in supported:
            if labelled:
                raise BadRequest(f"field label not supported: {requirement.path}")
            raise BadRequest(f'"{requirement.path}" is not a known field selector: only "metadata.name", '
                             '"metadata.namespace"')
    return FieldSelector(tuple(requirements))


def _split_terms(selector: str) -> list[str]:
    terms, start, escaped = [], 0, False
    for at, char in enumerate(selector):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(selector[start:at])
            start = at + 1
    terms.append(selector[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for at in range(len(term)):
        for symbol in ("!=", "==", "="):
            if term.startswith(symbol, at):
                return term[:at], symbol, term[at + len(symbol):]
    return None


def _unescape(value: str) -> str:
    out, escaped = [], False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise BadRequest(f"invalid field selector: invalid escape sequence: \\{char}")
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise BadRequest(f"invalid field selector: unescaped character in value: {ord(char)}")
        else:
            out.append(char)
    if escaped:
        raise BadRequest("invalid field selector: invalid escape sequence: \\")
    return "".join(out)
