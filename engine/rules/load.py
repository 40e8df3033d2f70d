"""Stages 1-3 of compiling a rule file: load it and its includes, validate each, merge them.

Every element keeps the file and path it came from, so later stages report file:line:col.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, get_origin

from pydantic import BaseModel, ValidationError

from engine.expr.suggest import did_you_mean
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
        self.kept: dict[str, dict[str, list[int]]] = {}
        """Per file and list section, the original index of each element left after pruning."""
        self.broken: set[str] = set()
        """Names an invalid element defined (its step name, input, value, `as`/`set` names)."""
        self.pruned_sections: set[str] = set()
        """Sections left out whole because they were invalid."""
        self.sources: list[str] = []
        """Every rule file read (the file and its includes), as errors name them."""

    def error(self, src: SourceFile, path: Path_, message: str, *, value: bool = False) -> None:
        position = src.locate_value(path) if value else src.locate(path)
        self.errors.append(RuleError(position, message))


    def validate(self, src: SourceFile, spec_type: type[BaseModel]) -> BaseModel | None:
        """The file's spec; each invalid step, gate, input, value or section is reported and left out.

        Leaving out only what is broken lets the later stages report their errors in the same run.
        """
        data: dict[str, Any] | None = dict(src.data)
        for _ in range(_PRUNE_ROUNDS):
            if data is None:
                return None
            try:
                return spec_type.model_validate(data)
            except ValidationError as err:
                issues = err.errors()
            for issue in issues:
                self.report(src, self.original(src, tuple(issue["loc"])), issue)
            data = self.prune(src, data, issues)
        return None

    def report(self, src: SourceFile, loc: tuple[Any, ...], issue: Any) -> None:
        data_path = _data_path(src.data, loc)
        where = ".".join(str(p) for p in data_path) or "(top level)"
        message = issue["msg"]
        if issue["type"] == "extra_forbidden":
            field_name = str(data_path[-1]) if data_path else ""
            message = f"unknown field {field_name!r}{did_you_mean(field_name, _FIELD_NAMES)}" \
                if data_path else message
            where = ".".join(str(p) for p in data_path[:-1]) or "(top level)"
        elif issue["type"] == "missing":
            message = f"missing required field {loc[-1]!r}"
        self.error(src, data_path, f"{where}: {message}")

    def prune(self, src: SourceFile, data: dict[str, Any], issues: list[Any]) -> dict[str, Any] | None:
        """``data`` without the top-level entries the issues are in; None when an issue is at the top."""
        pruned = dict(data)
        kept = self.kept.setdefault(src.path, {})
        drop_items: dict[str, set[int]] = {}
        for issue in issues:
            loc = tuple(issue["loc"])
            if issue["type"] == "extra_forbidden" and len(loc) > 1:
                pruned = _without(pruned, _data_path(pruned, loc))  # an unknown key: drop only the key
                continue
            if issue["type"] == "missing" and loc == ("kind",):
                pruned["kind"] = ""  # reported: the rest of the file is still checked
                continue
            if not loc or loc[0] not in pruned:
                return None
            section, value = loc[0], pruned[loc[0]]
            if section in _LIST_SECTIONS and len(loc) > 1 and isinstance(value, list) and isinstance(loc[1], int) \
                    and 0 <= loc[1] < len(value):
                drop_items.setdefault(section, set()).add(loc[1])
            elif section in _MAP_SECTIONS and len(loc) > 1 and isinstance(value, Mapping) and loc[1] in value:
                self.broken.add(str(loc[1]))
                pruned[section] = {k: v for k, v in value.items() if k != loc[1]}
            else:
                self.pruned_sections.add(str(section))
                pruned.pop(section, None)
        for section, drop in drop_items.items():
            if section not in pruned:
                continue
            value = list(pruned[section])
            indices = kept.setdefault(section, list(range(len(value))))
            for index in sorted(drop, reverse=True):
                self.broken.update(_bound_names(value[index]))
                del value[index]
                del indices[index]
            pruned[section] = value
        return pruned

    def original(self, src: SourceFile, loc: tuple[Any, ...]) -> tuple[Any, ...]:
        """An issue location in pruned data as a location in the file (list indices before pruning)."""
        indices = self.kept.get(src.path, {}).get(loc[0]) if loc else None
        if indices is not None and len(loc) > 1 and isinstance(loc[1], int) and 0 <= loc[1] < len(indices):
            return (loc[0], indices[loc[1]], *loc[2:])
        return loc

    def load(self, path: Path, seen: tuple[Path, ...] = ()) -> Merged | None:
        src = load_source(path, display(path))
        self.sources.append(src.path)
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
            if value is None:  # absent, or left out as invalid (reported)
                continue
            if isinstance(value, dict) and name in ("inputs", "values"):
                own.maps[name] = {k: Located(v, src, (name, k)) for k, v in value.items()}
            elif isinstance(value, list):
                indices = self.kept.get(src.path, {}).get(name, range(len(value)))
                own.lists[name] = [Located(v, src, (name, i)) for i, v in zip(indices, value, strict=True)]
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


_PRUNE_ROUNDS = 4
_LIST_SECTIONS = frozenset(n for n, f in schema.RuleFileSpec.model_fields.items()
                           if get_origin(f.annotation) is list and n != "include")
_MAP_SECTIONS = frozenset(n for n, f in schema.RuleFileSpec.model_fields.items() if get_origin(f.annotation) is dict)
"""Sections whose elements are left out one by one when invalid (any other invalid section: whole)."""
_FIELD_NAMES = frozenset(
    info.alias or name
    for model in vars(schema).values() if isinstance(model, type) and issubclass(model, BaseModel)
    for name, info in model.model_fields.items()
)
"""Every field name a rule file may use, for "did you mean" on an unknown one."""


def _without(data: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any]:
    """A copy of ``data`` without the mapping key at ``path`` (containers on the way copied, not changed)."""
    if not path:
        return data

    def drop(node: Any, rest: tuple[str | int, ...]) -> Any:
        head = rest[0]
        if isinstance(node, Mapping) and head in node:
            if len(rest) == 1:
                return {k: v for k, v in node.items() if k != head}
            return {**node, head: drop(node[head], rest[1:])}
        if isinstance(node, list) and isinstance(head, int) and 0 <= head < len(node) and len(rest) > 1:
            return [*node[:head], drop(node[head], rest[1:]), *node[head + 1 :]]
        return node

    result: dict[str, Any] = drop(data, path)
    return result


def _bound_names(element: Any) -> set[str]:
    """The names a raw (invalid) step defines: its own name, `as` names and `set` keys, best effort."""
    names: set[str] = set()
    if not isinstance(element, Mapping):
        return names
    if isinstance(element.get("name"), str):
        names.add(element["name"])
    for action in element.get("do") or []:
        if isinstance(action, Mapping):
            if isinstance(action.get("as"), str):
                names.add(action["as"])
            if isinstance(action.get("set"), Mapping):
                names.update(str(k) for k in action["set"])
    return names


def display(path: Path) -> str:
    """A path as errors show it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _data_path(data: Any, loc: Sequence[Any]) -> tuple[str | int, ...]:
    """The pydantic error location with union tags and wrapper names dropped: a real path into the data.

    A union's tag may also be a key of the element (a teardown action tagged ``delete`` has a ``delete``
    key): each such step is tried both ways, and the reading that walks more of the location wins (the one
    that reaches its last step first), so an unknown key beside ``delete`` is placed beside it, not in it."""

    def walk(node: Any, rest: Sequence[Any]) -> tuple[tuple[bool, int], tuple[str | int, ...], Any]:
        if not rest:
            return (True, 0), (), node
        step, after = rest[0], rest[1:]
        readings = []
        if (isinstance(node, Mapping) and step in node) or (
                isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node)):
            (last, count), path, end = walk(node[step], after)
            readings.append(((last, count + 1), (step, *path), end))
        elif isinstance(node, Mapping) and isinstance(step, str) and step.endswith("_") and step[:-1] in node:
            (last, count), path, end = walk(node[step[:-1]], after)
            readings.append(((last, count + 1), (step[:-1], *path), end))
        if not readings or isinstance(step, str):  # a tag or wrapper name
            skipped = walk(node, after)
            readings.append(((skipped[0][0] and bool(after), skipped[0][1]), *skipped[1:]))
        return max(readings, key=lambda reading: reading[0])

    _, found, node = walk(data, loc)
    out = list(found)
    if loc and isinstance(loc[-1], str) and (not out or out[-1] != loc[-1]) and isinstance(node, Mapping):
        out.append(loc[-1])
    return tuple(out)
