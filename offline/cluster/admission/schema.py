"""OpenAPI v3 structural-schema validation through ``jsonschema``, errors worded as the API server's.

The CRD schema is translated once into a Draft 4 JSON Schema (OpenAPI 3.0's boolean
``exclusiveMinimum`` is Draft 4's): ``nullable`` and ``x-kubernetes-int-or-string`` become
type lists, ``x-kubernetes-*`` and ``default`` are dropped, and keywords are ordered as
kube-openapi runs its validators. Each jsonschema error then becomes the field error
kube-openapi plus apiextensions-apiserver would report for it.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import ipaddress
import re
import uuid
from typing import Any

import jsonschema
from jsonschema import Draft4Validator, FormatChecker

from engine import durations
from offline.cluster.admission import fielderrors
from offline.cluster.admission.fielderrors import ErrorType, FieldError

Schema = dict[str, Any]

_ORDER = (
    "type", "anyOf", "oneOf", "allOf", "not", "maxLength", "minLength", "pattern", "format",
    "multipleOf", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum",
    "items", "minItems", "maxItems", "uniqueItems", "enum",
    "minProperties", "maxProperties", "properties", "additionalProperties", "required",
)  # fmt: skip
_STRING_CHECKS = ("maxLength", "minLength", "pattern")
"""kube-openapi's string validator stops at the first of these that fails."""

_TYPE_NAMES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


class SchemaValidator:
    """One CRD version's schema, translated and compiled once, reused for every object."""

    def __init__(self, schema: Schema, *, int_or_string_typed: bool = True, every_format: bool = False) -> None:
        """``int_or_string_typed`` False leaves ``x-kubernetes-int-or-string`` nodes untyped, and ``every_format``
        keeps every format for the type check, as the API server's check of a CRD's defaults does (it validates
        them against the structural schema as is, unsupported formats not stripped)."""
        translated = to_json_schema(schema, int_or_string_typed=int_or_string_typed, every_format=every_format)
        self._validator = _validator_class(_unknown_types(translated))(translated, format_checker=_FORMATS)

    def errors(self, obj: Any) -> list[FieldError]:
        """Every schema error of the object, in kube-openapi's order."""
        found: list[FieldError] = []
        string_failed: set[str] = set()
        required_done: set[str] = set()
        for error in self._validator.iter_errors(obj):
            path = _path(error.absolute_path)
            keyword, expected, instance = _parts(error)
            if keyword in _STRING_CHECKS:
                if path in string_failed:
                    continue
                string_failed.add(path)
            if keyword == "required":
                if path in required_done:
                    continue
                required_done.add(path)
                found += [fielderrors.required(_child(path, name)) for name in expected if name not in instance]
                continue
            found += _errors_of(error, path)
            if keyword in ("anyOf", "oneOf") and error.context:
                found += self._best_failures(error, expected, instance)
        return found


    def _best_failures(self, error: jsonschema.ValidationError, branches: Any, instance: Any) -> list[FieldError]:
        """kube-openapi adds the errors of the failing branch that matched best (here: the first of those with
        the fewest errors) to an anyOf's, or to a oneOf's none of which matched."""
        by_branch: dict[int, list[jsonschema.ValidationError]] = {}
        for inner in error.context or []:
            by_branch.setdefault(int(inner.relative_schema_path[0]), []).append(inner)
        if len(by_branch) < len(branches):  # a branch matched: a oneOf matched twice (nothing to add), or an anyOf
            return []
        best = min(sorted(by_branch), key=lambda index: len(by_branch[index]))
        found: list[FieldError] = []
        for inner in by_branch[best]:
            inner_keyword, inner_expected, inner_instance = _parts(inner)
            inner_path = _path(inner.absolute_path)
            if inner_keyword == "required":
                found += [fielderrors.required(_child(inner_path, name)) for name in inner_expected
                          if isinstance(inner_instance, dict) and name not in inner_instance]
            else:
                found += _errors_of(inner, inner_path)
        return found


def _errors_of(error: jsonschema.ValidationError, path: str) -> list[FieldError]:
    """One jsonschema error as kube-openapi's: a number where an integer belongs is two (the type's, and the number
    check's 'Checked value', at the object's root)."""
    keyword, expected, instance = _parts(error)
    first = _type_error(error, path) if keyword == "type" else _field_error(error, path)
    found = [first] if first is not None else []
    if keyword == "type" and _integer_only(expected) and _non_integral(instance):
        found.append(fielderrors.invalid(
            fielderrors.ROOT, "", f"Checked value must be of type integer (default format) in {path}"))
    return found


