"""The API server's static checks of a CRD's ``additionalPrinterColumns``.

A real API server refuses a CRD whose printer column has no name, an unknown type or format, or a
jsonPath that does not start with ``.``; the memory cluster refuses it the same way, so a CRD that
``engine test`` and the emulator accept also installs on a cluster. Wording and field paths follow
apiextensions-apiserver's ``ValidateCustomResourceColumnDefinition`` (its field is ``JSONPath``, as
the API server names it).
"""

from __future__ import annotations

from typing import Any

from engine.cluster.api import Cause

TYPES = ("boolean", "date", "integer", "number", "string")
FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")


def column_causes(versions: list[Any]) -> list[Cause]:
    """Every refused printer column field of every version, as Invalid causes (empty when all are valid)."""
    causes: list[Cause] = []
    for v, version in enumerate(versions):
        columns = version.get("additionalPrinterColumns") if isinstance(version, dict) else None
        if not isinstance(columns, list):
            continue
        for c, column in enumerate(columns):
            column = column if isinstance(column, dict) else {}
            causes += _one_column(column, f"spec.versions[{v}].additionalPrinterColumns[{c}]")
    return causes


def _one_column(column: dict[str, Any], path: str) -> list[Cause]:
    causes = []
    name, type_, format_, json_path = (_text(column.get(key)) for key in ("name", "type", "format", "jsonPath"))
    if not name:
        causes.append(Cause(f"{path}.name", "Required value", "FieldValueRequired"))
    if not type_:
        causes.append(Cause(f"{path}.type", f"Required value: must be one of {','.join(TYPES)}", "FieldValueRequired"))
    elif type_ not in TYPES:
        causes.append(Cause(f"{path}.type", f'Invalid value: "{type_}": must be one of {",".join(TYPES)}'))
    if format_ and format_ not in FORMATS:
        causes.append(Cause(f"{path}.format", f'Invalid value: "{format_}": must be one of {",".join(FORMATS)}'))
    if not json_path:
        causes.append(Cause(f"{path}.JSONPath", "Required value", "FieldValueRequired"))
    elif not json_path.startswith("."):
        causes.append(Cause(f"{path}.JSONPath",
                            f'Invalid value: "{json_path}": must be a simple json path starting with .'))
    return causes


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
