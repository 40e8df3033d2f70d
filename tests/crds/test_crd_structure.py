"""Every CRD in deploy/crds is a well-formed structural schema an API server would accept."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import celpy
import jsonschema

Obj = dict[str, Any]

# What apiextensions.k8s.io/v1 allows in a structural schema node (OpenAPI v3 subset plus extensions).
ALLOWED_KEYS = {
    "description", "type", "format", "title", "default", "enum", "nullable",
    "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "multipleOf",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
    "maxProperties", "minProperties", "required", "items", "properties", "additionalProperties",
    "allOf", "oneOf", "anyOf", "not",
    "x-kubernetes-validations", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}


def nodes(schema: Obj, path: str = "") -> Iterator[tuple[str, Obj]]:
    """Every schema node with its dotted path, the root first."""
    yield path or "<root>", schema
    for name, child in schema.get("properties", {}).items():
        yield from nodes(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from nodes(schema["items"], f"{path}[*]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}.*")


def version_schemas(crd: Obj) -> list[tuple[str, Obj]]:
    return [(v["name"], v["schema"]["openAPIV3Schema"]) for v in crd["spec"]["versions"]]


def test_identity_is_consistent(crd: Obj) -> None:
    """The CRD's name is <plural>.<group>, and exactly one served version is the storage version."""
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    names = crd["spec"]["names"]
    assert crd["metadata"]["name"] == f"{names['plural']}.{crd['spec']['group']}"
    assert names["plural"] == names["kind"].lower() + "s"
    assert names["singular"] == names["kind"].lower()
    assert names["listKind"] == names["kind"] + "List"
    assert [v["name"] for v in crd["spec"]["versions"] if v["storage"]] != []
    assert len([v for v in crd["spec"]["versions"] if v["storage"]]) == 1
    assert all(v["served"] for v in crd["spec"]["versions"])


def test_every_node_has_a_type(crd: Obj) -> None:
    """Every schema node names one of the OpenAPI types, as a structural schema must."""
    for _, schema in version_schemas(crd):
        untyped = [
            path
            for path, node in nodes(schema)
            if node.get("type") not in TYPES
            and not node.get("x-kubernetes-int-or-string")
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ]
        assert untyped == []


def test_nodes_use_only_known_keywords(crd: Obj) -> None:
    """No node carries a keyword the API server refuses (such as $ref or a misspelling)."""
    for _, schema in version_schemas(crd):
        unknown = [(path, sorted(set(node) - ALLOWED_KEYS)) for path, node in nodes(schema) if set(node) - ALLOWED_KEYS]
        assert unknown == []


def test_shapes_are_structural(crd: Obj) -> None:
    """Arrays have items, objects do not mix properties with additionalProperties, required names exist."""
    for _, schema in version_schemas(crd):
        for path, node in nodes(schema):
            if node.get("type") == "array":
                assert isinstance(node.get("items"), dict), path
            assert not ("properties" in node and "additionalProperties" in node), path
            for name in node.get("required", []):
                assert name in node.get("properties", {}), f"{path}: required {name} is not a property"


def test_root_is_a_kubernetes_object(crd: Obj) -> None:
    """The root declares apiVersion, kind and a bare metadata object, and requires spec."""
    for _, schema in version_schemas(crd):
        props = schema["properties"]
        assert schema["type"] == "object"
        assert props["apiVersion"]["type"] == props["kind"]["type"] == "string"
        assert props["metadata"] == {"type": "object"}
        assert schema["required"] == ["spec"]
        assert {"spec", "status"} <= set(props)


def test_nothing_preserves_unknown_fields(crd: Obj) -> None:
    """No node keeps unknown fields, so the API server prunes everything the schema does not name."""
    for _, schema in version_schemas(crd):
        assert [path for path, node in nodes(schema) if node.get("x-kubernetes-preserve-unknown-fields")] == []


def test_defaults_validate_against_their_node(crd: Obj) -> None:
    """Every default is valid against the schema node that holds it, formats included."""
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for _, schema in version_schemas(crd):
        for path, node in nodes(schema):
            if "default" in node:
                validator = jsonschema.Draft202012Validator(node, format_checker=checker)
                errors = list(validator.iter_errors(node["default"]))
                assert errors == [], f"{path}: {[e.message for e in errors]}"


