"""Whether a real API server would install a CRD, and the kinds it serves when it does.

``engine lint`` (a rule set's ``--crds``) and the memory cluster both ask this module, so a CRD that lint passes
installs in the memory cluster, and one a real server refuses is refused by both with the server's words. The
checks themselves live in ``crd_decode`` (decoding), ``crd_validation`` (the CRD's own validation) and
``admission`` (the schemas, CEL rules and defaults its objects meet).
"""

from __future__ import annotations

import builtins
import functools
import json
from typing import Any

from engine.cluster.api import ApiError, BadRequest, Invalid, Obj, PrinterColumn, ResourceInfo
from offline.cluster import admission
from offline.cluster.crd_decode import decode as decode_crd
from offline.cluster.crd_names import APPROVAL
from offline.cluster.crd_validation import crd_causes
from offline.cluster.served_kinds import BUILTIN_KINDS, CRD_KIND, ServedKind, invalid

CRD_INFO = BUILTIN_KINDS[-1]
"""The CustomResourceDefinition kind's own record (its errors name it)."""


def crd_refusal(crd: Obj) -> ApiError | None:
    """The error creating this CRD gets from a real API server through kubectl (``fieldValidation=Strict``): a
    BadRequest for a field of the wrong type or one the CRD type does not have, an Invalid with the causes of
    every check it fails; None when it installs."""
    refused = crd_decoding_error(crd, strict=True)
    if refused is not None:
        return refused
    try:
        compile_crd(crd)
    except Invalid as invalid_crd:
        return invalid_crd
    return None


def crd_decoding_error(crd: Obj, *, strict: bool) -> BadRequest | None:
    """The BadRequest for a CRD document the API server cannot decode (a field of the wrong type), or, when
    ``strict``, that has fields its type does not have."""
    decoded = decode_crd(crd)
    prefix = f"{CRD_KIND} in version \"v1\" cannot be handled as a {CRD_KIND}: "
    if decoded.type_error:
        return BadRequest(prefix + decoded.type_error)
    if strict and decoded.unknown:
        found = ", ".join(f'unknown field "{path}"' for path in decoded.unknown)
        return BadRequest(f"{prefix}strict decoding error: {found}")
    return None


def compile_crd(crd: Obj) -> list[ServedKind]:
    """The kinds a CRD serves, one per served version; Invalid when the CRD is malformed.

    Compiling admission (CEL above all) costs milliseconds, and tests install the same CRDs in
    every cluster they build, so the result is memoized on the CRD's name and spec. The compiled
    kinds are immutable, so clusters can share them."""
    meta: Obj = crd["metadata"] if isinstance(crd.get("metadata"), dict) else {}
    annotations: Obj = meta["annotations"] if isinstance(meta.get("annotations"), dict) else {}
    key = json.dumps({"metadata": {"name": meta.get("name"), "generateName": meta.get("generateName"),
                                   "labels": meta.get("labels"),
                                   "annotations": {k: v for k, v in annotations.items() if k == APPROVAL}},
                      "spec": crd.get("spec")}, sort_keys=True)
    return builtins.list(_compile_crd_text(key))


@functools.lru_cache(maxsize=64)
def _compile_crd_text(key: str) -> tuple[ServedKind, ...]:
    parsed = json.loads(key)
    return tuple(_compile_crd_uncached({"metadata": {k: v for k, v in parsed["metadata"].items() if v},
                                        "spec": parsed["spec"]}))


def _compile_crd_uncached(crd: Obj) -> list[ServedKind]:
    spec: Obj = crd["spec"] if isinstance(crd.get("spec"), dict) else {}
    names: Obj = spec["names"] if isinstance(spec.get("names"), dict) else {}
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    versions: list[Any] = spec["versions"] if isinstance(spec.get("versions"), list) else []
    name = str((crd.get("metadata") or {}).get("name") or "")
    causes = crd_causes(crd)
    if causes:
        raise invalid(CRD_INFO, name, causes)
    admissions = admission.admissions_for(crd)
    kinds = []
    for version in versions:
        if not version.get("served"):
            continue
        api_version = f"{group}/{version['name']}"
        columns = tuple(
            PrinterColumn(
                name=str(c.get("name", "")), type=str(c.get("type", "")), json_path=str(c.get("jsonPath", "")),
                description=str(c.get("description", "")), priority=int(c.get("priority") or 0),
                format=str(c.get("format", "")),
            )
            for c in version.get("additionalPrinterColumns") or []
        )
        info = ResourceInfo(
            api_version, str(kind), str(plural), spec["scope"] == "Namespaced",
            "status" in (version.get("subresources") or {}), str(names.get("singular") or str(kind).lower()),
            tuple(names.get("shortNames") or ()), columns, tuple(names.get("categories") or ()),
        )
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        kinds.append(ServedKind(info, admissions.get(api_version), _list_keys(schema), custom=True))
    return kinds


def _list_keys(schema: Any) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Lists the schema makes granular for SSA: ``x-kubernetes-list-type`` map (by its keys) or set."""
    found: dict[tuple[str, ...], tuple[str, ...]] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        list_type = node.get("x-kubernetes-list-type")
        if list_type == "map":
            found[path] = tuple(node.get("x-kubernetes-list-map-keys") or ())
        elif list_type == "set":
            found[path] = ()
        walk(node.get("items"), path)
        for key, sub in (node.get("properties") or {}).items():
            walk(sub, (*path, key))

    walk(schema, ())
    return found
