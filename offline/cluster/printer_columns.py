"""The API server's static checks of a CRD's ``additionalPrinterColumns`` and of its simple JSON paths.

A real API server refuses a CRD whose printer column has no name, an unknown type or format, or a
jsonPath that does not start with ``.``; the memory cluster refuses it the same way, so a CRD that
``engine test`` and the emulator accept also installs on a cluster. Wording and field paths follow
apiextensions-apiserver's ``ValidateCustomResourceColumnDefinition`` (its field is ``JSONPath``, as
the API server names it).
"""

from __future__ import annotations

from typing import Any

from engine.cluster.api import Cause
from offline.cluster.admission.fielderrors import go_quote

TYPES = ("boolean", "date", "integer", "number", "string")
FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")


def column_causes(columns: Any, path: str) -> list[Cause]:
    """Every refused field of the printer columns at ``path`` (``spec.versions[0].additionalPrinterColumns``)."""
    causes: list[Cause] = []
    for c, column in enumerate(columns if isinstance(columns, list) else []):
        causes += _one_column(column if isinstance(column, dict) else {}, f"{path}[{c}]")
    return causes


def simple_json_path_causes(value: str, path: str) -> list[Cause]:
    """A JSON path in dot notation starting with ``.`` (printer columns, the scale subresource)."""
    if not value:
        return [Cause(path, f"Invalid value: {go_quote(value)}: must not be empty")]
    if not value.startswith("."):
        return [Cause(path, f"Invalid value: {go_quote(value)}: must be a simple json path starting with .")]
    return []


def _one_column(column: dict[str, Any], path: str) -> list[Cause]:
    causes = []
    name, type_, format_, json_path = (_text(column.get(key)) for key in ("name", "type", "format", "jsonPath"))
    if not name:
        causes.append(Cause(f"{path}.name", "Required value", "FieldValueRequired"))
    if not type_:
        causes.append(Cause(f"{path}.type", f"Required value: must be one of {','.join(TYPES)}", "FieldValueRequired"))
    elif type_ not in TYPES:
        causes.append(Cause(f"{path}.type", f'Invalid value: {go_quote(type_)}: must be one of {",".join(TYPES)}'))
    if format_ and format_ not in FORMATS:
        causes.append(Cause(f"{path}.format",
                            f'Invalid value: {go_quote(format_)}: must be one of {",".join(FORMATS)}'))
    if not json_path:
        causes.append(Cause(f"{path}.JSONPath", "Required value", "FieldValueRequired"))
    else:
        causes += simple_json_path_causes(json_path, f"{path}.JSONPath")
    return causes


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
