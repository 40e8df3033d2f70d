"""Field errors worded as the API server words them (k8s.io/apimachinery/pkg/util/validation/field).

Admission collects these, then turns them into one ``Invalid`` whose message and causes read
like the API server's, so scenarios can compare rejections with what a real cluster says.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

from engine.cluster.api import Cause, Invalid

ROOT = "<nil>"
"""How the API server prints the path of an error about the whole object (a nil field.Path)."""


class ErrorType(StrEnum):
    """field.ErrorType: the cause reason, and the words each renders as."""

    REQUIRED = "FieldValueRequired"
    INVALID = "FieldValueInvalid"
    TYPE_INVALID = "FieldValueTypeInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    DUPLICATE = "FieldValueDuplicate"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"

    @property
    def words(self) -> str:
        return _WORDS[self]


_WORDS = {
    ErrorType.REQUIRED: "Required value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.TYPE_INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
}

_WITHOUT_VALUE = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG}


class _Omitted:
    """field.OmitValueType: an error that names no value (a rule failing on an object or a list)."""

    def __repr__(self) -> str:
        return "OMITTED"


OMITTED: Any = _Omitted()

BLOCKING = frozenset(
    {ErrorType.NOT_SUPPORTED, ErrorType.REQUIRED, ErrorType.TOO_LONG, ErrorType.TOO_MANY, ErrorType.TYPE_INVALID}
)
"""Schema errors after which the API server does not run CEL rules (hasBlockingErr)."""

NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


@dataclass(frozen=True)
class FieldError:
    """One field error: its type, path (``spec.items[0].name`` or ``<nil>``), offending value and detail."""

    type: ErrorType
    field: str
    value: Any = None
    detail: str = ""

    def body(self) -> str:
        """The error without its path (field.Error.ErrorBody), as a Status cause carries it."""
        text = self.type.words
        if self.type not in _WITHOUT_VALUE and self.value is not OMITTED:
            text = f"{text}: {go_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> Cause:
        return Cause(field=self.field, message=self.body(), reason=self.type.value)


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, field, "", detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, field, value, detail)


def not_supported(field: str, value: Any, supported: Sequence[Any]) -> FieldError:
    quoted = ", ".join(go_quote(v if isinstance(v, str) else go_json(v)) for v in supported)
    return FieldError(ErrorType.NOT_SUPPORTED, field, value, f"supported values: {quoted}" if quoted else "")


def too_long(field: str, max_length: int) -> FieldError:
    unit = "byte" if max_length == 1 else "bytes"
    return FieldError(ErrorType.TOO_LONG, field, None, f"may not be more than {max_length} {unit}")


def too_many(field: str, actual: int, max_items: int) -> FieldError:
    unit = "item" if max_items == 1 else "items"
    return FieldError(ErrorType.TOO_MANY, field, actual, f"must have at most {max_items} {unit}")


def invalid_object(group: str, kind: str, name: str, errors: Sequence[FieldError]) -> Invalid:
    """The API server's ``errors.NewInvalid``: ``Kind.group "name" is invalid: ...``, one cause per error."""
    qualified = f"{kind}.{group}" if group else kind
    seen: list[str] = []
    for error in errors:
        if str(error) not in seen:
            seen.append(str(error))
    if not seen:
        summary = ""
    elif len(seen) == 1:
        summary = f": {seen[0]}"
    else:
        summary = f": [{', '.join(seen)}]"
    return Invalid(
        f"{qualified} {go_quote(name)} is invalid{summary}",
        causes=[error.cause() for error in errors],
        details={"group": group, "kind": kind, "name": name},
    )


# ---------------------------------------------------------------------------
# Go's renderings of values, so messages match byte for byte.


def go_value(value: Any) -> str:
    """A bad value as ErrorBody prints it: numbers and booleans bare, strings %q, the rest as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return go_number(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_json(value)


def go_number(value: int | float) -> str:
    """A number as Go's %v prints an int64, or a float64 (shortest digits, exponent from 1e+06 on)."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent
    minus = "-" if sign else ""
    if point - 1 < -4 or point - 1 >= 6:
        mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
        power = point - 1
        return f"{minus}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{minus}{digits}{'0' * (point - len(digits))}"
    return f"{minus}{digits[:point]}.{digits[point:]}"


def go_json(value: Any, *, ordered: bool = False) -> str:
    """encoding/json: sorted keys (a map's; ``ordered`` keeps a struct's field order), no spaces, HTML-safe escapes."""
    text = json.dumps(_go_floats(value), sort_keys=not ordered, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _go_floats(value: Any) -> Any:
    """Floats as Go's encoding/json writes them: a whole number without its ``.0``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, list):
        return [_go_floats(item) for item in value]
    if isinstance(value, dict):
        return {key: _go_floats(item) for key, item in value.items()}
    return value


_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}


def go_quote(text: str) -> str:
    """strconv.Quote: double quotes, Go escapes, printable Unicode kept as is."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'
