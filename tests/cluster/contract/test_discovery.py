"""Discovery: built-in kinds, custom kinds known through their installed CRD, and unknown kinds."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest
from contract_kit import WIDGET, WIDGET_CRD, widget

from engine.cluster.api import Cluster, Invalid, NotFound, PrinterColumn, ResourceInfo
from engine.cluster.patches import json_copy

THING_CRD = copy.deepcopy(WIDGET_CRD)
THING_CRD["metadata"]["name"] = "things.example.org"
THING_CRD["spec"].update(group="example.org", names={"plural": "things", "kind": "Thing"})
_OPEN = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
THING_CRD["spec"]["versions"] = [
    {"name": "v1alpha1", "served": False, "storage": False, "schema": _OPEN},
    {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}, "schema": _OPEN},
]


def thing(name: str) -> dict:  # type: ignore[type-arg]
    return {"apiVersion": "example.org/v1", "kind": "Thing", "metadata": {"name": name, "namespace": "default"}}


class TestBuiltins:
    @pytest.mark.parametrize(
        ("api_version", "kind", "plural", "namespaced"),
        [
            ("v1", "Secret", "secrets", True),
            ("v1", "ConfigMap", "configmaps", True),
            ("v1", "Namespace", "namespaces", False),
            ("coordination.k8s.io/v1", "Lease", "leases", True),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False),
        ],
    )
    def test_core_kinds(self, bare: Cluster, api_version: str, kind: str, plural: str, namespaced: bool) -> None:
        """Core kinds are served from the start with their plural and scope."""
        info = bare.resource_info(api_version, kind)
        assert (info.plural, info.namespaced) == (plural, namespaced)
        assert bare.serves(api_version, kind)

    def test_secret_has_no_status_subresource(self, bare: Cluster) -> None:
        """A Secret has no status subresource."""
        assert bare.resource_info("v1", "Secret").status_subresource is False

    def test_namespace_is_cluster_scoped(self, bare: Cluster) -> None:
        """A Namespace is created and read without a namespace."""
        bare.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
        assert bare.get("v1", "Namespace", None, "team-a")["metadata"]["name"] == "team-a"

    def test_lease(self, bare: Cluster) -> None:
        """A Lease round-trips through update with its resourceVersion, as leader election uses it."""
        lease = bare.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                             "metadata": {"name": "leader", "namespace": "ops"}, "spec": {"holderIdentity": "a"}})
        lease["spec"]["holderIdentity"] = "b"
        assert bare.update(lease)["spec"]["holderIdentity"] == "b"


class TestCustomKinds:
    def test_info_from_crd(self, cluster: Cluster) -> None:
        """resource_info reports what the CRD declares: names, scope, subresource, printer columns."""
        info = cluster.resource_info(WIDGET, "Widget")
        assert info == ResourceInfo(
            api_version=WIDGET, kind="Widget", plural="widgets", namespaced=True, status_subresource=True,
            singular="widget", short_names=("wd",),
            printer_columns=(
                PrinterColumn(name="Size", type="integer", json_path=".spec.size"),
                PrinterColumn(name="Ready", type="string", json_path='.status.conditions[?(@.type=="Ready")].status',
                              priority=1),
            ),
        )
        assert info.resource == "widgets.example.com"

    def test_cluster_scoped_without_status(self, cluster: Cluster) -> None:
        """A Cluster-scoped CRD without subresources is reported so."""
        info = cluster.resource_info("example.com/v1", "Gadget")
        assert (info.namespaced, info.status_subresource, info.singular) == (False, False, "gadget")

    def test_unknown_kind(self, bare: Cluster) -> None:
        """A kind with no CRD is not served: serves False, every call NotFound as the API server says it."""
        assert not bare.serves("example.org/v1", "Thing")
        with pytest.raises(NotFound) as caught:
            bare.resource_info("example.org/v1", "Thing")
        assert caught.value.message == "the server could not find the requested resource"
        for call in (
            lambda: bare.get("example.org/v1", "Thing", "default", "x"),
            lambda: bare.list("example.org/v1", "Thing"),
            lambda: bare.create(thing("x")),
            lambda: bare.apply(thing("x"), field_manager="m"),
            lambda: bare.watch("example.org/v1", "Thing", timeout=0),
        ):
            with pytest.raises(NotFound):
                result = call()
                if isinstance(result, Iterator):  # a watch may fail when iterated rather than when called
                    list(result)

    def test_installing_a_crd_serves_the_kind(self, bare: Cluster) -> None:
        """Creating a CRD makes its kind servable at once, in its served versions only."""
        bare.create(THING_CRD)
        assert bare.serves("example.org/v1", "Thing")
        assert not bare.serves("example.org/v1alpha1", "Thing")
        created = bare.create(thing("x"))
        assert created["metadata"]["generation"] == 1

    def test_crd_reads_back_established(self, bare: Cluster) -> None:
        """A created CRD reports itself Established, with its accepted names."""
        crd = bare.create(THING_CRD)
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions["Established"] == "True"
        assert crd["status"]["acceptedNames"]["kind"] == "Thing"

    def test_deleting_the_crd_stops_serving_and_removes_objects(self, bare: Cluster) -> None:
        """Deleting a CRD stops serving its kind and takes its objects with it."""
        bare.create(THING_CRD)
        bare.create(thing("x"))
        bare.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "things.example.org")
        assert not bare.serves("example.org/v1", "Thing")
        bare.create(THING_CRD)
        assert bare.list("example.org/v1", "Thing").items == []

    def test_updating_the_crd_changes_discovery(self, cluster: Cluster) -> None:
        """An updated CRD is served as it now reads."""
        crd = json_copy(cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "widgets.example.com"))
        crd["spec"]["names"]["shortNames"] = ["wd", "wdg"]
        cluster.update(crd)
        assert cluster.resource_info(WIDGET, "Widget").short_names == ("wd", "wdg")
        assert cluster.create(widget("still-here"))["metadata"]["name"] == "still-here"

    def test_crd_name_must_match(self, bare: Cluster) -> None:
        """A CRD must be named plural.group."""
        bad = copy.deepcopy(THING_CRD)
        bad["metadata"]["name"] = "wrong.example.org"
        with pytest.raises(Invalid) as caught:
            bare.create(bad)
        assert 'metadata.name: Invalid value: "wrong.example.org": must be spec.names.plural+"."+spec.group' in (
            caught.value.message)
        assert not bare.serves("example.org/v1", "Thing")

    def test_names_that_are_not_dns_labels_refuse_the_crd(self, bare: Cluster) -> None:
        """A plural with capitals, a kind with an underscore, a short name starting with a digit and a listKind
        equal to the kind refuse the CRD, in the API server's words; a mixed-case kind is fine."""
        label = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an"
                 " alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123',"
                 " regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
        bad = copy.deepcopy(THING_CRD)
        bad["spec"]["names"] = {"plural": "Things", "kind": "Big_Thing", "listKind": "Big_Thing",
                                "shortNames": ["1t"]}
        with pytest.raises(Invalid) as caught:
            bare.create(bad)
        assert {(c.field, c.message) for c in caught.value.causes} >= {
            ("spec.names.plural", f'Invalid value: "Things": {label}'),
            ("spec.names.kind",
             f'Invalid value: "Big_Thing": may have mixed case, but should otherwise match: {label}'),
            ("spec.names.shortNames[0]", f'Invalid value: "1t": {label}'),
            ("spec.names.listKind", 'Invalid value: "Big_Thing": kind and listKind may not be the same'),
        }
        good = copy.deepcopy(THING_CRD)
        good["spec"]["names"] = {"plural": "things", "kind": "BigThing", "shortNames": ["bt"], "categories": ["all"]}
        bare.create(good)
        assert bare.serves("example.org/v1", "BigThing")

    def test_the_longest_names_a_mixed_case_list_kind_and_an_empty_singular_install(self, bare: Cluster) -> None:
        """Names of 63 characters are DNS-1035 labels; a listKind, like the kind, may have mixed case; an empty
        singular is no name to check (the API server defaults it): such a CRD installs."""
        plural = "t" * 63
        crd = copy.deepcopy(THING_CRD)
        crd["metadata"]["name"] = f"{plural}.example.org"
        crd["spec"]["names"] = {"plural": plural, "singular": "", "kind": "Thing", "listKind": "ThingList",
                                "shortNames": ["s" * 63]}
        bare.create(crd)
        assert bare.serves("example.org/v1", "Thing")

    def test_a_name_longer_than_63_characters_refuses_the_crd(self, bare: Cluster) -> None:
        """A 64-character name is refused for its length; a name with two problems has both, joined by a comma
        as the API server joins them."""
        label = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an"
                 " alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123',"
                 " regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
        plural, short = "t" * 64, "9" * 64
        bad = copy.deepcopy(THING_CRD)
        bad["metadata"]["name"] = f"{plural}.example.org"
        bad["spec"]["names"] = {"plural": plural, "kind": "Thing", "shortNames": [short]}
        with pytest.raises(Invalid) as caught:
            bare.create(bad)
        assert {(c.field, c.message) for c in caught.value.causes} >= {
            ("spec.names.plural", f'Invalid value: "{plural}": must be no more than 63 characters'),
            ("spec.names.shortNames[0]", f'Invalid value: "{short}": must be no more than 63 characters,{label}'),
        }
        assert not bare.serves("example.org/v1", "Thing")

    @pytest.mark.parametrize(("schema", "causes"), [
        ({"type": "object", "properties": {"spec": {"properties": {"size": {"type": "integer"}}}}},
         {("properties[spec].type", "Required value: must not be empty for specified object fields")}),
        ({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "hosts": {"type": "array", "items": {"properties": {}}}, "tags": {"type": "array"}}}}},
         {("properties[spec].properties[hosts].items.type",
           "Required value: must not be empty for specified array items"),
          ("properties[spec].properties[tags].items", "Required value: must be specified")}),
        ({"type": "string"}, {("type", 'Invalid value: "string": must be object at the root')}),
        ({"type": "object", "properties": {"spec": {"type": "strin"}}},
         {("properties[spec].type", 'Unsupported value: "strin": supported values: "array", "boolean", "integer",'
           ' "number", "object", "string"')}),
        ({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}},
                                                    "additionalProperties": {"type": "string"}}}},
         {("properties[spec].additionalProperties", "Forbidden: additionalProperties and properties are mutual"
           " exclusive")}),
        ({"type": "object", "additionalProperties": {"type": "string"}},
         {("additionalProperties", "Forbidden: must not be used at the root")}),
        ({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
                                           "kind": {"type": "integer"}}},
         {("properties[metadata]", "Forbidden: must not specify anything other than name and generateName, but"
           " metadata is implicitly specified"),
          ("properties[kind].type", 'Invalid value: "integer": must be string')}),
    ], ids=["field-without-type", "items", "root-not-object", "unknown-type", "properties-and-additional",
            "additional-at-root", "metadata-and-kind"])
    def test_a_schema_that_is_not_structural_refuses_the_crd(self, bare: Cluster, schema: dict,  # type: ignore[type-arg]
                                                             causes: set[tuple[str, str]]) -> None:
        """A version schema the API server finds not structural refuses the CRD, each cause at its field."""
        bad = copy.deepcopy(THING_CRD)
        bad["spec"]["versions"][1]["schema"] = {"openAPIV3Schema": schema}
        del bad["spec"]["versions"][1]["subresources"]  # with a status subresource the root has more rules
        with pytest.raises(Invalid) as caught:
            bare.create(bad)
        prefix = "spec.versions[1].schema.openAPIV3Schema."
        assert {(c.field.removeprefix(prefix), c.message) for c in caught.value.causes} == causes
        assert not bare.serves("example.org/v1", "Thing")

    def test_a_structural_schema_installs(self, bare: Cluster) -> None:
        """Types everywhere, preserved or int-or-string fields without one, metadata restricting only the name."""
        good = copy.deepcopy(THING_CRD)
        good["spec"]["versions"][1]["schema"] = {"openAPIV3Schema": {"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}},
            "spec": {"type": "object", "properties": {
                "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "extra": {"x-kubernetes-preserve-unknown-fields": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "hosts": {"type": "array", "items": {"type": "string"}}}}}}}
        bare.create(good)
        assert bare.serves("example.org/v1", "Thing")

    def test_a_printer_column_the_api_server_refuses_refuses_the_crd(self, bare: Cluster) -> None:
        """A printer column with an unknown type or format, or a jsonPath not starting with ".", refuses the
        whole CRD, each field named as the API server names it; valid columns install."""
        bad = copy.deepcopy(THING_CRD)
        bad["spec"]["versions"][1]["additionalPrinterColumns"] = [
            {"name": "Ready", "type": "string", "jsonPath": ".status.ready"},
            {"name": "Age", "type": "str", "format": "datetime", "jsonPath": "status.age"},
            {"type": "date"},
        ]
        with pytest.raises(Invalid) as caught:
            bare.create(bad)
        column = "spec.versions[1].additionalPrinterColumns"
        assert {(c.field, c.message) for c in caught.value.causes} == {
            (f"{column}[1].type", 'Invalid value: "str": must be one of boolean,date,integer,number,string'),
            (f"{column}[1].format",
             'Invalid value: "datetime": must be one of byte,date,date-time,double,float,int32,int64,password'),
            (f"{column}[1].JSONPath", 'Invalid value: "status.age": must be a simple json path starting with .'),
            (f"{column}[2].name", "Required value"),
            (f"{column}[2].JSONPath", "Required value"),
        }
        assert not bare.serves("example.org/v1", "Thing")
        bad["spec"]["versions"][1]["additionalPrinterColumns"] = [
            {"name": "Ready", "type": "string", "jsonPath": ".status.ready"},
            {"name": "Age", "type": "date", "format": "date-time", "jsonPath": ".metadata.creationTimestamp"},
        ]
        bare.create(bad)
        assert [c.name for c in bare.resource_info("example.org/v1", "Thing").printer_columns] == ["Ready", "Age"]
