"""CRD files checked as the API server checks a CRD on create, each refusal at its file, line and column.

A CRD that ``kubectl apply`` would fail on (a printer column of an unknown type, a name that is not
``<plural>.<group>``, two storage versions, a misspelt schema keyword, ...) is found by ``engine lint`` and
``engine test`` before it reaches a cluster. The check is the one the memory cluster admits a CRD by
(``offline.cluster.crd_check``, found through the ``crd-check`` entry point: the operator image leaves the
offline world out); this module only reads the files (with positions, as rule files
are read) and places each cause at the field it names. The API server names some fields by its internal
form of the CRD (``spec.validation`` for a schema every version shares, ``spec.version`` for the first
version's name): the message keeps its words, the position is that of the field in the file.
"""

from __future__ import annotations

import functools
import re
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from engine.rules.errors import Position, RuleError
from engine.rules.limits import MAX_CRD_FILE_BYTES, FileTooLarge, read_limited
from engine.rules.source import SourceFile

__all__ = ["crd_check", "crd_file_errors"]

OFFLINE_ENTRY_POINTS = "c5c3_order_engine.offline"
"""The offline world's entry point group (``engine.cli`` finds ``engine test`` and ``engine render`` there)."""
CRD_CHECK = "crd-check"

_STEP = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")
_JSON_NAMES = {"JSONPath": "jsonPath"}
"""Field names the API server's causes spell as its Go types do, by the name they have in the YAML."""
_INTERNAL = (
    ("spec.validation", "spec.versions[0].schema"),
    ("spec.additionalPrinterColumns", "spec.versions[0].additionalPrinterColumns"),
    ("spec.subresources", "spec.versions[0].subresources"),
    ("spec.selectableFields", "spec.versions[0].selectableFields"),
    ("spec.conversion.webhookClientConfig", "spec.conversion.webhook.clientConfig"),
    ("spec.conversion.conversionReviewVersions", "spec.conversion.webhook.conversionReviewVersions"),
    ("status.storedVersions", "spec.versions"),
)
"""The API server's internal field names, by where the field is in a ``v1`` CRD file."""


@functools.cache
def crd_check() -> ModuleType | None:
    """The offline world's CRD check (``offline.cluster.crd_check``), or None where this install leaves it out."""
    found = entry_points(group=OFFLINE_ENTRY_POINTS, name=CRD_CHECK)
    try:
        loaded: ModuleType | None = next(iter(found)).load() if found else None
    except ImportError:  # the operator image's wheel leaves the offline world out; its entry points remain
        loaded = None
    return loaded


def crd_file_errors(file: Path) -> list[RuleError]:
    """Every refusal of every CRD in one YAML file (other documents are skipped); a file that does not
    parse is one error; one over the size limit is left to ``load_schemas``, which reports it."""
    try:
        docs = list(YAML(typ="rt").load_all(read_limited(file, MAX_CRD_FILE_BYTES).decode("utf-8")))
    except FileTooLarge:
        return []  # not read: ``load_schemas`` reports it, once
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Position(str(file), mark.line + 1, mark.column + 1) if mark else Position(str(file), 1, 1)
        return [RuleError(where, f"cannot read this CRD file: {getattr(exc, 'problem', None) or exc}")]
    check = crd_check()
    if check is None:
        raise LookupError(f"the CRD check needs the offline package (entry point {CRD_CHECK!r} of group "
                          f"{OFFLINE_ENTRY_POINTS})")
    errors = []
    for doc in docs:
        if not isinstance(doc, CommentedMap) or doc.get("kind") != "CustomResourceDefinition":
            continue
        refused = check.crd_refusal(doc)
        if refused is None:
            continue
        source, name = SourceFile(str(file), doc), str((doc.get("metadata") or {}).get("name") or "")
        prefix = f"the API server refuses CustomResourceDefinition {name!r}: "
        if refused.causes:
            for cause in refused.causes:
                errors.append(RuleError(source.locate(steps(file_field(cause.field))),
                                        f"{prefix}{cause.field}: {cause.message}"))
            continue
        decoded = check.decode_crd(doc)
        if decoded.type_error:
            errors.append(RuleError(source.locate(steps(decoded.type_error_path)), prefix + refused.message))
        for path in decoded.unknown:
            errors.append(RuleError(source.locate(steps(path)), f'{prefix}strict decoding error: unknown field'
                                                                f' "{path}"'))
    return errors


def file_field(field: str) -> str:
    """Where a cause's field is in a ``v1`` CRD file (``spec.validation...`` is the first version's schema)."""
    if field == "spec.version":
        return "spec.versions[0].name"
    for internal, written in _INTERNAL:
        if field == internal or field.startswith((f"{internal}.", f"{internal}[")):
            return written + field[len(internal):]
    return field


def steps(field: str) -> list[str | int]:
    """A field path (``spec.versions[0].schema.openAPIV3Schema.properties[spec].type``, or a decoder's
    ``...properties.spec.requried``) as the keys and indexes ``SourceFile.locate`` walks."""
    found: list[str | int] = []
    for bracketed, name in _STEP.findall(field):
        if name:
            found.append(_JSON_NAMES.get(name, name))
        else:
            found.append(int(bracketed) if bracketed.isdigit() else bracketed)
    return found
