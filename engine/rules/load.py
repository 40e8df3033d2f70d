"""Stages 1-3 of compiling a rule file: load it and its includes, validate each, merge them.

Every element keeps the file and path it came from, so later stages report file:line:col.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from engine.rules import schema
from engine.rules.errors import RuleError, RuleErrors
from engine.rules.source import SourceFile, load_source

Path_ = tuple[str | int, ...]
T = TypeVar("T")


@dataclass
class Located:
    """A validated element with the file and path it came from."""

    item: Any
    src: SourceFile
    path: Path_


@dataclass
class Merged:
    """The rule file and its includes, merged: single sections from the last file, maps unioned, lists joined."""

    main: SourceFile
    single: dict[str, Located] = field(default_factory=dict)
    maps: dict[str, dict[str, Located]] = field(default_factory=dict)
    lists: dict[str, list[Located]] = field(default_factory=dict)


class Loader:
    """Loads a rule file with its includes; collects errors instead of stopping at the first."""

    def __init__(self, errors: list[RuleError]) -> None:
        self.errors = errors

    def error(self, src: SourceFile, path: Path_, message: str, *, value: bool = False) -> None:
        position = src.locate_value(path) if value else src.locate(path)
        self.errors.append(RuleError(position, message))


    def validate(self, src: SourceFile, spec_type: type[BaseModel]) -> BaseModel | None:
        try:
            return spec_type.model_validate(dict(src.data))
        except ValidationError as err:
            for issue in err.errors():
                loc = tuple(issue["loc"])
                data_path = _data_path(src.data, loc)
                where = ".".join(str(p) for p in data_path) or "(top level)"
                message = issue["msg"]
                if issue["type"] == "extra_forbidden":
                    message = f"unknown field {data_path[-1]!r}" if data_path else message
                    where = ".".join(str(p) for p in data_path[:-1]) or "(top level)"
                elif issue["type"] == "missing":
                    message = f"missing required field {loc[-1]!r}"
                self.error(src, data_path, f"{where}: {message}")
            return None

    def load(self, path: Path, seen: tuple[Path, ...] = ()) -> Merged | None:
        src = load_source(path, display(path))
        spec_type = schema.IncludeFileSpec if seen else schema.RuleFileSpec
        spec = self.validate(src, spec_type)
        if spec is None:
            return None
        assert isinstance(spec, schema.RuleFileSpec)
        merged = Merged(main=src)
        for index, include in enumerate(spec.include):
            target = (path.parent / include).resolve()
            if target in seen or target == path.resolve():
                self.error(src, ("include", index), f"include: {include} includes itself")
                continue
            if not target.is_file():
                self.error(src, ("include", index), f"include: no rule file {include}", value=True)
                continue
            try:
                inner = self.load(target, (*seen, path.resolve()))
            except RuleErrors as err:
                self.errors.extend(err.errors)
                continue
            if inner is not None:
                self.merge_into(merged, inner)
        own = Merged(main=src)
        for name in type(spec).model_fields:
            if name == "include" or name not in src.data:
                continue
            value = getattr(spec, name)
            if isinstance(value, dict) and name in ("inputs", "values"):
                own.maps[name] = {k: Located(v, src, (name, k)) for k, v in value.items()}
            elif isinstance(value, list):
                own.lists[name] = [Located(v, src, (name, i)) for i, v in enumerate(value)]
            else:
                own.single[name] = Located(value, src, (name,))
        self.merge_into(merged, own)
        return merged

    def merge_into(self, merged: Merged, other: Merged) -> None:
        merged.single.update(other.single)
        for name, entries in other.maps.items():
            target = merged.maps.setdefault(name, {})
            for key, loc in entries.items():
                if key in target:
                    first = target[key]
                    self.error(loc.src, loc.path, f"{name}.{key} is already defined at {first.src.locate(first.path)}")
                else:
                    target[key] = loc
        for name, items in other.lists.items():
            merged.lists.setdefault(name, []).extend(items)


def display(path: Path) -> str:
    """A path as errors show it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _data_path(data: Any, loc: Sequence[Any]) -> tuple[str | int, ...]:
    """The pydantic error location with union tags and wrapper names dropped: a real path into the data."""
    node = data
    out: list[str | int] = []
    for step in loc:
        in_map = isinstance(node, Mapping) and step in node
        in_list = isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node)
        if in_map or in_list:
            out.append(step)
            node = node[step]
        elif isinstance(node, Mapping) and isinstance(step, str) and step.endswith("_") and step[:-1] in node:
            out.append(step[:-1])
            node = node[step[:-1]]
    if loc and isinstance(loc[-1], str) and (not out or out[-1] != loc[-1]) and isinstance(node, Mapping):
        out.append(loc[-1])
    return tuple(out)
