"""Table output (``meta.k8s.io/v1 Table``), what ``kubectl get`` asks for to print columns.

As the API server's custom resource table convertor: a Name column, then the CRD's printer
columns (or Age alone when it declares none), each cell typed as its column says; dates
render as the age kubectl prints (``5m``, ``3d4h``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from engine.clock import parse_time
from engine.cluster.api import Obj, PrinterColumn, ResourceInfo
from offline.emulator.jsonpath import JsonPathError, compile_path

_NAME_COLUMN: Obj = {
    "name": "Name", "type": "string", "format": "name", "priority": 0,
    "description": "Name must be unique within a namespace.",
}
_AGE = PrinterColumn("Age", "date", ".metadata.creationTimestamp",
                     "CreationTimestamp is a timestamp representing the server time when this object was created.")


def wanted_table(accept: str | None) -> str | None:
    """The Table apiVersion an Accept header asks for (``as=Table;g=meta.k8s.io;v=v1``), else None.

    Media types are tried in order; plain JSON before any Table means JSON."""
    for media in (accept or "").split(","):
        kind, _, params = media.strip().partition(";")
        values = dict(p.strip().partition("=")[::2] for p in params.split(";") if "=" in p)
        if values.get("as") == "Table" and values.get("g") == "meta.k8s.io" and values.get("v") in ("v1", "v1beta1"):
            return f"meta.k8s.io/{values['v']}"
        if kind.strip() in ("application/json", "*/*", "application/*") and "as" not in values:
            return None
    return None


def columns_of(info: ResourceInfo) -> tuple[PrinterColumn, ...]:
    """The printer columns after Name: the kind's own, or Age when it has none."""
    return info.printer_columns or (_AGE,)


def to_table(info: ResourceInfo, objects: Sequence[Obj], *, api_version: str, now: dt.datetime,
             resource_version: str | None = None, include_object: str = "Metadata") -> Obj:
    """The Table of objects: one row each; include_object is None, Metadata or Object."""
    columns = columns_of(info)
    definitions = [_NAME_COLUMN] + [
        {"name": c.name, "type": c.type, "format": c.format, "description": c.description, "priority": c.priority}
        for c in columns
    ]
    rows = []
    for obj in objects:
        row: Obj = {"cells": [obj.get("metadata", {}).get("name")] + [_cell(c, obj, now) for c in columns]}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": api_version,
                             "metadata": obj.get("metadata", {})}
        rows.append(row)
    meta: Obj = {} if resource_version is None else {"resourceVersion": resource_version}
    return {"kind": "Table", "apiVersion": api_version, "metadata": meta, "columnDefinitions": definitions,
            "rows": rows}


def _cell(column: PrinterColumn, obj: Obj, now: dt.datetime) -> Any:
    try:
        found, value = compile_path(column.json_path).first(obj)
    except JsonPathError:
        return None
    if not found or value is None:
        return None
    kind = column.type
    if kind == "string":
        return go_format(value)
    if kind == "integer":
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if kind == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date":
        if not isinstance(value, str):
            return None
        try:
            return human_duration(now - parse_time(value))
        except ValueError:
            return "<invalid>"
    return None


def go_format(value: Any) -> str:
    """A JSON value printed as Go's ``%v`` prints it, as JSONPath string columns show it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(v)}" for k, v in sorted(value.items())) + "]"
    if value is None:
        return "<nil>"
    return str(value) if isinstance(value, str | int) else json.dumps(value)


def human_duration(delta: dt.timedelta) -> str:
    """An age as kubectl prints it (apimachinery's HumanDuration)."""
    seconds = int(delta.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"
