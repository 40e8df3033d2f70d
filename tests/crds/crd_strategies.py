"""Hypothesis strategies for CustomResourceDefinitions: mostly plausible, often wrong in one or more ways.

Schemas are built from the keywords a CRD author writes (types, properties, items, additionalProperties, the
``x-kubernetes-*`` extensions, junctors, bounds, patterns, formats, defaults, CEL rules over the node's own
fields), each drawn now and then with a value the API server refuses (no type, an unknown list type, a default
of the wrong type, a rule naming a field that is not there, ...); names, scope, versions, subresources and
printer columns likewise. Rules keep to bounded, cheap expressions: cost estimation is a known difference.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

Obj = dict[str, Any]

NAMES = st.sampled_from(["a", "b", "size", "mode", "x-y", "namespace", "items", "metadata", "kind"])
LABEL = st.sampled_from(["widgets", "gadgets", "Widgets", "wid_gets", "w", "9w", "widget-s"])
KIND = st.sampled_from(["Widget", "widget", "Wid_get", "W", "WidgetList", ""])
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.sampled_from([1.5, 0.0, -2.25]),
                         st.sampled_from(["", "a", "fast", "Fast", "2026-01-01T00:00:00Z", "1s", "abc-123"]))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(NAMES.filter(lambda name: name != "metadata"), inner, max_size=3)),
    max_leaves=6)
"""Default values. Never with a ``metadata`` key: the API server reports one of a default's resource-meta problems
(bad metadata, a kind that is no string), whichever its map iteration meets first, so its answer is random."""


@st.composite
def schemas(draw: st.DrawFn, depth: int = 0, *, root: bool = False) -> Obj:
    """One schema node (and below it)."""
    kind = draw(st.sampled_from(["object", "object", "string", "integer", "number", "boolean", "array",
                                 "int-or-string", "preserve", "untyped", "bogus"] if depth < 3 else
                                ["string", "integer", "boolean", "untyped", "int-or-string"]))
    node: Obj = {}
    if kind in ("object", "string", "integer", "number", "boolean", "array"):
        node["type"] = kind
    elif kind == "int-or-string":
        node["x-kubernetes-int-or-string"] = True
        if draw(st.booleans()):
            node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    elif kind == "preserve":
        node["x-kubernetes-preserve-unknown-fields"] = True
        if draw(st.booleans()):
            node["type"] = "object"
    elif kind == "bogus":
        node["type"] = draw(st.sampled_from(["strin", "null", "Object", "map"]))
    if kind == "object":
        properties = draw(st.dictionaries(NAMES, schemas(depth + 1), max_size=3))
        if properties or draw(st.booleans()):
            node["properties"] = properties
        if draw(st.integers(0, 5)) == 0:
            node["additionalProperties"] = draw(st.one_of(st.booleans(), schemas(depth + 1)))
        if properties and draw(st.booleans()):
            node["required"] = draw(st.lists(st.sampled_from([*properties, "other"]), max_size=2, unique=True))
        if draw(st.integers(0, 6)) == 0:
            node["x-kubernetes-map-type"] = draw(st.sampled_from(["atomic", "granular", "merge"]))
        if draw(st.integers(0, 8)) == 0 and not root:
            node["x-kubernetes-embedded-resource"] = True
        if draw(st.integers(0, 6)) == 0:
            node["maxProperties"] = draw(st.integers(0, 4))
    if kind == "array":
        if draw(st.integers(0, 6)):
            node["items"] = draw(schemas(depth + 1))
        list_type = draw(st.sampled_from([None, None, "atomic", "set", "map", "bag"]))
        if list_type is not None:
            node["x-kubernetes-list-type"] = list_type
        if list_type == "map" or draw(st.integers(0, 8)) == 0:
            node["x-kubernetes-list-map-keys"] = draw(st.lists(NAMES, min_size=0, max_size=2))
        node["maxItems"] = draw(st.integers(0, 5))
        if draw(st.integers(0, 8)) == 0:
            node["uniqueItems"] = True
    if kind == "string":
        node["maxLength"] = draw(st.integers(0, 12))
        if draw(st.integers(0, 4)) == 0:
            node["pattern"] = draw(st.sampled_from(["^[a-z]+$", "([a-z", "^(?!x)", "a{2}", "\\\\d+"]))
        if draw(st.integers(0, 4)) == 0:
            node["enum"] = draw(st.lists(st.sampled_from(["a", "fast", "slow", 1]), min_size=1, max_size=3))
        if draw(st.integers(0, 4)) == 0:
            node["format"] = draw(st.sampled_from(["date-time", "duration", "byte", "int32", "colour"]))
    if kind in ("integer", "number"):
        if draw(st.booleans()):
            node["minimum"] = draw(st.integers(-2, 3))
        if draw(st.booleans()):
            node["maximum"] = draw(st.integers(2, 10))
        if draw(st.integers(0, 4)) == 0:
            node["multipleOf"] = 2
    if draw(st.integers(0, 7)) == 0:
        node["nullable"] = True
    if draw(st.integers(0, 4)) == 0:
        node["default"] = draw(JSON_VALUES)
    if draw(st.integers(0, 6)) == 0:
        junctor = draw(st.sampled_from(["anyOf", "allOf", "oneOf"]))
        node[junctor] = draw(st.lists(nested(node), min_size=1, max_size=2))
    if draw(st.integers(0, 10)) == 0:
        node["not"] = draw(nested(node))
    if draw(st.integers(0, 3)) == 0 and kind != "bogus":
        node["x-kubernetes-validations"] = draw(st.lists(rules(node), min_size=1, max_size=2))
    if draw(st.integers(0, 15)) == 0:
        node[draw(st.sampled_from(["$ref", "id", "patternProperties", "x-kubernetes-preserve-unknown-fields"]))] = \
            draw(st.sampled_from(["#/x", {"^a": {"type": "string"}}, False]))
    return node


@st.composite
def nested(draw: st.DrawFn, node: Obj) -> Obj:
    """A junctor's schema: value validations, now and then a keyword a junctor may not hold."""
    found: Obj = {}
    names = [*(node.get("properties") or {}), "other"]
    choice = draw(st.sampled_from(["required", "pattern", "maximum", "properties", "type", "description",
                                   "default", "items", "rule"]))
    if choice == "required":
        found["required"] = [draw(st.sampled_from(names))]
    elif choice == "pattern":
        found["pattern"] = draw(st.sampled_from(["^a", "(b"]))
    elif choice == "maximum":
        found["maximum"] = 5
    elif choice == "properties":
        found["properties"] = {draw(st.sampled_from(names)): {"maxLength": 3}}
    elif choice == "type":
        found["type"] = draw(st.sampled_from(["string", "integer"]))
    elif choice == "description":
        found["description"] = "x"
    elif choice == "default":
        found["default"] = "x"
    elif choice == "items":
        found["items"] = {"maxLength": 2}
    else:
        found["x-kubernetes-validations"] = [{"rule": "true"}]
    return found


