"""CRD files checked as the API server checks a CRD on create, each refusal at its file, line and column.

A CRD that ``kubectl apply`` would fail on (a printer column of an unknown type, a name that is not
``<plural>.<group>``, two storage versions, ...) is found by ``engine lint`` and ``engine test`` before
it reaches a cluster. The check is the memory cluster's own admission of a CRD
(``engine.cluster.memory.crd_refusal``); this module only reads the files (with positions, as rule files
are read) and places each cause at the field it names.
"""

from __future__ import annotations

import re
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from engine.cluster.memory import crd_refusal
from engine.rules.errors import Position, RuleError
from engine.rules.source import SourceFile

__all__ = ["crd_file_errors"]

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_JSON_NAMES = {"JSONPath": "jsonPath"}
"""Field names the API server's causes spell as its Go types do, by the name they have in the YAML."""


def crd_file_errors(file: Path) -> list[RuleError]:
    """Every refusal of every CRD in one YAML file (other documents are skipped); a file that does not
    parse is one error."""
    try:
        docs = list(YAML(typ="rt").load_all(file.read_text(encoding="utf-8")))
    except (OSError, YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Position(str(file), mark.line + 1, mark.column + 1) if mark else Position(str(file), 1, 1)
        return [RuleError(where, f"cannot read this CRD file: {getattr(exc, 'problem', None) or exc}")]
    errors = []
    for doc in docs:
        if not isinstance(doc, CommentedMap) or doc.get("kind") != "CustomResourceDefinition":
            continue
        refused = crd_refusal(doc)
        if refused is None:
            continue
        source, name = SourceFile(str(file), doc), str((doc.get("metadata") or {}).get("name") or "")
        for cause in refused.causes or ():
            errors.append(RuleError(source.locate(_steps(cause.field)),
                                    f"the API server refuses CustomResourceDefinition {name!r}: "
                                    f"{cause.field}: {cause.message}"))
    return errors


def _steps(field: str) -> list[str | int]:
    """A cause's field path (``spec.versions[0].schema.openAPIV3Schema.properties[spec].type``) as the keys and
    indexes ``SourceFile.locate`` walks."""
    return [int(index) if index else _JSON_NAMES.get(name, name) for name, index in _STEP.findall(field)]
