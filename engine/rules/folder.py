"""A rule set on disk: the rules folder and its templates, fingerprinted, linted and loaded as one.

The operator polls the fingerprint to reload rules without a restart. The folder may be a mounted
ConfigMap: there every key is a symlink into ``..data``, itself a symlink kubelet swaps atomically
to a new timestamped folder, and the old one is deleted soon after. Names starting with ``..`` are
kubelet's and never hashed (their content is reached through the top-level links); a file that
vanishes while hashed raises OSError, and a set whose fingerprint changes while it is linted and
loaded is not taken (see ``engine.runtime.reload``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from engine.rules.catalog import Catalog, catalog_of, load_catalog, rule_files
from engine.rules.errors import RuleError, RuleErrors
from engine.rules.limits import MAX_RULE_FILE_BYTES, FileTooLarge, read_limited
from engine.rules.lint import lint_paths
from engine.rules.model import CompiledKind


def _files(root: Path) -> list[Path]:
    """Every file below ``root``, following links, sorted; kubelet's ``..`` entries skipped."""
    if root.is_file():
        return [root]
    found: list[Path] = []
    for folder, dirs, names in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".."))
        found.extend(Path(folder) / name for name in sorted(names) if not name.startswith(".."))
    return found


@dataclass(frozen=True)
class RuleFolder:
    """The rule files under ``rules`` and the templates they apply (``templates``; default beside the rules)."""

    rules: Path
    templates: Path | None = None

    @property
    def templates_root(self) -> Path:
        root = self.rules if self.rules.is_dir() else self.rules.parent
        return self.templates or root.parent / "templates"

    def fingerprint(self) -> str:
        """SHA-256 over every file's relative path and content (rules, then templates); a file over the size
        limit by its size alone, unread (lint refuses it). OSError: a file went away while read (a ConfigMap
        swapping its contents); the caller tries again later."""
        digest = hashlib.sha256()
        for label, root in (("rules", self.rules), ("templates", self.templates_root)):
            if not root.exists():
                continue
            for path in _files(root):
                relative = path.relative_to(root).as_posix() if path != root else path.name
                digest.update(f"{label}/{relative}\0".encode())
                try:
                    digest.update(read_limited(path, MAX_RULE_FILE_BYTES))
                except FileTooLarge as err:
                    digest.update(f"\0over the limit: {err.size} bytes".encode())
                digest.update(b"\0")
        return digest.hexdigest()

    def lint(self) -> list[RuleError]:
        """Every lint error of the set, as ``engine lint`` reports them."""
        return lint_paths([self.rules], templates_root=self.templates)

    def load(self) -> Catalog:
        """The compiled catalog (RuleErrors when it does not compile)."""
        return load_catalog(self.rules, templates_dir=self.templates)

    def lint_and_load(self) -> tuple[list[RuleError], Catalog | None]:
        """``lint``, and when it is clean the catalog compiled while linting: each rule file compiled once
        (a start compiled every file twice, a second of CPU for the two kinds shipped)."""
        compiled: dict[Path, CompiledKind] = {}
        errors = lint_paths([self.rules], templates_root=self.templates, compiled=compiled)
        if errors:
            return errors, None
        try:
            if len(compiled) != len(rule_files([self.rules])):  # a file lint let through uncompiled: as ``load``
                return [], self.load()
            return [], catalog_of(compiled.items())
        except RuleErrors as err:
            return list(err.errors), None