_JSON_TYPES = frozenset({"array", "boolean", "integer", "number", "object", "string", "null"})


def _unknown_types(node: Any) -> frozenset[str]:
    """Type names a schema uses that JSON Schema does not know (a CRD's ``type: strin``: refused, but its defaults
    are still checked against it)."""
    found: set[str] = set()
    if isinstance(node, dict):
        types = node.get("type")
        for name in types if isinstance(types, list) else [types]:
            if isinstance(name, str) and name not in _JSON_TYPES:
                found.add(name)
        for value in node.values():
            found |= _unknown_types(value)
    elif isinstance(node, list):
        for item in node:
            found |= _unknown_types(item)
    return frozenset(found)


@functools.lru_cache(maxsize=32)
def _validator_class(unknown: frozenset[str]) -> Any:
    """Draft 4 with kube-openapi's allOf, each unknown type a type nothing is."""
    if not unknown:
        return _KUBE_DRAFT4
    checker = Draft4Validator.TYPE_CHECKER.redefine_many({name: lambda _checker, _instance: False for name in unknown})
    return _EXTEND(_KUBE_DRAFT4, type_checker=checker)


def _all_of(validator: Any, all_of: list[Schema], instance: Any, schema: Schema) -> Any:
    """kube-openapi's allOf: every branch's errors, then its own when a branch failed (". None validated" when
    every one did)."""
    failed = 0
    for index, branch in enumerate(all_of):
        errors = list(validator.descend(instance, branch, schema_path=index))
        failed += bool(errors)
        yield from errors
    if failed:
        yield jsonschema.ValidationError(". None validated" if failed == len(all_of) else "")


_EXTEND: Any = jsonschema.validators.extend
_KUBE_DRAFT4: Any = _EXTEND(Draft4Validator, validators={"allOf": _all_of})


def _integer_only(expected: Any) -> bool:
    """The node's type is integer (nullable or not): kube-openapi's number check also runs on a number."""
    return expected == "integer" or (isinstance(expected, list) and set(expected) == {"integer", "null"})


def _non_integral(value: Any) -> bool:
    return isinstance(value, float) and not (value.is_integer() and abs(value) < 2**63)


def to_json_schema(node: Schema, *, int_or_string_typed: bool = True, every_format: bool = False) -> Schema:
    """The Draft 4 JSON Schema equivalent of one structural-schema node (recursively)."""
    def below(child: Schema) -> Schema:
        return to_json_schema(child, int_or_string_typed=int_or_string_typed, every_format=every_format)

    out: Schema = {}
    types: list[str] = []
    if node.get("x-kubernetes-int-or-string") and not int_or_string_typed:
        types = [node["type"]] if isinstance(node.get("type"), str) else []
    elif node.get("x-kubernetes-int-or-string"):
        types = ["integer", "string"]
    elif isinstance(node.get("type"), str):
        types = [node["type"]]
    if types and node.get("nullable"):
        types.append("null")
    for key in _ORDER:
        if key == "type":
            if types:
                out["type"] = types if len(types) > 1 else types[0]
        elif key == "format":
            if node.get("type") == "string" and node.get("format"):
                out["format"] = node["format"]
            kept = _kept_format(node) if not every_format else str(node.get("format") or "")
            if kept:
                out[KUBE_FORMAT] = kept
        elif key in ("allOf", "anyOf", "oneOf") and key in node:
            out[key] = [below(branch) for branch in node[key]]
        elif key in ("not", "items") and isinstance(node.get(key), dict):
            out[key] = below(node[key])
        elif key == "properties" and key in node:
            out[key] = {name: below(child) for name, child in node[key].items()}
        elif key == "additionalProperties" and isinstance(node.get(key), dict):
            out[key] = below(node[key])
        elif key in node and key not in ("not", "items", "additionalProperties"):
            out[key] = node[key]
    return out


KUBE_FORMAT = "x-kube-format"
"""Where the translated schema keeps the format kube-openapi's type check sees (the API server strips the others)."""
_STRING_FORMATS = frozenset({"bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3",
                             "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor",
                             "byte", "password", "date", "duration", "datetime", "k8s-short-name", "k8s-long-name"})
_GO_KINDS = {bool: ("boolean", ""), str: ("string", ""), int: ("integer", "int64"), float: ("number", "float64"),
             list: ("array", ""), dict: ("object", "")}