def test_defaults_sit_in_spec(crd: Obj) -> None:
    """Defaults sit in spec only: none under metadata (refused) or status (the operator's to write)."""
    for _, schema in version_schemas(crd):
        for path, node in nodes(schema):
            if "default" in node:
                assert path.startswith(".spec."), path


def test_list_map_keys_are_required(crd: Obj) -> None:
    """Each x-kubernetes-list-map-keys key is a required scalar of the item schema."""
    for _, schema in version_schemas(crd):
        for path, node in nodes(schema):
            if node.get("x-kubernetes-list-type") == "map":
                assert node["type"] == "array", path
                keys = node["x-kubernetes-list-map-keys"]
                assert keys, path
                item = node["items"]
                for key in keys:
                    assert key in item.get("required", []), f"{path}: key {key} is not required"
                    assert item["properties"][key]["type"] in {"string", "integer", "boolean"}, path
            else:
                assert "x-kubernetes-list-map-keys" not in node, path


def test_list_types_are_known(crd: Obj) -> None:
    """x-kubernetes-list-type is atomic, set or map, and sits on arrays."""
    for _, schema in version_schemas(crd):
        for path, node in nodes(schema):
            if "x-kubernetes-list-type" in node:
                assert node["type"] == "array", path
                assert node["x-kubernetes-list-type"] in {"atomic", "set", "map"}, path


def test_conditions_are_metav1_conditions(crd: Obj) -> None:
    """status.conditions is the standard metav1.Condition list, a map keyed by type."""
    for _, schema in version_schemas(crd):
        conditions = schema["properties"]["status"]["properties"]["conditions"]
        assert conditions["x-kubernetes-list-type"] == "map"
        assert conditions["x-kubernetes-list-map-keys"] == ["type"]
        item = conditions["items"]
        assert sorted(item["required"]) == ["lastTransitionTime", "message", "reason", "status", "type"]
        props = item["properties"]
        assert props["lastTransitionTime"] == {**props["lastTransitionTime"], "type": "string", "format": "date-time"}
        assert props["message"]["maxLength"] == 32768
        assert (props["observedGeneration"]["format"], props["observedGeneration"]["minimum"]) == ("int64", 0)
        assert (props["reason"]["minLength"], props["reason"]["maxLength"]) == (1, 1024)
        assert props["reason"]["pattern"] == "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
        assert props["status"]["enum"] == ["True", "False", "Unknown"]
        assert props["type"]["maxLength"] == 316
        assert props["type"]["pattern"] == (
            r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
            r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
        )


def test_patterns_compile(crd: Obj) -> None:
    """Every pattern is a valid regular expression."""
    for _, schema in version_schemas(crd):
        for _path, node in nodes(schema):
            if "pattern" in node:
                re.compile(node["pattern"])


def test_cel_rules_compile_and_carry_messages(crd: Obj) -> None:
    """Every x-kubernetes-validations rule parses as CEL and carries a non-empty message."""
    env = celpy.Environment()
    for _, schema in version_schemas(crd):
        for path, node in nodes(schema):
            for rule in node.get("x-kubernetes-validations", []):
                assert set(rule) <= {"rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf"}
                assert rule.get("message", "").strip(), f"{path}: {rule['rule']} has no message"
                env.compile(rule["rule"])


def test_defaults_pass_their_cel_rules(crd: Obj) -> None:
    """A defaulted value satisfies the non-transition CEL rules on its own node."""
    env = celpy.Environment()
    for _, schema in version_schemas(crd):
        for path, node in nodes(schema):
            if "default" not in node or node.get("type") == "object":
                continue
            for rule in node.get("x-kubernetes-validations", []):
                if "oldSelf" in rule["rule"]:
                    continue
                program = env.program(env.compile(rule["rule"]))
                assert program.evaluate({"self": celpy.json_to_cel(node["default"])}), f"{path}: {rule['rule']}"


def test_printer_columns_point_into_the_schema(crd: Obj) -> None:
    """Every printer column reads a field the schema declares (or metadata)."""
    for version in crd["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        declared = {path for path, _ in nodes(schema)}
        for column in version["additionalPrinterColumns"]:
            assert column["type"] in {"string", "integer", "number", "boolean", "date"}
            field = re.sub(r"\[\?\(.*?\)\]", "[*]", column["jsonPath"])
            assert field.startswith(".metadata.") or field in declared, column["jsonPath"]
