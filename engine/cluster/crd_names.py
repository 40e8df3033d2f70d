"""The API server's checks of a CRD's ``spec.names``: each name a DNS-1035 label, as it words them.

``plural``, ``singular``, ``shortNames`` and ``categories`` must be lowercase DNS-1035 labels; ``kind``
and ``listKind`` may have mixed case but must otherwise be one; ``kind`` and ``listKind`` may not be
the same. Wording and field paths follow apiextensions-apiserver's
``ValidateCustomResourceDefinitionNames``.
"""

from __future__ import annotations

import re
from typing import Any

from engine.cluster.api import Cause

_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic"
                " character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for"
                " validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def dns1035_errors(value: str) -> list[str]:
    """What is wrong with a DNS-1035 label, as the API server words it; [] when valid."""
    errors = ["must be no more than 63 characters"] if len(value) > 63 else []
    if _DNS1035.fullmatch(value) is None:
        errors.append(_DNS1035_MSG)
    return errors


def names_causes(names: dict[str, Any]) -> list[Cause]:
    """Every refused name of a CRD's ``spec.names`` (empty when all are valid)."""
    causes: list[Cause] = []

    def check(field: str, value: Any, mixed_case: bool = False) -> None:
        if not isinstance(value, str) or not value:
            return
        errors = dns1035_errors(value.lower() if mixed_case else value)
        if errors:
            detail = ",".join(errors)
            if mixed_case:
                detail = f"may have mixed case, but should otherwise match: {detail}"
            causes.append(Cause(f"spec.names.{field}", f'Invalid value: "{value}": {detail}'))

    check("plural", names.get("plural"))
    check("singular", names.get("singular"))
    check("kind", names.get("kind"), mixed_case=True)
    check("listKind", names.get("listKind"), mixed_case=True)
    for i, short in enumerate(names.get("shortNames") or []):
        check(f"shortNames[{i}]", short)
    kind, list_kind = names.get("kind"), names.get("listKind")
    if kind and kind == list_kind:
        causes.append(Cause("spec.names.listKind",
                            f'Invalid value: "{list_kind}": kind and listKind may not be the same'))
    for i, category in enumerate(names.get("categories") or []):
        check(f"categories[{i}]", category)
    return causes