def _kept_format(node: Schema) -> str:
    """The node's format as the API server keeps it for validation: a supported string format, int32/int64 on an
    integer, float/double on a number; "" otherwise."""
    format_ = node.get("format")
    if not isinstance(format_, str) or not format_:
        return ""
    type_ = node.get("type") if isinstance(node.get("type"), str) else ""
    if type_ in ("", "string"):
        return format_ if format_.replace("-", "") in _STRING_FORMATS else ""
    if type_ == "integer":
        return format_ if format_ in ("int32", "int64") else ""
    if type_ == "number":
        return format_ if format_ in ("float", "double") else ""
    return ""


def _type_error(error: jsonschema.ValidationError, path: str) -> FieldError | None:
    """kube-openapi's type check of a node with a format: a value that is neither a string nor a list is checked
    against the format (named with its Go type's format); a string or a list passes a non-numeric one."""
    _, expected, instance = _parts(error)
    node: Any = error.schema
    kept = node.get(KUBE_FORMAT, "") if isinstance(node, dict) else ""
    if not kept or instance is None:
        return _field_error(error, path)
    types = expected if isinstance(expected, list) else [expected]
    if isinstance(instance, str | list):
        return None if not ({"integer", "number"} & set(types)) else _field_error(error, path)
    kind, go_format = _GO_KINDS.get(type(instance), ("", ""))
    if kind in types or (kind == "integer" and "number" in types) or go_format == kept:
        return _field_error(error, path)
    body = f"{path} in body"
    return FieldError(ErrorType.TYPE_INVALID, path or fielderrors.ROOT, go_format,
                      f'{body} must be of type {kept}: "{go_format}"')


def _field_error(error: jsonschema.ValidationError, path: str) -> FieldError:
    keyword, expected, instance = _parts(error)
    field = path or fielderrors.ROOT
    body = f"{path} in body"
    if keyword == "type":
        types = expected if isinstance(expected, list) else [expected]
        wanted = ",".join(t for t in types if t != "null" or len(types) == 1)
        actual = _type_name(instance)
        return FieldError(ErrorType.TYPE_INVALID, field, actual, f'{body} must be of type {wanted}: "{actual}"')
    if keyword == "format":
        detail = f"{body} must be of type {expected}: {fielderrors.go_quote(str(instance))}"
        return FieldError(ErrorType.TYPE_INVALID, field, instance, detail)
    if keyword == "enum":
        return fielderrors.not_supported(field, instance, expected)
    if keyword == "maxLength":
        return fielderrors.too_long(field, expected)
    if keyword == "maxItems":
        return fielderrors.too_many(field, len(instance), expected)
    if keyword == "maxProperties":
        return fielderrors.too_many(field, len(instance), expected)
    if keyword in _COMPOSITE:
        return fielderrors.invalid(fielderrors.ROOT, "", f"{fielderrors.go_quote(path)} {_composite(error)}")
    return fielderrors.invalid(field, _bad_value(keyword, instance), f"{body} {_detail(error)}")


_COMPOSITE = ("anyOf", "oneOf", "allOf", "not")
"""Keywords kube-openapi reports as plain errors (no field: the cause is at the object's root) naming the path."""


def _composite(error: jsonschema.ValidationError) -> str:
    keyword, expected, instance = _parts(error)
    if keyword == "anyOf":
        return "must validate at least one schema (anyOf)"
    if keyword == "not":
        return "must not validate the schema (not)"
    if keyword == "allOf":
        return f"must validate all the schemas (allOf){error.message}"
    valid = sum(1 for branch in expected if Draft4Validator(branch, format_checker=_FORMATS).is_valid(instance))
    found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
    return f"must validate one and only one schema (oneOf). {found}"


def _detail(error: jsonschema.ValidationError) -> str:
    keyword, expected, instance = _parts(error)
    if keyword == "minLength":
        return f"should be at least {expected} chars long"
    if keyword == "pattern":
        return f"should match '{expected}'"
    if keyword in ("minimum", "maximum"):
        bound = fielderrors.go_number(int(expected) if isinstance(instance, int) else float(expected))
        node: Any = error.schema
        exclusive = bool(node.get("exclusiveMinimum" if keyword == "minimum" else "exclusiveMaximum"))
        relation = {
            ("minimum", False): "greater than or equal to",
            ("minimum", True): "greater than",
            ("maximum", False): "less than or equal to",
            ("maximum", True): "less than",
        }[keyword, exclusive]
        return f"should be {relation} {bound}"
    if keyword == "multipleOf":
        return f"should be a multiple of {fielderrors.go_number(expected)}"
    if keyword == "minItems":
        return f"should have at least {expected} items"
    if keyword == "uniqueItems":
        return "shouldn't contain duplicates"
    if keyword == "minProperties":
        return f"should have at least {expected} properties"
    if keyword == "anyOf":
        return "must validate at least one schema (anyOf)"
    if keyword == "oneOf":
        return "must validate one and only one schema (oneOf)"
    if keyword == "not":
        return "must not validate the schema (not)"
    return str(error.message)


