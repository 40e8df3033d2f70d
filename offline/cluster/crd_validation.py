"""A CustomResourceDefinition checked on create as the API server checks it (``ValidateCustomResourceDefinition``).

The API server reads a ``v1`` CRD into its internal form first: when every version has the same schema (the
same subresources, printer columns, selectable fields), that one moves up to ``spec.validation``
(``spec.subresources``, ...), and its causes are reported there, not under ``spec.versions[i]``. Then it
checks the names, scope, versions and storage, each version's schema (``crd_openapi``, ``structural``,
``crd_defaults``), subresources, printer columns, selectable fields, conversion, the stored versions, API
approval of protected groups and ``preserveUnknownFields``, in that order and with its field paths and words.
"""

from __future__ import annotations

import copy
import urllib.parse
from typing import Any

from engine.cluster.api import Cause
from offline.cluster.admission.fielderrors import go_json, go_quote
from offline.cluster.crd_defaults import defaults_causes
from offline.cluster.crd_names import (
    approval_causes,
    dns1035_errors,
    group_causes,
    metadata_causes,
    names_causes,
)
from offline.cluster.crd_openapi import openapi_causes
from offline.cluster.crd_paths import PathError, resolve
from offline.cluster.printer_columns import column_causes, simple_json_path_causes
from offline.cluster.structural import not_structural_reason, structural_causes

Obj = dict[str, Any]

_PER_VERSION = (("schema", "validation"), ("subresources", "subresources"),
                ("additionalPrinterColumns", "additionalPrinterColumns"), ("selectableFields", "selectableFields"))
