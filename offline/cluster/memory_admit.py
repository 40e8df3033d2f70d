"""The memory cluster's admission of a write: its preconditions (uid, resourceVersion), the API server's checks
of metadata, finalizers and CRDs, then the object's own (a CRD version's schema and CEL rules, or a built-in
kind's Go type).

Functions of the object and its served kind only, with no store: the write path calls them between preparing an
object and committing it, as the API server's handler runs its strategy and admission between decoding and
storing.
"""

from __future__ import annotations

from engine.cluster.api import Cause, Conflict, Obj
from engine.cluster.selectors import (
    SUBDOMAIN_MSG,
    is_subdomain,
    label_key_errors,
    label_value_errors,
    namespace_name_errors,
)
from offline.cluster import builtin
from offline.cluster.admission.fielderrors import go_value
from offline.cluster.crd_check import CRD_INFO, compile_crd, crd_decoding_error
from offline.cluster.crd_decode import drop_unknown
from offline.cluster.limits import int64_or_float
from offline.cluster.memory_objects import metadata_repeats
from offline.cluster.served_kinds import CRD_KIND, ServedKind, conflict, error_details, invalid, unconditional

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server puts on every Namespace: its name."""


def admit(k: ServedKind, new: Obj, old: Obj | None, *, now: str, status: bool = False, applied: bool = False) -> Obj:
    """Built-in checks, then the CRD's schema and CEL rules for the object's version."""
    if k.info.kind == CRD_KIND and k.info.group == "apiextensions.k8s.io":
        admitted = admit_crd(new, old, now=now)  # its own checks name its name's problems, with all the others
        validate_metadata(k, admitted, updating=old is not None)
        return admitted
    validate_metadata(k, new, updating=old is not None)
    if k.admission is not None:
        return k.admission.admit(int64_or_float(new), old, status=status, applied=applied)
    return builtin.admit(k.info.api_version, k.info.kind, new)

def admit_crd(crd: Obj, old: Obj | None, *, now: str) -> Obj:
    """Validate a CRD by compiling it (fields its type does not have are dropped, as the API server drops
    them), and fill the status the API server's controllers write."""
    refused = crd_decoding_error(crd, strict=False)
    if refused is not None:
        raise refused
    crd = drop_unknown(crd)
    if old is not None:
        check_crd_immutables(crd, old)
    compile_crd(crd)
    spec = crd["spec"]
    names = dict(spec["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", names["kind"] + "List")
    storage = [v["name"] for v in spec["versions"] if v.get("storage")]
    stored = list(((old or {}).get("status") or {}).get("storedVersions") or [])
    conditions = ((old or {}).get("status") or {}).get("conditions") or [
        {"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": now}
        for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                        ("Established", "InitialNamesAccepted", "the initial names have been accepted"))
    ]
    crd["status"] = {
        "acceptedNames": names,
        "conditions": conditions,
        "storedVersions": stored + [v for v in storage if v not in stored],
    }
    return crd

def check_crd_immutables(crd: Obj, old: Obj) -> None:
    """A CRD's group and plural never change, its scope and kind not once it is established (always, here)."""
    new_spec, old_spec = crd.get("spec") or {}, old.get("spec") or {}
    causes = []
    for path, new, before in (
        ("spec.scope", new_spec.get("scope"), old_spec.get("scope")),
        ("spec.names.kind", (new_spec.get("names") or {}).get("kind"), (old_spec.get("names") or {}).get("kind")),
        ("spec.group", new_spec.get("group"), old_spec.get("group")),
        ("spec.names.plural", (new_spec.get("names") or {}).get("plural"),
         (old_spec.get("names") or {}).get("plural")),
    ):
        if new != before:
            causes.append(Cause(path, f"Invalid value: {go_value(new)}: field is immutable"))
    if causes:
        raise invalid(CRD_INFO, str(crd["metadata"].get("name") or ""), causes)

def validate_metadata(k: ServedKind, obj: Obj, *, updating: bool) -> None:
    """The API server's checks of an object's name and labels (a Namespace gets its name label)."""
    meta = obj["metadata"]
    name = str(meta.get("name") or "")
    causes: list[Cause] = []
    if k.is_namespace:
        if isinstance(meta.get("labels"), dict) or meta.get("labels") is None:
            meta["labels"] = {**(meta.get("labels") or {}), NAMESPACE_NAME_LABEL: name}
        causes += [Cause("metadata.name", f'Invalid value: "{name}": {problem}')
                   for problem in namespace_name_errors(name)]
    elif not is_subdomain(name):
        causes.append(Cause("metadata.name", f'Invalid value: "{name}": {SUBDOMAIN_MSG}'))
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        causes.append(Cause("metadata.labels", "Invalid value: must be a map of strings", "FieldValueTypeInvalid"))
        labels = {}
    for key, value in labels.items():
        for problem in label_key_errors(str(key), unit="bytes"):
            causes.append(Cause("metadata.labels", f'Invalid value: "{key}": {problem}'))
        if not isinstance(value, str):
            causes.append(Cause(f"metadata.labels.{key}", "Invalid value: must be a string",
                                "FieldValueTypeInvalid"))
            continue
        for problem in label_value_errors(value, unit="bytes"):
            causes.append(Cause("metadata.labels", f'Invalid value: "{value}": {problem}'))
    if causes and updating and k.custom:
        causes = [c for c in causes for _ in range(3)]  # the custom resource strategy reports each three times
    if causes:
        raise invalid(k.info, name, causes)

def check_finalizers(k: ServedKind, old: Obj, new: Obj) -> None:
    """A deleting object accepts no new finalizer, as the API server enforces."""
    if not old["metadata"].get("deletionTimestamp"):
        return
    before = set(old["metadata"].get("finalizers") or [])
    added = [f for f in new["metadata"].get("finalizers") or [] if f not in before]
    if added:
        found = ", ".join(f'"{f}"' for f in added)
        cause = Cause("metadata.finalizers", "Forbidden: no new finalizers can be added if the object is being"
                      f" deleted, found new finalizers []string{{{found}}}", "FieldValueForbidden")
        raise invalid(k.info, old["metadata"]["name"], [cause] * metadata_repeats(k))


def check_update_preconditions(k: ServedKind, body: Obj, old: Obj) -> None:
    """An update's preconditions: the body's uid, if any, is the stored one's; its resourceVersion, if any
    (and it must give one where the kind allows no unconditional update), is the stored one."""
    meta: Obj = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
    uid, stored_uid = meta.get("uid"), old["metadata"].get("uid")
    name = old["metadata"]["name"]
    if uid and uid != stored_uid:
        namespace = old["metadata"].get("namespace")
        key = "/".join(["/registry", *([k.info.group] if k.custom or k.info.kind == CRD_KIND else []),
                        k.info.plural, *([namespace] if namespace else []), name])
        raise Conflict(f'Operation cannot be fulfilled on {k.info.resource} "{name}": StorageError: invalid'
                       f" object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition"
                       f" failed: UID in precondition: {uid}, UID in object meta: {stored_uid}",
                       details=error_details(k, name))
    if k.needs_resource_version and not meta.get("resourceVersion"):
        raise unconditional(k, name)
    check_precondition(k, body, old)

def check_precondition(k: ServedKind, body: Obj, old: Obj) -> None:
    """A resourceVersion in the body must be the stored one (optimistic concurrency)."""
    meta: Obj = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
    given = meta.get("resourceVersion")
    if given and str(given) != old["metadata"]["resourceVersion"]:
        raise conflict(k, old["metadata"]["name"])
