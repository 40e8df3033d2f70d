"""The catalog: every order kind the engine serves, compiled once at startup and never mutated."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from engine.rules.compile import compile_kind
from engine.rules.errors import RuleError, RuleErrors
from engine.rules.model import CompiledKind


class Catalog(Mapping[str, CompiledKind]):
    """Kind key (``<apiVersion>/<Kind>``) to compiled kind."""

    def __init__(self, kinds: Mapping[str, CompiledKind]) -> None:
        self._kinds = dict(kinds)

    def __getitem__(self, key: str) -> CompiledKind:
        return self._kinds[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)

    def by_name(self, name: str) -> CompiledKind | None:
        """A kind by its rule-file name (``widget``) or kind (``Widget``)."""
        for kind in self._kinds.values():
            if name in (kind.name, kind.kind, kind.kind.lower()):
                return kind
        return None

    def only(self, names: list[str]) -> Catalog:
        """The kinds named (rule-file names), for a scenario that loads a subset."""
        return Catalog({k: v for k, v in self._kinds.items() if v.name in names or v.kind in names})


def rule_files(paths: list[Path]) -> list[Path]:
    """The rule files under the given files or folders: top-level ``*.yaml`` of each folder (includes live below)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.glob("*.yaml") if p.is_file()))
        else:
            files.append(path)
    return files


def load_catalog(rules_dir: Path, *, templates_dir: Path | None = None) -> Catalog:
    """Compile every rule file in ``rules_dir`` (or the single file given); RuleErrors collects all errors."""
    errors: list[RuleError] = []
    compiled: list[tuple[Path, CompiledKind]] = []
    root = rules_dir if rules_dir.is_dir() else rules_dir.parent
    for path in rule_files([rules_dir]):
        try:
            compiled.append((path, compile_kind(path, rules_dir=root,
                                                templates_root=templates_dir or root.parent / "templates")))
        except RuleErrors as err:
            errors.extend(err.errors)
    try:
        catalog = catalog_of(compiled)
    except RuleErrors as err:
        errors.extend(err.errors)
    if errors:
        raise RuleErrors(errors)
    return catalog


def catalog_of(compiled: Iterable[tuple[Path, CompiledKind]]) -> Catalog:
    """The catalog of compiled rule files; RuleErrors when two of them serve one kind."""
    from engine.rules.errors import Position

    errors: list[RuleError] = []
    kinds: dict[str, CompiledKind] = {}
    for path, kind in compiled:
        if kind.key in kinds:
            errors.append(RuleError(Position(str(path), 1, 1), f"kind {kind.key} is served by two rule files"))
        kinds[kind.key] = kind
    if errors:
        raise RuleErrors(errors)
    return Catalog(kinds)
