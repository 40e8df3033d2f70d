"""The API server's checks of a CRD's names: ``metadata.name`` (and its labels), ``spec.group``, ``spec.names``.

``plural``, ``singular``, ``shortNames`` and ``categories`` must be lowercase DNS-1035 labels; ``kind``
and ``listKind`` may have mixed case but must otherwise be one, and may not be the same; the group is a
DNS-1123 subdomain with at least one dot; the CRD is named ``<plural>.<group>``; a group under
``k8s.io`` or ``kubernetes.io`` needs the API approval annotation. Wording and field paths follow
apiextensions-apiserver's validation (``ValidateCustomResourceDefinitionNames``, ``validateAPIApproval``).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from engine.cluster.api import Cause
from engine.cluster.selectors import SUBDOMAIN_MSG, label_key_errors, label_value_errors
from offline.cluster.admission.fielderrors import go_quote as quoted

_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic"
                " character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for"
                " validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
APPROVAL = "api-approved.kubernetes.io"
_ENHANCEMENT = "see https://github.com/kubernetes/enhancements/pull/1111"


def dns1035_errors(value: str) -> list[str]:
    """What is wrong with a DNS-1035 label, as the API server words it; [] when valid."""
    errors = ["must be no more than 63 characters"] if len(value) > 63 else []
    if _DNS1035.fullmatch(value) is None:
        errors.append(_DNS1035_MSG)
    return errors


def subdomain_errors(value: str) -> list[str]:
    """What is wrong with a DNS-1123 subdomain (object names, the group), as the API server words it."""
    errors = ["must be no more than 253 characters"] if len(value) > 253 else []
    if _SUBDOMAIN.fullmatch(value) is None:
        errors.append(SUBDOMAIN_MSG)
    return errors


def metadata_causes(metadata: dict[str, Any], plural: str, group: str) -> list[Cause]:
    """The object-meta name checks of a CRD: a DNS-1123 subdomain, and ``<plural>.<group>``."""
    required = f"{plural}.{group}"
    name, generate = _text(metadata.get("name")), _text(metadata.get("generateName"))
    causes: list[Cause] = []
    if not name and not generate:
        return [Cause("metadata.name", "Required value: name or generateName is required", "FieldValueRequired")]
    if generate:
        masked = generate[:-1] if len(generate) > 1 and generate.endswith("-") else generate
        causes += [Cause("metadata.generateName", f"Invalid value: {quoted(generate)}: {problem}")
                   for problem in [*subdomain_errors(masked), *_must_be(generate, required)]]
        name = name or generate + "xxxxx"
    causes += [Cause("metadata.name", f"Invalid value: {quoted(name)}: {problem}")
               for problem in [*subdomain_errors(name), *_must_be(name, required)]]
    labels = metadata.get("labels")
    for key, value in (labels.items() if isinstance(labels, dict) else ()):
        causes += [Cause("metadata.labels", f"Invalid value: {quoted(str(key))}: {problem}")
                   for problem in label_key_errors(str(key))]
        causes += [Cause("metadata.labels", f"Invalid value: {quoted(str(value))}: {problem}")
                   for problem in label_value_errors(str(value))]
    return causes


def _must_be(name: str, required: str) -> list[str]:
    return [] if name == required else ['must be spec.names.plural+"."+spec.group']


def group_causes(group: str) -> list[Cause]:
    """``spec.group``: required, a DNS-1123 subdomain, with at least one dot."""
    if not group:
        return [Cause("spec.group", "Required value", "FieldValueRequired")]
    errors = subdomain_errors(group)
    if errors:
        return [Cause("spec.group", f"Invalid value: {quoted(group)}: {','.join(errors)}")]
    if "." not in group:
        return [Cause("spec.group", f"Invalid value: {quoted(group)}: should be a domain with at least one dot")]
    return []


def names_causes(names: dict[str, Any], path: str = "spec.names") -> list[Cause]:
    """Every refused name of a CRD's ``spec.names`` (empty when all are valid); empty names are the
    caller's to require."""
    causes: list[Cause] = []

    def check(field: str, value: Any, mixed_case: bool = False, empty_ok: bool = True) -> None:
        if not isinstance(value, str) or (not value and empty_ok):
            return
        errors = dns1035_errors(value.lower() if mixed_case else value)
        if errors:
            detail = ",".join(errors)
            if mixed_case:
                detail = f"may have mixed case, but should otherwise match: {detail}"
            causes.append(Cause(f"{path}.{field}", f"Invalid value: {quoted(value)}: {detail}"))

    check("plural", names.get("plural"))
    check("singular", names.get("singular"))
    check("kind", names.get("kind"), mixed_case=True)
    check("listKind", names.get("listKind"), mixed_case=True)
    for i, short in enumerate(_strings(names.get("shortNames"))):
        check(f"shortNames[{i}]", short, empty_ok=False)
    kind, list_kind = names.get("kind"), names.get("listKind")
    if kind and kind == list_kind:
        causes.append(Cause(f"{path}.listKind", f"Invalid value: {quoted(str(list_kind))}: kind and listKind may not"
                            " be the same"))
    for i, category in enumerate(_strings(names.get("categories"))):
        check(f"categories[{i}]", category, empty_ok=False)
    return causes


def approval_causes(group: str, annotations: dict[str, Any]) -> list[Cause]:
    """A group under k8s.io or kubernetes.io needs ``api-approved.kubernetes.io``: a URL, or a reason
    starting with "unapproved"."""
    protected = any(group == root or group.endswith(f".{root}") for root in ("k8s.io", "kubernetes.io"))
    if not protected:
        return []
    value = _text(annotations.get(APPROVAL))
    path = f"metadata.annotations[{APPROVAL}]"
    if not value:
        return [Cause(path, f'Required value: protected groups must have approval annotation "{APPROVAL}",'
                            f" {_ENHANCEMENT}", "FieldValueRequired")]
    if value.startswith("unapproved") or _is_url(value):
        return []
    return [Cause(path, f'Invalid value: {quoted(value)}: protected groups must have approval annotation "{APPROVAL}"'
                        f' with either a URL or a reason starting with "unapproved", {_ENHANCEMENT}')]


def _is_url(value: str) -> bool:
    """Go's url.ParseRequestURI with a scheme and a host."""
    parsed = urllib.parse.urlsplit(value)
    return bool(parsed.scheme and parsed.netloc) and " " not in value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
