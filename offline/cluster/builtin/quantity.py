"""Resource quantities in the canonical form the API server stores them in (apimachinery's ``resource.Quantity``):
``0.5`` is ``500m``, ``1024Mi`` is ``1Gi``, ``1e3`` stays ``1e3``, ``2G`` stays ``2G``.

The format of the written value is kept (binary suffixes, decimal suffixes or an exponent); the number is
written with the largest suffix that keeps it whole. A binary value that is not a whole multiple of 1024, or is
below 1024, is written with decimal suffixes, as Quantity does.
"""

from __future__ import annotations

import re
from fractions import Fraction

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
"""The schema definition of a quantity."""

_PATTERN = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                      r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}


def canonical(value: object) -> object:
    """The quantity as the API server writes it back; a value that is no quantity is returned as it is."""
    text = str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
    if not isinstance(text, str):
        return value
    match = _PATTERN.match(text.strip())
    if match is None:
        return value
    number, suffix = match.group(1), match.group(2) or ""
    amount = Fraction(number)
    if suffix in _BINARY:
        amount *= 1024 ** _BINARY[suffix]
        if abs(amount) >= 1024 and amount.denominator == 1:
            return _binary(int(amount))
        return _decimal(amount, exponent_form=False)
    if suffix[:1] in ("e", "E"):
        return _decimal(amount * Fraction(10) ** int(suffix[1:]), exponent_form=True)
    return _decimal(amount * Fraction(10) ** _DECIMAL[suffix], exponent_form=False)


def _binary(amount: int) -> str:
    power = 0
    while power < 6 and amount % 1024 == 0 and amount != 0:
        amount //= 1024
        power += 1
    return f"{amount}{_BINARY_SUFFIX.get(power, '')}"


def _decimal(amount: Fraction, *, exponent_form: bool) -> str:
    """The amount at the smallest scale (down to nano, rounded up) written with an exponent that is a multiple of
    three and leaves the number whole."""
    if amount == 0:
        return "0"
    exponent = -9
    scaled = amount * Fraction(10) ** 9
    whole = -(-scaled.numerator // scaled.denominator)  # round up, as Quantity does below its precision
    while whole % 10 == 0 and exponent < 0:
        whole //= 10
        exponent += 1
    while whole % 1000 == 0 and exponent >= 0:
        whole //= 1000
        exponent += 3
    while exponent % 3:
        whole *= 10
        exponent -= 1
    if exponent_form:
        return f"{whole}" + (f"e{exponent}" if exponent else "")
    if exponent > 18:
        whole *= 10 ** (exponent - 18)
        exponent = 18
    return f"{whole}{_DECIMAL_SUFFIX[exponent]}"
