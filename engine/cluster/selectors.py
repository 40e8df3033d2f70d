"""Label and field selectors: parsed once, matched against many objects.

The grammar and the label syntax rules are the API server's, so a selector the
in-memory cluster accepts is one a real cluster accepts, and a bad one fails
with a BadRequest that says what is wrong instead of silently matching nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine.cluster.api import BadRequest, LabelSelector, Obj

Operator = Literal["=", "!=", "in", "notin", "exists", "!"]

_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an"
    " alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is"
    " '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
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


def label_key_errors(key: str, *, unit: str = "characters") -> list[str]:
    """What is wrong with a label key (a qualified name), as the API server words it; [] when valid. unit: how
    a length limit is worded (an object's labels: "bytes"; a selector's: "characters")."""
    prefix, slash, name = key.rpartition("/")
    errors: list[str] = []
    if slash and not prefix:
        errors.append("prefix part must be non-empty")
    elif prefix and len(prefix) > 253:
        errors.append(f"prefix part must be no more than 253 {unit}")
    elif prefix and not is_subdomain(prefix):
        errors.append("prefix part " + SUBDOMAIN_MSG)
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append(f"name part must be no more than 63 {unit}")
    elif not _NAME_RE.fullmatch(name):
        errors.append(_NAME_MSG)
    return errors


def label_value_errors(value: str, *, unit: str = "characters") -> list[str]:
    """What is wrong with a label value, as the API server words it; [] when valid. unit: as for keys."""
    errors: list[str] = []
    if len(value) > 63:
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
        # "!=" and "notin" match objects that lack the key, as the API server's do.
        return not present or labels[self.key] not in self.values

    def __str__(self) -> str:
        if self.operator == "exists":
            return self.key
        if self.operator == "!":
            return f"!{self.key}"
        if self.operator in ("=", "!="):
            return f"{self.key}{self.operator}{self.values[0]}"
        return f"{self.key} {self.operator} ({','.join(self.values)})"


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

_SPECIAL = "=!(),"


def _tokens(text: str) -> Iterator[str]:
    """Split a selector into identifiers and the symbols = == != ! ( ) ,"""
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif text.startswith(("==", "!="), i):
            yield text[i : i + 2]
            i += 2
        elif char in _SPECIAL:
            yield char
            i += 1
        else:
            start = i
            while i < len(text) and not text[i].isspace() and text[i] not in _SPECIAL:
                i += 1
            yield text[start:i]


class _Parser:
    """Recursive descent over the token stream; every error names the selector and what was expected."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = list(_tokens(text))
        self.pos = 0

    def fail(self, message: str) -> BadRequest:
        return _failure(self.text, message)

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        token = self.peek()
        self.pos += 1
        return token

    def identifier(self, what: str) -> str:
        token = self.take()
        if token is None or token in _SPECIAL or token in ("==", "!="):
            raise self.fail(f"found {_shown(token)}, expected: {what}")
        return token

    def parse(self) -> Selector:
        requirements: list[Requirement] = []
        if self.peek() is None:
            return EVERYTHING
        while True:
            requirements.append(self.requirement())
            token = self.take()
            if token is None:
                return Selector(tuple(requirements))
            if token != ",":
                raise self.fail(f"found {_shown(token)}, expected: ',' or end of string")

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.take()
            return Requirement(self.key(self.identifier("identifier after '!'")), "!")
        key = self.key(self.identifier("identifier"))
        token = self.peek()
        if token is None or token == ",":
            return Requirement(key, "exists")
        self.take()
        if token in ("=", "=="):
            return Requirement(key, "=", (self.value(),))
        if token == "!=":
            return Requirement(key, "!=", (self.value(),))
        if token in ("in", "notin"):
            return Requirement(key, "in" if token == "in" else "notin", self.value_set(token))
        raise self.fail(f"found {_shown(token)}, expected: '=', '!=', '==', 'in', notin'")

    def value(self) -> str:
        token = self.peek()
        if token is None or token == ",":
            return ""  # `a=` selects the empty value, as on a real cluster.
        return self.check_value(self.identifier("identifier"))

    def value_set(self, operator: str) -> tuple[str, ...]:
        if self.take() != "(":
            raise self.fail(f"expected '(' after '{operator}'")
        values: list[str] = []
        while True:
            if self.peek() in (",", ")"):  # `()` is the set of the empty value, as apimachinery's parser reads it
                values.append("")
            else:
                values.append(self.check_value(self.identifier("identifier")))
            token = self.take()
            if token == ")":
                return tuple(values)
            if token != ",":
                raise self.fail(f"found {_shown(token)}, expected: ',' or ')'")

    def key(self, key: str) -> str:
        return _checked_key(self.text, key)

    def check_value(self, value: str) -> str:
        return _checked_value(self.text, value)


def _failure(text: str, message: str) -> BadRequest:
    return BadRequest(f"unable to parse requirement: invalid label selector {text!r}: {message}")


def _checked_key(text: str, key: str) -> str:
    errors = label_key_errors(key)
    if errors:
        raise _failure(text, f"key {key!r}: {'; '.join(errors)}")
    return key


def _checked_value(text: str, value: str) -> str:
    errors = label_value_errors(value)
    if errors:
        raise _failure(text, f"value {value!r}: {'; '.join(errors)}")
    return value


def _shown(token: str | None) -> str:
    return "end of string" if token is None else repr(token)


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
    tokenizing that text (issue 11: each order lists with selectors of its own, more than the cache holds)."""
    requirements = []
    for key, value in pairs:
        text = f"{key}={value}"
        requirements.append(Requirement(_checked_key(text, key), "=", (_checked_value(text, value),)))
    return Selector(tuple(requirements))


_parsed_pairs = functools.lru_cache(maxsize=1024)(_parse_pairs)


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


def parse_fields(selector: str | None, supported: tuple[str, ...] = SUPPORTED_FIELDS) -> FieldSelector:
    """Parse ``metadata.name=x,metadata.namespace!=y`` as apimachinery's ``fields.ParseSelector`` does (terms split on
    unescaped commas, sorted; ``\\``, ``\\,`` and ``\\=`` escapes in values); BadRequest in its words on a syntax
    error, then on an unsupported field."""
    if not selector or not selector.strip():
        return FieldSelector()
    parsed: list[tuple[str, str, str]] = []
    for term in sorted(_split_terms(selector)):
        if not term:  # `metadata.name=a,`: apimachinery skips an empty term
            continue
        split = _split_term(term)
        if split is None:
            raise BadRequest(f"invalid selector: '{selector}'; can't understand '{term}'")
        parsed.append((split[0], split[1], _unescape(split[2])))
    requirements: list[FieldRequirement] = []
    for path, operator, value in parsed:
        if path not in supported:
            raise BadRequest(f"field label not supported: {path}")
        requirements.append(FieldRequirement(path, "!=" if operator == "!=" else "=", value))
    return FieldSelector(tuple(requirements))


def _split_terms(selector: str) -> list[str]:
    """The terms of a field selector: split on commas not escaped by a backslash."""
    terms, start, escaped = [], 0, False
    for i, char in enumerate(selector):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """(field, operator, raw value) at the first ``!=``, ``==`` or ``=``; None without one."""
    for i in range(len(term)):
        for operator in ("!=", "==", "="):
            if term.startswith(operator, i):
                return term[:i], operator, term[i + len(operator):]
    return None


def _unescape(value: str) -> str:
    """A term's value with its escapes undone; BadRequest on a bad escape or a bare ``,`` or ``=``."""
    out: list[str] = []
    escaped = False
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