@st.composite
def rules(draw: st.DrawFn, node: Obj) -> Obj:
    """One rule over the node: cheap expressions on its own fields (sometimes on ones it does not have)."""
    properties = node.get("properties") or {}
    fields = [name for name in properties if name.isidentifier() and name not in ("namespace",)] or ["nope"]
    name = draw(st.sampled_from([*fields, "nope"]))
    prop = properties.get(name) or {}
    kind = prop.get("type")
    if node.get("type") == "object" and not node.get("additionalProperties"):
        candidates = [f"has(self.{name})", f"!has(self.{name}) || self.{name} == self.{name}"]
        if kind == "integer":
            candidates += [f"!has(self.{name}) || self.{name} >= 0", f"self.{name} == 'x'", f"self.{name} + 1"]
        if kind == "string":
            candidates += [f"!has(self.{name}) || self.{name}.startsWith('a')", f"self.{name} > 1"]
        if kind == "boolean":
            candidates += [f"!has(self.{name}) || self.{name}", f"self.{name} && 1"]
    elif node.get("type") == "integer":
        candidates = ["self >= 0", "self == 1.0", "self < 1.5", "self == oldSelf", "self"]
    elif node.get("type") == "string":
        candidates = ["self.size() < 5", "self.matches('^a')", "self.matches('(a')", "self == oldSelf",
                      "self + 1 == 'a'"]
    else:
        candidates = ["true", "self == oldSelf", "size >", "1 == 1"]
    rule: Obj = {"rule": draw(st.sampled_from(candidates))}
    extra = draw(st.sampled_from(["", "message", "blank-message", "messageExpression", "reason", "bad-reason",
                                  "fieldPath", "bad-fieldPath", "optionalOldSelf"]))
    if extra == "message":
        rule["message"] = "no"
    elif extra == "blank-message":
        rule["message"] = " "
    elif extra == "messageExpression":
        rule["messageExpression"] = draw(st.sampled_from(["'no'", "1", "'a' +"]))
    elif extra == "reason":
        rule["reason"] = draw(st.sampled_from(["FieldValueForbidden", "FieldValueRequired", "FieldValueInvalid"]))
    elif extra == "bad-reason":
        rule["reason"] = "FieldValueTooLong"
    elif extra == "fieldPath":
        rule["fieldPath"] = f".{name}"
    elif extra == "bad-fieldPath":
        rule["fieldPath"] = "nope"
    elif extra == "optionalOldSelf":
        rule["optionalOldSelf"] = True
        if "oldSelf" in rule["rule"]:
            rule["rule"] = "!oldSelf.hasValue() || oldSelf.value() == self"
    return rule