_STATUS_ROOT_FIELDS = frozenset({"description", "type", "format", "title", "maximum", "exclusiveMaximum", "minimum",
                                 "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
                                 "uniqueItems", "multipleOf", "required", "items", "properties", "externalDocs",
                                 "example", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations"})
_STATUS_ROOT_NAMES = ("[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength"
                      " MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties"
                      " ExternalDocs Example XPreserveUnknownFields XValidations]")
MAX_SELECTABLE_FIELDS = 8


def crd_causes(crd: Obj) -> list[Cause]:
    """Every cause the API server gives for refusing to create this (decoded) CRD; [] when it is accepted."""
    spec = internal_spec(_dict(crd.get("spec")))
    names = spec["names"]
    metadata = _dict(crd.get("metadata"))
    causes = metadata_causes(metadata, _text(names.get("plural")), _text(spec.get("group")))
    causes += _spec_causes(spec)
    causes += _stored_versions_causes(spec["versions"])
    causes += approval_causes(_text(spec.get("group")), metadata.get("annotations") or {})
    if spec.get("preserveUnknownFields") is True:
        causes.append(Cause("spec.preserveUnknownFields", "Invalid value: true: cannot set to true, set"
                            " x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
    return causes


def internal_spec(spec: Obj) -> Obj:
    """The spec as the API server holds it: defaulted names, and per-version fields that are the same in every
    version moved up (``schema`` to ``validation``)."""
    out = copy.deepcopy(spec)
    names = out["names"] = dict(out.get("names") or {}) if isinstance(out.get("names"), dict) else {}
    kind = _text(names.get("kind"))
    if not names.get("singular"):
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = f"{kind}List"
    versions = [dict(v) for v in out.get("versions") or [] if isinstance(v, dict)]
    out["versionsNull"] = out.get("versions") is None
    out["versions"] = versions
    if out.get("conversion") is None:
        out["conversion"] = {"strategy": "None"}
    if versions:
        out["version"] = _text(versions[0].get("name"))
        for field, top in _PER_VERSION:
            first = versions[0].get(field)
            if all(_same(v.get(field), first) for v in versions):
                if not _empty(first):
                    out[top] = first
                for version in versions:
                    version.pop(field, None)
    return out


def _spec_causes(spec: Obj) -> list[Cause]:
    causes = group_causes(_text(spec.get("group")))
    scope = _text(spec.get("scope"))
    if not scope:
        causes.append(Cause("spec.scope", "Required value", "FieldValueRequired"))
    elif scope not in ("Cluster", "Namespaced"):
        causes.append(Cause("spec.scope", f'Unsupported value: {go_quote(scope)}: supported values: "Cluster",'
                            ' "Namespaced"', "FieldValueNotSupported"))
    versions: list[Obj] = spec["versions"]
    if not _has_schema(spec.get("validation")):
        for i, version in enumerate(versions):
            if not _has_schema(version.get("schema")):
                causes.append(Cause(f"spec.versions[{i}].schema.openAPIV3Schema", "Required value",
                                    "FieldValueRequired"))
    if spec.get("preserveUnknownFields") is True and _has_defaults(spec):
        causes.append(Cause("spec.preserveUnknownFields", "Invalid value: true: must be false in order to use"
                            " defaults in the schema"))
    seen: set[str] = set()
    unique = True
    any_status = _status_enabled(spec.get("subresources")) or any(
        _status_enabled(v.get("subresources")) for v in versions)
    for i, version in enumerate(versions):
        name = _text(version.get("name"))
        unique = unique and name not in seen
        seen.add(name)
        path = f"spec.versions[{i}]"
        causes += [Cause(f"{path}.name", f"Invalid value: {go_quote(name)}: {','.join(errors)}")
                   for errors in [dns1035_errors(name)] if errors]
        subresources = version.get("subresources") if _per_version(versions, "subresources") else \
            spec.get("subresources")
        causes += _version_causes(version, path, _status_enabled(subresources))
    shown = "null" if spec.get("versionsNull") else _versions_value(versions)
    if not unique:
        causes.append(Cause("spec.versions", f"Invalid value: {shown}: must contain unique version names"))
    if sum(1 for v in versions if v.get("storage") is True) != 1:
        causes.append(Cause("spec.versions", f"Invalid value: {shown}: must have exactly one version marked as"
                            " storage version"))
    first = _text(spec.get("version"))
    if first:
        causes += [Cause("spec.version", f"Invalid value: {go_quote(first)}: {','.join(errors)}")
                   for errors in [dns1035_errors(first)] if errors]
    names = spec["names"]
    for field in ("plural", "singular", "kind", "listKind"):
        if not _text(names.get(field)):
            causes.append(Cause(f"spec.names.{field}", "Required value", "FieldValueRequired"))
    causes += names_causes(names)
    causes += _schema_causes(spec.get("validation"), "spec.validation", any_status)
    causes += _subresources_causes(spec.get("subresources"), "spec.subresources")
    causes += column_causes(spec.get("additionalPrinterColumns"), "spec.additionalPrinterColumns")
    if spec.get("selectableFields"):
        causes += _selectable_causes(spec["selectableFields"], spec.get("validation"), "spec.selectableFields")
    causes += _conversion_causes(spec)
    return causes


def _version_causes(version: Obj, path: str, status_enabled: bool) -> list[Cause]:
    causes: list[Cause] = []
    warning = version.get("deprecationWarning")
    if isinstance(warning, str):
        for problem in _deprecation_problems(version.get("deprecated") is True, warning):
            causes.append(Cause(f"{path}.deprecationWarning", f"Invalid value: {go_quote(warning)}: {problem}"))
    causes += _schema_causes(version.get("schema"), f"{path}.schema", status_enabled)
    causes += _subresources_causes(version.get("subresources"), f"{path}.subresources")
    causes += column_causes(version.get("additionalPrinterColumns"), f"{path}.additionalPrinterColumns")
    if version.get("selectableFields"):
        causes += _selectable_causes(version["selectableFields"], version.get("schema"), f"{path}.selectableFields")
    return causes


def _deprecation_problems(deprecated: bool, warning: str) -> list[str]:
    if not deprecated:
        return ["can only be set for deprecated versions"]
    problems = []
    if len(warning.encode()) > 256:
        problems.append("must be <= 256 characters long")
    if not warning:
        problems.append("must not be an empty string")
    for index, char in enumerate(warning):
        if not char.isprintable():
            problems.append("must only contain printable UTF-8 characters; non-printable character found at index"
                            f" {len(warning[:index].encode())}")
            break
    return problems


def _schema_causes(validation: Any, path: str, status_enabled: bool) -> list[Cause]:
    """``validateCustomResourceDefinitionValidation`` for one schema (a version's, or the common one)."""
    if not isinstance(validation, dict) or not isinstance(validation.get("openAPIV3Schema"), dict):
        return []
    schema: Obj = validation["openAPIV3Schema"]
    at = f"{path}.openAPIV3Schema"
    causes: list[Cause] = []
    if status_enabled:
        causes += _status_root_causes(schema, at)
    if schema.get("nullable") is True:
        causes.append(Cause(f"{at}.nullable", "Forbidden: nullable cannot be true at the root",
                            "FieldValueForbidden"))
    unreadable = not_structural_reason(schema)
    compile_rules = False
    if unreadable is None:
        structural = structural_causes(schema, at)
        if structural:
            causes += structural
        else:
            found = defaults_causes(schema, at)
            causes += found
            compile_rules = not found
    openapi = openapi_causes(schema, at, compile_rules=compile_rules)
    causes += openapi
    if unreadable is not None and not causes:
        causes.append(Cause(at, f'Invalid value: "": {unreadable}'))
    return causes


_GO_FIELDS = ("id", "$schema", "$ref", "description", "type", "nullable", "format", "title", "default", "maximum",
              "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems",
              "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties", "minProperties", "required", "items",
              "allOf", "oneOf", "anyOf", "not", "properties", "additionalProperties", "patternProperties",
              "dependencies", "additionalItems", "definitions", "externalDocs", "example",
              "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string",
              "x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type",
              "x-kubernetes-validations")
"""JSONSchemaProps's fields in the order of its Go struct, which the status-subresource check walks."""
_GO_VALUES = frozenset({"id", "$schema", "description", "type", "format", "title", "pattern", "nullable",
                        "exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "x-kubernetes-embedded-resource",
                        "x-kubernetes-int-or-string"})
"""Fields held by value (a string or bool: set when not empty or false); the others are pointers, slices and maps
(set when present at all)."""


def _status_root_causes(schema: Obj, at: str) -> list[Cause]:
    """With a status subresource the root may hold only the keywords that keep their meaning once status is taken
    out of it: the first other one set (in the Go struct's order) refuses the schema; a type must be object."""
    for key in _GO_FIELDS:
        value = schema.get(key)
        if value is None or (key in _GO_VALUES and value in ("", False)):
            continue
        if key == "type":
            if value != "object":
                return [Cause(f"{at}.type", f"Invalid value: {go_quote(str(value))}: only \"object\" is allowed as the"
                                            " type at the root of the schema if the status subresource is enabled")]
            continue
        if key not in _STATUS_ROOT_FIELDS:
            return [Cause(at, f"Invalid value: {{...}}: only {_STATUS_ROOT_NAMES} fields are allowed at the root of"
                              " the schema if the status subresource is enabled")]
    return []


def _subresources_causes(subresources: Any, path: str) -> list[Cause]:
    scale = subresources.get("scale") if isinstance(subresources, dict) else None
    if not isinstance(scale, dict):
        return []
    causes: list[Cause] = []
    for key, under in (("specReplicasPath", ".spec."), ("statusReplicasPath", ".status.")):
        value, at = _text(scale.get(key)), f"{path}.scale.{key}"
        if not value:
            causes.append(Cause(at, "Required value", "FieldValueRequired"))
            continue
        found = simple_json_path_causes(value, at)
        if not found and not value.startswith(under):
            found = [Cause(at, f"Invalid value: {go_quote(value)}: should be a json path under {under.rstrip('.')}")]
        causes += found
    selector = _text(scale.get("labelSelectorPath"))
    if selector:
        at = f"{path}.scale.labelSelectorPath"
        found = simple_json_path_causes(selector, at)
        if not found and not selector.startswith((".spec.", ".status.")):
            found = [Cause(at, f"Invalid value: {go_quote(selector)}: should be a json path under either .spec or"
                               " .status")]
        causes += found
    return causes


def _selectable_causes(fields: Any, validation: Any, path: str) -> list[Cause]:
    schema = validation.get("openAPIV3Schema") if isinstance(validation, dict) else None
    if not isinstance(schema, dict):
        return [Cause(path, 'Invalid value: "": may only be set when `version.schema.openAPIV3Schema` is not'
                            " included")]
    causes: list[Cause] = []
    unique: list[str] = []
    for i, selectable in enumerate(fields if isinstance(fields, list) else []):
        json_path = _text((selectable or {}).get("jsonPath"))
        at = f"{path}[{i}].jsonPath"
        if not json_path:
            causes.append(Cause(at, "Required value", "FieldValueRequired"))
            continue
        try:
            steps, found = resolve(json_path, schema, array_notation=False)
        except PathError as error:
            causes.append(Cause(at, f"Invalid value: {go_quote(json_path)}: is an invalid path: {error}"))
            continue
        if steps and steps[0] == "metadata":
            causes.append(Cause(at, f"Invalid value: {go_quote(json_path)}: must not point to fields in metadata"))
        if not isinstance(found, dict) or found.get("type") not in ("string", "boolean", "integer"):
            causes.append(Cause(at, f"Invalid value: {go_quote(json_path)}: must point to a field of type string,"
                                " boolean or integer. Enum string fields and strings with formats are allowed."))
        key = ".".join(steps)
        if key in unique:
            causes.append(Cause(at, f"Duplicate value: {go_quote(json_path)}", "FieldValueDuplicate"))
        else:
            unique.append(key)
    if len(unique) > MAX_SELECTABLE_FIELDS:
        causes.append(Cause(path, f"Too many: {len(unique)}: must have at most {MAX_SELECTABLE_FIELDS} items",
                            "FieldValueTooMany"))
    return causes


def _conversion_causes(spec: Obj) -> list[Cause]:
    conversion = _dict(spec.get("conversion"))
    strategy = _text(conversion.get("strategy"))
    path = "spec.conversion"
    causes: list[Cause] = []
    if strategy != "None" and spec.get("preserveUnknownFields") is True:
        causes.append(Cause(f"{path}.strategy", f"Invalid value: {go_quote(strategy)}: must be None if"
                            " spec.preserveUnknownFields is true"))
    if not strategy:
        causes.append(Cause(f"{path}.strategy", "Required value", "FieldValueRequired"))
    elif strategy not in ("None", "Webhook"):
        causes.append(Cause(f"{path}.strategy", f'Unsupported value: {go_quote(strategy)}: supported values: "None",'
                            ' "Webhook"', "FieldValueNotSupported"))
    webhook = _dict(conversion.get("webhook"))
    client = webhook.get("clientConfig") if isinstance(webhook.get("clientConfig"), dict) else None
    review = [v for v in webhook.get("conversionReviewVersions") or [] if isinstance(v, str)]
    if strategy == "Webhook":
        if client is None:
            causes.append(Cause(f"{path}.webhookClientConfig", "Required value: required when strategy is set to"
                                " Webhook", "FieldValueRequired"))
        else:
            causes += _client_config_causes(client, f"{path}.webhookClientConfig")
        causes += _review_versions_causes(review, f"{path}.conversionReviewVersions")
    else:
        if client is not None:
            causes.append(Cause(f"{path}.webhookClientConfig", "Forbidden: should not be set when strategy is not"
                                " set to Webhook", "FieldValueForbidden"))
        if review:
            causes.append(Cause(f"{path}.conversionReviewVersions", "Forbidden: should not be set when strategy is"
                                " not set to Webhook", "FieldValueForbidden"))
    return causes


def _client_config_causes(client: Obj, path: str) -> list[Cause]:
    url, service = client.get("url"), client.get("service")
    if (url is None) == (service is None):
        return [Cause(path, "Required value: exactly one of url or service is required", "FieldValueRequired")]
    if url is not None:
        return _url_causes(_text(url), f"{path}.url")
    service = service if isinstance(service, dict) else {}
    at = f"{path}.service"
    causes = [Cause(f"{at}.{key}", "Required value", "FieldValueRequired")
              for key in ("name", "namespace") if not _text(service.get(key))]
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        causes.append(Cause(f"{at}.port", f"Invalid value: {port}: port is not valid: must be between 1 and 65535,"
                            " inclusive"))
    return causes


def _url_causes(url: str, path: str) -> list[Cause]:
    form = "; desired format: https://host[/path]"
    parsed = urllib.parse.urlsplit(url)
    causes = []
    if parsed.scheme != "https":
        causes.append(Cause(path, f"Invalid value: {go_quote(parsed.scheme)}: 'https' is the only allowed URL"
                            f" scheme{form}"))
    if not parsed.netloc:
        causes.append(Cause(path, f'Invalid value: "": host must be specified{form}'))
    if parsed.username is not None:
        causes.append(Cause(path, f"Invalid value: {go_quote(parsed.netloc.rpartition('@')[0])}: user information is"
                            " not permitted in the URL"))
    if parsed.fragment:
        causes.append(Cause(path, f"Invalid value: {go_quote(parsed.fragment)}: fragments are not permitted in the"
                            " URL"))
    if parsed.query:
        causes.append(Cause(path, f"Invalid value: {go_quote(parsed.query)}: query parameters are not permitted in"
                            " the URL"))
    return causes


def _review_versions_causes(versions: list[str], path: str) -> list[Cause]:
    if not versions:
        return [Cause(path, "Required value", "FieldValueRequired")]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            causes.append(Cause(f"{path}[{i}]", f"Invalid value: {go_quote(version)}: duplicate version"))
            continue
        seen.add(version)
        causes += [Cause(f"{path}[{i}]", f"Invalid value: {go_quote(version)}: {error}")
                   for error in dns1035_errors(version)]
    if not set(versions) & {"v1", "v1beta1"}:
        causes.append(Cause(path, f"Invalid value: {go_json(versions)}: must include at least one of v1, v1beta1"))
    return causes


def _stored_versions_causes(versions: list[Obj]) -> list[Cause]:
    """On create the stored versions are the first storage version; every storage version must be stored."""
    stored = [_text(v.get("name")) for v in versions if v.get("storage") is True][:1]
    path = "status.storedVersions"
    if not stored:
        return [Cause(path, "Invalid value: null: must have at least one stored version")]
    return [Cause(path, f"Invalid value: {go_json(stored)}: must have the storage version {_text(v.get('name'))}")
            for v in versions if v.get("storage") is True and _text(v.get("name")) not in stored]


def _versions_value(versions: list[Obj]) -> str:
    """The API server prints spec.versions as its Go structs; an abbreviation of them here."""
    return go_json([{"Name": _text(v.get("name")), "Served": v.get("served") is True,
                     "Storage": v.get("storage") is True} for v in versions], ordered=True)


def _per_version(versions: list[Obj], field: str) -> bool:
    return any(v.get(field) is not None for v in versions)


def _status_enabled(subresources: Any) -> bool:
    return isinstance(subresources, dict) and subresources.get("status") is not None


def _has_schema(validation: Any) -> bool:
    return isinstance(validation, dict) and isinstance(validation.get("openAPIV3Schema"), dict)


def _has_defaults(spec: Obj) -> bool:
    schemas = [spec.get("validation")] + [v.get("schema") for v in spec["versions"]]
    return any(_any_default(_dict(s).get("openAPIV3Schema")) for s in schemas if _has_schema(s))


def _any_default(node: Any) -> bool:
    if isinstance(node, dict):
        return bool(node.get("default") is not None or any(_any_default(value) for value in node.values()))
    if isinstance(node, list):
        return any(_any_default(item) for item in node)
    return False


def _same(left: Any, right: Any) -> bool:
    """apimachinery's semantic equality: an empty list or map equals an absent one."""
    return bool(_normal(left) == _normal(right))


_MAPS = frozenset({"properties", "patternProperties", "definitions", "dependencies"})
"""Schema keywords whose value is a Go map: empty is absent; other objects (structs) are set even when empty."""


_JSON_VALUES = frozenset({"default", "example"})
"""Schema keywords holding any JSON (set when present, whatever the value; compared as they are)."""


def _normal(value: Any, map_keys: bool = False) -> Any:
    if isinstance(value, dict):
        return {key: item if key in _JSON_VALUES and not map_keys else
                _normal(item, map_keys=key in _MAPS and not map_keys) for key, item in value.items()
                if map_keys or key in _JSON_VALUES or not (item is None or item == [] or (key in _MAPS and item == {}))}
    if isinstance(value, list):
        return [_normal(item) for item in value]
    return value


def _empty(value: Any) -> bool:
    return value is None or value == [] or value == {}


def _set(value: Any) -> bool:
    return value is not None and value is not False and value != "" and value != [] and value != {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
