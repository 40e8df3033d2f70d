"""CRD files checked as the API server checks a CRD on create, each refusal at its file, line and column.

A CRD that ``kubectl apply`` would fail on (a printer column of an unknown type, a name that is not
``<plural>.<group>``, two storage versions, ...) is found by ``engine lint`` and ``engine test`` before
it reaches a cluster. The check is the memory cluster's own admission of a CRD
(``engine.cluster.memory.crd_refusal``); this module only reads the files and places each cause.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from engine.cluster.memory import crd_refusal
from engine.rules.errors import Position, RuleError

__all__ = ["crd_file_errors"]

_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def crd_file_errors(file: Path) -> list[RuleError]:
    """Every refusal of every CRD in one YAML file (other documents are skipped); a file that does not
    parse is one error."""
    try:
        nodes = list(yaml.compose_all(file.read_text(encoding="utf-8"), Loader=yaml.SafeLoader))
    except (OSError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Position(str(file), mark.line + 1, mark.column + 1) if mark else Position(str(file), 1, 1)
        return [RuleError(where, f"cannot read this CRD file: {getattr(exc, 'problem', None) or exc}")]
    errors = []
    for node in nodes:
        if node is None:
            continue
        doc = yaml.SafeLoader("").construct_document(node)
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            continue
        refused = crd_refusal(doc)
        if refused is None:
            continue
        name = str((doc.get("metadata") or {}).get("name") or "")
        for cause in refused.causes or ():
            at = _node_at(node, cause.field)
            errors.append(RuleError(Position(str(file), at.start_mark.line + 1, at.start_mark.column + 1),
                                    f"the API server refuses CustomResourceDefinition {name!r}: "
                                    f"{cause.field}: {cause.message}"))
    return errors


def _node_at(root: Any, field: str) -> Any:
    """The YAML node a cause's field path (``spec.versions[0].additionalPrinterColumns[1].type``) names: the key
    of its last field, else the deepest node the path reaches (names compared ignoring case, as the API server
    spells some fields, ``JSONPath``, unlike their JSON names)."""
    node, found = root, root
    for name, index in _SEGMENT.findall(field):
        if index and isinstance(node, yaml.SequenceNode) and int(index) < len(node.value):
            node = found = node.value[int(index)]
        elif name and isinstance(node, yaml.MappingNode):
            pair = next((pair for pair in node.value if str(pair[0].value).lower() == name.lower()), None)
            if pair is None:
                return found
            found, node = pair[0], pair[1]
        else:
            return found
    return found