@st.composite
def columns(draw: st.DrawFn) -> list[Obj]:
    found = []
    for _ in range(draw(st.integers(0, 2))):
        column: Obj = {"name": draw(st.sampled_from(["Size", "", "Mode"])),
                       "type": draw(st.sampled_from(["string", "integer", "date", "str", ""])),
                       "jsonPath": draw(st.sampled_from([".spec.size", "spec.size", ".", ""]))}
        if draw(st.integers(0, 3)) == 0:
            column["format"] = draw(st.sampled_from(["int32", "datetime"]))
        found.append({key: value for key, value in column.items() if value != ""})
    return found


@st.composite
def crds(draw: st.DrawFn) -> Obj:
    """A whole CRD: names, scope, one or two versions with schemas, subresources and printer columns."""
    plural = draw(LABEL)
    group = draw(st.sampled_from(["example.com", "example.com", "example", "Example.com", "widgets.k8s.io"]))
    names: Obj = {"plural": plural, "kind": draw(KIND)}
    if draw(st.booleans()):
        names["singular"] = draw(st.sampled_from(["widget", "Widget"]))
    if draw(st.integers(0, 3)) == 0:
        names["listKind"] = draw(st.sampled_from(["WidgetList", "Widget"]))
    if draw(st.integers(0, 3)) == 0:
        names["shortNames"] = draw(st.lists(st.sampled_from(["wd", "W", "1x"]), max_size=2))
    root = draw(schemas(root=True))
    if draw(st.integers(0, 3)):
        root.setdefault("type", "object")
    version: Obj = {"name": draw(st.sampled_from(["v1", "v1", "V1", "v1.0"])), "served": True, "storage": True,
                    "schema": {"openAPIV3Schema": root}}
    if draw(st.integers(0, 3)) == 0:
        version["subresources"] = {"status": {}}
    printer = draw(columns())
    if printer:
        version["additionalPrinterColumns"] = printer
    versions = [version]
    if draw(st.integers(0, 3)) == 0:
        other = copy.deepcopy(version)
        other.update(name="v1beta1", storage=draw(st.booleans()))
        if draw(st.booleans()):
            other["schema"] = {"openAPIV3Schema": draw(schemas(root=True))}
        versions.insert(0, other)
    crd: Obj = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.{group}"},
                "spec": {"group": group, "names": names, "versions": versions,
                         "scope": draw(st.sampled_from(["Namespaced", "Cluster", "namespaced"]))}}
    if draw(st.integers(0, 10)) == 0:
        crd["metadata"]["name"] = "other.example.com"
    return crd