def _parts(error: jsonschema.ValidationError) -> tuple[str, Any, Any]:
    """The failing keyword, its value in the schema, and the instance it rejected."""
    expected: Any = error.validator_value
    instance: Any = error.instance
    return str(error.validator), expected, instance


def _bad_value(keyword: str, instance: Any) -> Any:
    if keyword in ("minItems", "minProperties"):
        return len(instance)
    if keyword in ("uniqueItems", "anyOf", "oneOf", "not"):
        return ""
    return instance


def _type_name(value: Any) -> str:
    return "null" if value is None else _TYPE_NAMES.get(type(value), type(value).__name__)


def _path(parts: Any) -> str:
    """kube-openapi's names: ``spec.items[0].name``; map keys are joined with dots like properties."""
    text = ""
    for part in parts:
        text = f"{text}[{part}]" if isinstance(part, int) else _child(text, part)
    return text


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# ---------------------------------------------------------------------------
# The string formats the API server validates (everything else is ignored, as it strips them).

_FORMATS = FormatChecker(formats=())
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})\Z")
_DATE_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z")
_MAC = re.compile(r"([0-9A-Fa-f]{2}([-:]))(?:[0-9A-Fa-f]{2}\2){4}[0-9A-Fa-f]{2}\Z")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"(?=.{{1,255}}\Z){_LABEL}(?:\.{_LABEL})*\.?\Z")


@_FORMATS.checks("date")
def _is_date(value: object) -> bool:
    if not isinstance(value, str):
        return True
    match = _DATE.match(value)
    try:
        return bool(match) and bool(datetime.date(*map(int, match.groups())))  # type: ignore[union-attr]
    except ValueError:
        return False


@_FORMATS.checks("date-time")
@_FORMATS.checks("datetime")
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    match = _DATE_TIME.match(value)
    if not match or not _is_date(match.group(1)):
        return False
    hour, minute, second = (int(match.group(i)) for i in (2, 3, 4))
    return hour < 24 and minute < 60 and second < 60


@_FORMATS.checks("duration")
def _is_duration(value: object) -> bool:
    try:
        return not isinstance(value, str) or isinstance(durations.parse_ns(value), int)
    except durations.DurationError:
        return False


@_FORMATS.checks("uuid")
@_FORMATS.checks("uuid3")
@_FORMATS.checks("uuid4")
@_FORMATS.checks("uuid5")
def _is_uuid(value: object) -> bool:
    try:
        return not isinstance(value, str) or (len(value) == 36 and bool(uuid.UUID(value)))
    except ValueError:
        return False


@_FORMATS.checks("ipv4")
def _is_ipv4(value: object) -> bool:
    return _parses(value, ipaddress.IPv4Address)


@_FORMATS.checks("ipv6")
def _is_ipv6(value: object) -> bool:
    return _parses(value, ipaddress.IPv6Address)


@_FORMATS.checks("cidr")
def _is_cidr(value: object) -> bool:
    return not isinstance(value, str) or ("/" in value and _parses(value, _network))


def _network(text: str) -> object:
    return ipaddress.ip_network(text, strict=False)


def _parses(value: object, parse: Any) -> bool:
    try:
        return not isinstance(value, str) or parse(value) is not None
    except ValueError:
        return False


@_FORMATS.checks("mac")
def _is_mac(value: object) -> bool:
    return not isinstance(value, str) or bool(_MAC.match(value))


@_FORMATS.checks("hostname")
def _is_hostname(value: object) -> bool:
    return not isinstance(value, str) or bool(_HOSTNAME.match(value))


@_FORMATS.checks("byte")
def _is_base64(value: object) -> bool:
    try:
        return not isinstance(value, str) or bool(base64.b64decode(value, validate=True) is not None)
    except (binascii.Error, ValueError):
        return False
