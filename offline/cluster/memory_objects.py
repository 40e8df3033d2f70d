"""The object rules of the memory cluster's writes: what the server owns, what a write takes over, what counts.

Kept apart from the store so the write path reads as the API server's steps (prepare, admit, commit) while
these say what each step does to an object's fields: server-owned metadata kept from the stored object,
status and managed fields taken over, what generation tracks, what a no-op write leaves unchanged, and the
error of an apply configuration its kind's schema cannot type.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from engine.cluster.api import ApiError, BadRequest, Obj, UnsupportedMediaType
from engine.cluster.patches import go_json_type, json_copy, json_patch, merge_patch
from offline.cluster import builtin
from offline.cluster.served_kinds import ServedKind
from offline.cluster.strategic import strategic_merge

STRATEGIC_UNSUPPORTED = ("the body of the request was in an unknown format - accepted media types include: "
                         "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
"""What the API server answers a strategic merge patch of a custom resource (415)."""
SYSTEM_META = (
    "uid", "creationTimestamp", "generation", "resourceVersion",
    "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields",
)
"""Metadata the server owns: a create or update body cannot set it."""


class TypedPatchError(ApiError):
    """The API server's answer to an apply naming a field its kind's schema does not declare: a 500 with no
    reason, whatever the field validation asked for (the apply configuration cannot be typed)."""

    code, reason = 500, ""

    def status(self) -> Obj:
        doc = super().status()
        doc.pop("reason", None)
        return doc


def typed_patch_error(obj: Obj, api_version: str, kind: str, problems: Collection[str]) -> TypedPatchError | None:
    """The error of an apply configuration with ``problems`` (``MemoryCluster.apply_problems``); None when it has
    none. The object is named by the namespace and name its body gives; several problems are listed as
    structured-merge-diff lists them."""
    found = list(problems)
    if not found:
        return None
    meta: Obj = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    named = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
    said = found[0] if len(found) == 1 else "\n".join(["errors:", *(f"  {line}" for line in found)])
    group_version = api_version if "/" in api_version else f"/{api_version}"  # the core group: "/v1"
    return TypedPatchError(f"failed to create typed patch object ({named}; {group_version}, Kind={kind}): {said}")


def metadata_repeats(k: ServedKind) -> int:
    """How often an update's metadata error is among the causes: twice for a custom resource, whose strategy checks
    the metadata again (a label error even three times), once for a built-in kind. The message names it once."""
    return 2 if k.custom else 1


def spec(obj: Obj, k: ServedKind) -> Obj:
    """What generation tracks: everything but metadata, and but status where a subresource owns it
    (as the API server's custom resource strategy: without one, a status change is a change)."""
    skip = {"metadata", "apiVersion", "kind"} | ({"status"} if k.info.status_subresource else set())
    return {key: v for key, v in obj.items() if key not in skip}


def timeless(obj: Obj) -> list[Obj]:
    """The object's managedFields without their times."""
    return [{k: v for k, v in entry.items() if k != "time"} for entry in obj["metadata"].get("managedFields") or ()]


def content(obj: Obj) -> Obj:
    """What a no-op write leaves unchanged: all but resourceVersion and managedFields."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in ("resourceVersion", "managedFields")}
    return {**{k: v for k, v in obj.items() if k not in ("apiVersion", "metadata")}, "metadata": meta}


def keep_server_fields(new: Obj, old: Obj, *, keep_managed: bool = True) -> None:
    """Metadata the server owns comes from the stored object, whatever the body says."""
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        meta = new["metadata"] = {}
    meta.pop("selfLink", None)
    for key in SYSTEM_META:
        if key == "managedFields" and not keep_managed:
            continue
        if key in old["metadata"]:
            meta[key] = json_copy(old["metadata"][key])
        else:
            meta.pop(key, None)
    meta["name"] = old["metadata"]["name"]
    if "namespace" in old["metadata"]:
        meta["namespace"] = old["metadata"]["namespace"]


def take_status(target: Obj, source: Obj) -> None:
    if "status" in source:
        target["status"] = json_copy(source["status"])
    else:
        target.pop("status", None)


def given_managed_fields(body: Obj) -> list[Any] | None:
    """The managedFields a PUT's body sets, as the API server reads them: None keeps the stored ones
    (absent, null, or not decodable: a client that does not know the field must not wipe it), an
    empty list or one empty entry resets them, any other list of entries replaces them."""
    rows = (body.get("metadata") or {}).get("managedFields") if isinstance(body.get("metadata"), dict) else None
    if not isinstance(rows, list):
        return None
    if rows == [] or rows == [{}]:
        return []
    if all(isinstance(row, dict) and isinstance(row.get("manager", ""), str)
           and row.get("operation") in ("Apply", "Update") and row.get("fieldsType", "FieldsV1") == "FieldsV1"
           for row in rows):
        return json_copy(rows)
    return None


def take_managed_fields(target: Obj, source: Obj) -> None:
    rows = (source.get("metadata") or {}).get("managedFields")
    if rows:
        target["metadata"]["managedFields"] = json_copy(rows)
    else:
        target["metadata"].pop("managedFields", None)


def patched_body(k: ServedKind, old: Obj, patch: Any, patch_type: str) -> Any:
    """The stored object with a patch of ``patch_type`` (merge, strategic, json) applied, as the API server
    applies it; a strategic merge patch only for built-in kinds (415 for a custom resource)."""
    if patch_type == "merge":
        if not isinstance(patch, dict):
            raise BadRequest("error decoding patch: json: cannot unmarshal "
                             f"{go_json_type(patch)} into Go value of type map[string]interface {{}}")
        return merge_patch(old, patch)
    if patch_type == "strategic":
        schema = builtin.kind_schema(k.info.api_version, k.info.kind)
        if schema is None:
            raise UnsupportedMediaType(STRATEGIC_UNSUPPORTED)
        return strategic_merge(old, patch, schema)
    if patch_type == "json":
        return json_patch(old, patch)
    raise BadRequest(f"unsupported patch type {patch_type!r}")
