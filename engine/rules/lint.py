"""`engine lint`: compile every rule file and its templates, and report every error as file:line:col."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from engine.expr.jinja import untojsoned_outputs
from engine.rules.catalog import rule_files
from engine.rules.compile import Compiler
from engine.rules.errors import Position, RuleError, RuleErrors
from engine.rules.load import display
from engine.rules.model import CompiledKind
from engine.rules.schema import RuleFileSpec
from engine.rules.schema_paths import Schemas, check_paths, check_watch_paths, crd_files, crd_folders, load_schemas


@dataclass
class Checked:
    """What a lint looked at, for the line `engine lint` ends with: silence would not say whether it ran."""

    kinds: int = 0
    rule_files: set[str] = field(default_factory=set)
    templates: set[str] = field(default_factory=set)
    crds: set[tuple[str, str]] = field(default_factory=set)
    rules: int = 0
    """Inputs, values, gates, steps, teardown actions and declared watches of every kind."""

    def summary(self, errors: list[RuleError]) -> str:
        files = len({error.position.file for error in errors})
        verdict = f"{_count(len(errors), 'error')} in {_count(files, 'file')}" if errors else "0 errors"
        return (f"engine lint: {_count(self.kinds, 'kind')}, {_count(len(self.rule_files), 'rule file')}, "
                f"{_count(len(self.templates), 'template')}, {_count(len(self.crds), 'CRD')}; "
                f"{_count(self.rules, 'rule')} checked, {verdict}")

    def add(self, kind: CompiledKind) -> None:
        self.kinds += 1
        declared = [w for w in kind.watches if w.mapping in ("reference", "orders", "index")]
        self.rules += len(kind.inputs) + len(kind.values) + len(kind.gates) + len(kind.steps) \
            + len(kind.teardown.actions) + len(declared)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def lint_paths(paths: list[Path], *, templates_root: Path | None = None, crds: list[Path] | None = None,
               compiled: dict[Path, CompiledKind] | None = None, check_crds: bool = False,
               checked: Checked | None = None) -> list[RuleError]:
    """Every error in the rule files under ``paths`` (folders: their top-level ``*.yaml``).

    Paths read from the order and from inputs are checked against the CRDs in ``crds`` (default:
    ``crds/`` beside the rules folder, else ``deploy/crds/``). With ``check_crds`` (``engine lint``), each CRD
    there is also checked as the API server checks it on create; the operator's own lint at start and reload
    leaves that out: the cluster already admitted the CRDs it serves, and compiling them costs about a second.
    ``compiled``, when given, receives each rule file's compiled kind, so a caller that lints before it loads
    compiles every file once. ``checked``, when given, counts what was checked.
    """
    checked = checked if checked is not None else Checked()
    errors: list[RuleError] = []
    schemas: dict[tuple[Path, ...], Schemas] = {}  # one CRD folder is read once, however many rule files use it
    files = rule_files(paths)
    if not files:
        return [RuleError(Position(str(p), 1, 1), "no rule files here") for p in paths]
    for path in files:
        if not path.is_file():
            errors.append(RuleError(Position(str(path), 1, 1), "no such rule file"))
            continue
        root = path.parent
        compiler = Compiler(root, templates_root or root.parent / "templates")
        try:
            kind = compiler.compile(path)
            if kind is None:
                raise RuleErrors(compiler.errors or [RuleError(Position(str(path), 1, 1), "did not compile")])
        except RuleErrors as err:
            errors.extend(err.errors)
            kind = None
        except Exception as err:  # a bug must still read as a lint error, never a traceback
            errors.append(RuleError(Position(str(path), 1, 1), f"internal error while compiling: {type(err).__name__}"))
            continue
        if compiled is not None and kind is not None and not compiler.errors:
            compiled[path] = kind
        checked.rule_files.update([display(path), *compiler.loader.sources])
        checked.templates.update(template.path for template in compiler.templates.values())
        if compiler.kind is not None:
            checked.add(compiler.kind)
        folders = tuple(crds if crds is not None else crd_folders(root))
        if folders:
            if folders not in schemas:
                schemas[folders] = load_schemas(folders)
                errors.extend(schemas[folders].refused)
                checked.crds |= schemas[folders].kinds()
                if check_crds:  # only `engine lint` checks CRDs, with the offline world's CRD check (entry point)
                    from engine.rules.crd_lint import crd_file_errors

                    errors.extend(error for file in crd_files(folders) for error in crd_file_errors(file))
            if compiler.kind is not None:  # as far as it compiled: a typo is found whatever else is wrong
                in_watches = {id(site.expr) for site, *_ in compiler.watch_sites}  # they read the watched kind
                sites = [site for site in compiler.sites if id(site.expr) not in in_watches]
                errors.extend(check_paths(compiler.kind, sites, schemas[folders]))
            errors.extend(check_watch_paths(compiler.watch_sites, schemas[folders], compiler.pass_names))
        for template in compiler.templates.values():  # the templates that compiled, even when the kind did not
            for line in untojsoned_outputs(template):
                errors.append(RuleError(Position(template.path, line, 1),
                                        "an interpolated value is not piped through `| tojson` (YAML injection)"))
    return list(dict.fromkeys(errors))  # an include shared by two kinds reports its errors once


def schema_document() -> str:
    """The rule-file JSON Schema, for yaml-language-server and other editors."""
    schema = RuleFileSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Rule file"
    return json.dumps(schema, indent=2, sort_keys=True)
