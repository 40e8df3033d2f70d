"""CRD admission: pruning, defaulting, schema validation and CEL rules as the API server runs them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.cluster.api import Invalid
from offline.cluster.admission import CrdAdmission, admissions_for
from offline.cluster.admission.cel import escape
from offline.cluster.admission.fielderrors import go_number, go_quote

Obj = dict[str, Any]

NOT_CHECKED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def make_crd(spec_schema: Obj, *, root_rules: list[Obj] | None = None, versions: list[Obj] | None = None) -> Obj:
    """widgets.example.io with one served version v1 whose spec follows spec_schema."""
    root: Obj = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema,
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    if root_rules:
        root["x-kubernetes-validations"] = root_rules
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {
            "group": "example.io",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": versions
            or [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": root}}],
        },
    }


def admission(spec_schema: Obj, **kwargs: Any) -> CrdAdmission:
    return admissions_for(make_crd(spec_schema, **kwargs))["example.io/v1"]


def widget(spec: Any = None, name: str = "billing", **extra: Any) -> Obj:
    obj: Obj = {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "ns"}}
    if spec is not None:
        obj["spec"] = spec
    obj.update(extra)
    return obj


def rejection(adm: CrdAdmission, obj: Obj, old: Obj | None = None) -> Invalid:
    with pytest.raises(Invalid) as caught:
        adm.admit(obj, old)
    return caught.value


def obj_schema(**properties: Obj) -> Obj:
    return {"type": "object", "properties": properties}


STRING: Obj = {"type": "string"}
INTEGER: Obj = {"type": "integer"}


# ---------------------------------------------------------------------------
# Structural schema validation


class TestSchemaValidation:
    def test_wrong_type_is_reported_like_the_api_server(self) -> None:
        """A string where an integer belongs reads `Invalid value: "string": ... must be of type integer`."""
        error = rejection(admission(obj_schema(replicas=INTEGER)), widget({"replicas": "3"}))
        assert error.message == (
            'Widget.example.io "billing" is invalid: spec.replicas: Invalid value: "string": '
            'spec.replicas in body must be of type integer: "string"'
        )
        assert error.code == 422
        assert error.reason == "Invalid"

    def test_booleans_are_not_integers(self) -> None:
        """true for an integer field is a type error, not 1."""
        error = rejection(admission(obj_schema(replicas=INTEGER)), widget({"replicas": True}))
        assert [c.message for c in error.causes] == [
            'Invalid value: "boolean": spec.replicas in body must be of type integer: "boolean"'
        ]

    def test_integral_floats_are_integers_and_read_back_as_ints(self) -> None:
        """3.0 passes an integer field and is stored as 3; 2.5 does not pass."""
        adm = admission(obj_schema(replicas=INTEGER))
        stored = adm.admit(widget({"replicas": 3.0}))
        assert stored["spec"]["replicas"] == 3 and isinstance(stored["spec"]["replicas"], int)
        error = rejection(adm, widget({"replicas": 2.5}))
        assert error.causes[0].message == (
            'Invalid value: "number": spec.replicas in body must be of type integer: "number"'
        )

    def test_missing_required_fields_are_required_values(self) -> None:
        """Absent required fields are `Required value` at their own path, nested and at the root."""
        spec = {"type": "object", "required": ["name"], "properties": {"name": STRING}}
        crd = make_crd(spec)
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["required"] = ["spec"]
        adm = admissions_for(crd)["example.io/v1"]
        assert rejection(adm, widget()).message == 'Widget.example.io "billing" is invalid: spec: Required value'
        error = rejection(adm, widget({}))
        assert [(c.field, c.message, c.reason) for c in error.causes] == [
            ("spec.name", "Required value", "FieldValueRequired")
        ]

    def test_enum_lists_the_supported_values(self) -> None:
        """An unknown enum value is `Unsupported value` with every supported value quoted."""
        adm = admission(obj_schema(mode={"type": "string", "enum": ["Retain", "Delete"]}))
        error = rejection(adm, widget({"mode": "Keep"}))
        assert str(error) == (
            'Widget.example.io "billing" is invalid: spec.mode: Unsupported value: "Keep": '
            'supported values: "Retain", "Delete"'
        )
        assert error.causes[0].reason == "FieldValueNotSupported"

    def test_pattern_is_quoted_in_the_message(self) -> None:
        """A pattern mismatch names the pattern as the API server does."""
        adm = admission(obj_schema(name={"type": "string", "pattern": "^[a-z]+$"}))
        error = rejection(adm, widget({"name": "Bad1"}))
        assert error.causes[0].message == "Invalid value: \"Bad1\": spec.name in body should match '^[a-z]+$'"

    @pytest.mark.parametrize(
        ("bounds", "value", "message"),
        [
            ({"minimum": 1}, 0, "Invalid value: 0: spec.n in body should be greater than or equal to 1"),
            ({"minimum": 1, "exclusiveMinimum": True}, 1, "Invalid value: 1: spec.n in body should be greater than 1"),
            ({"maximum": 10}, 11, "Invalid value: 11: spec.n in body should be less than or equal to 10"),
            ({"maximum": 10, "exclusiveMaximum": True}, 10, "Invalid value: 10: spec.n in body should be less than 10"),
        ],
    )
    def test_numeric_bounds(self, bounds: Obj, value: int, message: str) -> None:
        """minimum and maximum, inclusive and exclusive, read as kube-openapi words them."""
        error = rejection(admission(obj_schema(n={"type": "integer", **bounds})), widget({"n": value}))
        assert [c.message for c in error.causes] == [message]

    def test_string_lengths(self) -> None:
        """Too short reads `should be at least N chars long`; too long reads `may not be more than N bytes`."""
        adm = admission(obj_schema(name={"type": "string", "minLength": 1, "maxLength": 63}))
        assert rejection(adm, widget({"name": ""})).causes[0].message == (
            'Invalid value: "": spec.name in body should be at least 1 chars long'
        )
        error = rejection(adm, widget({"name": "x" * 64}))
        assert (
            str(error) == 'Widget.example.io "billing" is invalid: spec.name: Too long: may not be more than 63 bytes'
        )
        assert error.causes[0].reason == "FieldValueTooLong"

    def test_a_string_reports_only_its_first_failing_check(self) -> None:
        """Like kube-openapi, a too-long string that also misses its pattern reports only the length."""
        adm = admission(obj_schema(name={"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"}))
        assert [c.message for c in rejection(adm, widget({"name": "ABCDE"})).causes] == [
            "Too long: may not be more than 3 bytes"
        ]

    def test_item_counts(self) -> None:
        """Too few items is an Invalid value of the count; too many is `Too many`."""
        tags = {"type": "array", "items": STRING, "minItems": 1, "maxItems": 2}
        adm = admission(obj_schema(tags=tags))
        assert rejection(adm, widget({"tags": []})).causes[0].message == (
            "Invalid value: 0: spec.tags in body should have at least 1 items"
        )
        assert rejection(adm, widget({"tags": ["a", "b", "c"]})).causes[0].message == (
            "Too many: 3: must have at most 2 items"
        )

    def test_list_items_have_indexed_paths(self) -> None:
        """An error inside a list item names it `spec.items[1].name`."""
        items = {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {"name": STRING}}}
        error = rejection(admission(obj_schema(items=items)), widget({"items": [{"name": "a"}, {}]}))
        assert [c.field for c in error.causes] == ["spec.items[1].name"]

    def test_date_time_format_is_checked(self) -> None:
        """A date-time field takes RFC 3339 and rejects other strings."""
        adm = admission(obj_schema(at={"type": "string", "format": "date-time"}))
        assert adm.admit(widget({"at": "2024-05-01T10:00:00Z"}))["spec"]["at"] == "2024-05-01T10:00:00Z"
        assert rejection(adm, widget({"at": "yesterday"})).causes[0].message == (
            'Invalid value: "yesterday": spec.at in body must be of type date-time: "yesterday"'
        )

    def test_integer_formats_take_any_integer(self) -> None:
        """int32/int64 formats are not checked by the API server (it validates string formats only)."""
        adm = admission(
            obj_schema(big={"type": "integer", "format": "int32"}, gen={"type": "integer", "format": "int64"})
        )
        assert adm.admit(widget({"big": 2**40, "gen": 7}))["spec"] == {"big": 2**40, "gen": 7}

    def test_nullable_keeps_null_and_non_nullable_drops_it(self) -> None:
        """null stays on a nullable field and is pruned from a non-nullable one."""
        adm = admission(obj_schema(a={"type": "string", "nullable": True}, b=STRING))
        assert adm.admit(widget({"a": None, "b": None}))["spec"] == {"a": None}

    def test_int_or_string(self) -> None:
        """x-kubernetes-int-or-string takes both and rejects a boolean."""
        adm = admission(obj_schema(port={"x-kubernetes-int-or-string": True}))
        assert adm.admit(widget({"port": 80}))["spec"]["port"] == 80
        assert adm.admit(widget({"port": "http"}))["spec"]["port"] == "http"
        assert rejection(adm, widget({"port": False})).causes[0].message == (
            'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"'
        )

    def test_map_values_follow_additional_properties(self) -> None:
        """Every value of an additionalProperties map is validated, at `spec.labels.<key>`."""
        labels = {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}}
        adm = admission(obj_schema(labels=labels))
        assert adm.admit(widget({"labels": {"a": "x"}}))["spec"]["labels"] == {"a": "x"}
        assert rejection(adm, widget({"labels": {"a": "x", "b": "long"}})).causes[0].field == "spec.labels.b"

    def test_every_error_is_reported_in_one_message(self) -> None:
        """Several errors read `is invalid: [first, second]` and each is a cause."""
        adm = admission(obj_schema(n={"type": "integer", "minimum": 1}, name={"type": "string", "pattern": "^a"}))
        error = rejection(adm, widget({"n": 0, "name": "b"}))
        assert str(error) == (
            'Widget.example.io "billing" is invalid: [spec.n: Invalid value: 0: spec.n in body should be greater '
            "than or equal to 1, spec.name: Invalid value: \"b\": spec.name in body should match '^a']"
        )
        assert [c.field for c in error.causes] == ["spec.n", "spec.name"]
        assert error.status()["details"] == {
            "group": "example.io",
            "kind": "Widget",
            "name": "billing",
            "causes": [{"field": c.field, "message": c.message, "reason": c.reason} for c in error.causes],
        }

    def test_duplicate_keys_in_a_map_list(self) -> None:
        """Two items of an `x-kubernetes-list-type: map` with one key are a `Duplicate value`."""
        conditions = {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
            "items": obj_schema(type=STRING, status=STRING),
        }
        adm = admission(obj_schema(conditions=conditions))
        error = rejection(adm, widget({"conditions": [{"type": "Ready"}, {"type": "Ready", "status": "True"}]}))
        assert [(c.field, c.message, c.reason) for c in error.causes] == [
            ("spec.conditions[1]", 'Duplicate value: {"type":"Ready"}', "FieldValueDuplicate")
        ]

    def test_duplicate_items_in_a_set_list(self) -> None:
        """A repeated item of an `x-kubernetes-list-type: set` is a `Duplicate value`."""
        keys = {"type": "array", "x-kubernetes-list-type": "set", "items": STRING}
        error = rejection(admission(obj_schema(keys=keys)), widget({"keys": ["a", "b", "a"]}))
        assert str(error) == 'Widget.example.io "billing" is invalid: spec.keys[2]: Duplicate value: "a"'


# ---------------------------------------------------------------------------
# Pruning and defaulting


class TestPruning:
    def test_unknown_fields_are_pruned_at_every_level(self) -> None:
        """Fields not in `properties` disappear, at the root and nested; apiVersion, kind and metadata stay."""
        adm = admission(obj_schema(ref=obj_schema(name=STRING)))
        obj = widget({"ref": {"name": "a", "extra": 1}, "junk": True}, bogus="x")
        obj["metadata"]["labels"] = {"a": "b"}
        stored = adm.admit(obj)
        assert stored == {
            "apiVersion": "example.io/v1",
            "kind": "Widget",
            "metadata": {"name": "billing", "namespace": "ns", "labels": {"a": "b"}},
            "spec": {"ref": {"name": "a"}},
        }

    def test_preserve_unknown_fields_keeps_them(self) -> None:
        """`x-kubernetes-preserve-unknown-fields: true` keeps unknown fields, still pruning known children."""
        free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"ref": obj_schema()}}
        stored = admission(obj_schema(free=free)).admit(widget({"free": {"any": {"deep": [1]}, "ref": {"gone": 1}}}))
        assert stored["spec"] == {"free": {"any": {"deep": [1]}, "ref": {}}}

    def test_inputs_are_left_untouched(self) -> None:
        """admit returns a new object and changes neither argument."""
        adm = admission(obj_schema(n={"type": "integer", "default": 1}))
        obj, old = widget({"junk": 1}), widget({"n": 2})
        obj_before, old_before = copy.deepcopy(obj), copy.deepcopy(old)
        stored = adm.admit(obj, old)
        assert obj == obj_before and old == old_before
        assert stored["spec"] == {"n": 1}


class TestDefaults:
    def test_absent_fields_take_their_default(self) -> None:
        """A missing property gets its default; a given one keeps its value."""
        adm = admission(obj_schema(mode={"type": "string", "default": "Retain"}, n={"type": "integer", "default": 1}))
        assert adm.admit(widget({"n": 5}))["spec"] == {"n": 5, "mode": "Retain"}

    def test_defaults_apply_inside_a_defaulted_object(self) -> None:
        """`rotation: {default: {}}` with `interval: {default: 720h}` reads back `rotation: {interval: 720h}`."""
        rotation = {"type": "object", "default": {}, "properties": {"interval": {"type": "string", "default": "720h"}}}
        assert admission(obj_schema(rotation=rotation)).admit(widget({}))["spec"] == {"rotation": {"interval": "720h"}}

    def test_defaults_apply_inside_list_items(self) -> None:
        """Each item of a list gets the defaults of the item schema."""
        items = {"type": "array", "items": obj_schema(weight={"type": "integer", "default": 1}, name=STRING)}
        stored = admission(obj_schema(items=items)).admit(widget({"items": [{"name": "a"}, {"weight": 3}]}))
        assert stored["spec"]["items"] == [{"name": "a", "weight": 1}, {"weight": 3}]

    def test_null_on_a_non_nullable_field_is_defaulted(self) -> None:
        """null is dropped before defaulting, so the default fills it."""
        adm = admission(obj_schema(mode={"type": "string", "default": "Retain"}))
        assert adm.admit(widget({"mode": None}))["spec"] == {"mode": "Retain"}

    def test_defaults_are_validated_too(self) -> None:
        """Defaulting happens before validation, so a defaulted value meets the rules like a given one."""
        rotation = {
            "type": "object",
            "default": {},
            "properties": {"interval": {"type": "string", "default": "720h"}, "grace": {"type": "string"}},
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.grace) || duration(self.grace) < duration(self.interval)",
                    "message": "grace too long",
                }
            ],
        }
        error = rejection(admission(obj_schema(rotation=rotation)), widget({"rotation": {"grace": "800h"}}))
        assert error.causes[0].message == "Invalid value: grace too long"


# ---------------------------------------------------------------------------
# CEL rules


def rule(text: str, message: str | None = None, **extra: Any) -> Obj:
    spec: Obj = {"rule": text, **extra}
    if message is not None:
        spec["message"] = message
    return spec


INTERVAL: Obj = {
    "type": "string",
    "default": "720h",
    "x-kubernetes-validations": [
        rule(
            "duration(self) == duration('0s') || duration(self) >= duration('1m')",
            "rotation.interval is 0s or at least 1m",
        ),
        rule("duration(self) <= duration('87600h')", "rotation.interval is at most 87600h"),
    ],
}


class TestRules:
    def test_a_failing_rule_names_the_node_and_its_type(self) -> None:
        """The cause is at the node's path; the Invalid value is the value judged (omitted for objects and lists, as
        the API server omits them); the message is verbatim."""
        adm = admission(obj_schema(rotation=obj_schema(interval=INTERVAL)))
        error = rejection(adm, widget({"rotation": {"interval": "30s"}}))
        assert str(error) == (
            'Widget.example.io "billing" is invalid: spec.rotation.interval: Invalid value: "30s": '
            "rotation.interval is 0s or at least 1m"
        )
        assert [(c.field, c.reason) for c in error.causes] == [("spec.rotation.interval", "FieldValueInvalid")]

    @pytest.mark.parametrize("interval", ["0s", "1m", "720h", "1h30m", "87600h", "90s"])
    def test_durations_in_range_pass(self, interval: str) -> None:
        """Go durations, compound ones included, between 1m and 87600h (or 0s) are admitted."""
        adm = admission(obj_schema(rotation=obj_schema(interval=INTERVAL)))
        assert adm.admit(widget({"rotation": {"interval": interval}}))["spec"]["rotation"]["interval"] == interval

    @pytest.mark.parametrize(
        ("interval", "message"),
        [
            ("59s", "rotation.interval is 0s or at least 1m"),
            ("59999ms", "rotation.interval is 0s or at least 1m"),
            ("87601h", "rotation.interval is at most 87600h"),
            ("87599h60m1s", "rotation.interval is at most 87600h"),
        ],
    )
    def test_durations_out_of_range_fail(self, interval: str, message: str) -> None:
        """Durations below 1m (but not 0s) or above 87600h fail the matching rule."""
        adm = admission(obj_schema(rotation=obj_schema(interval=INTERVAL)))
        assert [c.message for c in rejection(adm, widget({"rotation": {"interval": interval}})).causes] == [
            f'Invalid value: "{interval}": {message}'
        ]

    def test_a_malformed_duration_is_an_evaluation_error(self) -> None:
        """duration() of a non-duration is reported with the API server's evaluation-error framing."""
        adm = admission(obj_schema(rotation=obj_schema(interval=INTERVAL)))
        messages = [c.message for c in rejection(adm, widget({"rotation": {"interval": "soon"}})).causes]
        assert messages == [
            'Invalid value: "string": time: invalid duration "soon" evaluating rule: '
            "rotation.interval is 0s or at least 1m",
            'Invalid value: "string": time: invalid duration "soon" evaluating rule: '
            "rotation.interval is at most 87600h",
        ]

    def test_root_rules_see_metadata_and_report_at_nil(self) -> None:
        """A root rule reads `self.metadata.name`; its failure is reported at `<nil>` with value "object"."""
        adm = admission(obj_schema(), root_rules=[rule("size(self.metadata.name) <= 63", "name is too long")])
        assert adm.admit(widget({}, name="a" * 63))["metadata"]["name"] == "a" * 63
        error = rejection(adm, widget({}, name="a" * 64))
        assert (
            str(error) == f'Widget.example.io "{"a" * 64}" is invalid: <nil>: Invalid value: name is too long'
        )
        assert error.causes[0].field == "<nil>"

    def test_reserved_word_properties_are_escaped(self) -> None:
        """A property `namespace` is read as `self.__namespace__`."""
        ref = obj_schema(name=STRING, namespace=STRING)
        ref["x-kubernetes-validations"] = [rule("self.__namespace__ == 'prod'", "namespace must be prod")]
        adm = admission(obj_schema(ref=ref))
        assert adm.admit(widget({"ref": {"namespace": "prod"}}))["spec"]["ref"] == {"namespace": "prod"}
        assert rejection(adm, widget({"ref": {"namespace": "dev"}})).causes[0].message == (
            "Invalid value: namespace must be prod"
        )

    def test_has_guards_optional_fields(self) -> None:
        """`has(self.x) ? ... : ...` takes the else branch when x is absent."""
        ref = obj_schema(name=STRING, alias=STRING)
        ref["x-kubernetes-validations"] = [
            rule("has(self.alias) ? self.alias != self.name : true", "alias repeats name")
        ]
        adm = admission(obj_schema(ref=ref))
        adm.admit(widget({"ref": {"name": "a"}}))
        adm.admit(widget({"ref": {"name": "a", "alias": "b"}}))
        assert rejection(adm, widget({"ref": {"name": "a", "alias": "a"}})).causes[0].field == "spec.ref"

    def test_a_missing_key_is_an_evaluation_error(self) -> None:
        """Reading an absent field fails as `no such key: <field> evaluating rule: <message>`."""
        ref = obj_schema(name=STRING, alias=STRING)
        ref["x-kubernetes-validations"] = [rule("self.alias != self.name", "alias repeats name")]
        error = rejection(admission(obj_schema(ref=ref)), widget({"ref": {"name": "a"}}))
        assert error.causes[0].message == (
            'Invalid value: "object": no such key: alias evaluating rule: alias repeats name'
        )

    def test_a_rule_without_message_reports_the_rule(self) -> None:
        """Without a message the API server says `failed rule: <rule>`."""
        adm = admission(obj_schema(n={"type": "integer", "x-kubernetes-validations": [rule("self % 2 == 0")]}))
        assert (
            rejection(adm, widget({"n": 3})).causes[0].message == "Invalid value: 3: failed rule: self % 2 == 0"
        )

    def test_message_expression_is_used(self) -> None:
        """messageExpression's text replaces the message."""
        n = {
            "type": "integer",
            "x-kubernetes-validations": [rule("self < 10", "too big", messageExpression="'n is ' + string(self)")],
        }
        assert (
            rejection(admission(obj_schema(n=n)), widget({"n": 12})).causes[0].message
            == "Invalid value: 12: n is 12"
        )

    def test_reason_and_field_path(self) -> None:
        """`reason: FieldValueForbidden` and `fieldPath` shape the cause like the API server's."""
        ref = obj_schema(name=STRING)
        ref["x-kubernetes-validations"] = [
            rule("self.name != 'root'", "root is reserved", reason="FieldValueForbidden", fieldPath=".name")
        ]
        error = rejection(admission(obj_schema(ref=ref)), widget({"ref": {"name": "root"}}))
        assert [(c.field, c.message, c.reason) for c in error.causes] == [
            ("spec.ref.name", "Forbidden: root is reserved", "FieldValueForbidden")
        ]

    def test_string_functions(self) -> None:
        """startsWith, endsWith, contains, matches, lowerAscii and upperAscii are available."""
        rules = [
            rule("self.startsWith('ab') && self.endsWith('yz')", "edges"),
            rule("self.contains('-') && self.matches('^[a-z-]+$')", "middle"),
            rule("self.lowerAscii() == self && self.upperAscii() == 'AB-XYZ'", "case"),
        ]
        adm = admission(obj_schema(code={"type": "string", "x-kubernetes-validations": rules}))
        adm.admit(widget({"code": "ab-xyz"}))
        assert [c.message for c in rejection(adm, widget({"code": "Ab-xyz"})).causes] == [
            'Invalid value: "Ab-xyz": edges',
            'Invalid value: "Ab-xyz": middle',
            'Invalid value: "Ab-xyz": case',
        ]

    def test_rules_on_absent_values_do_not_run(self) -> None:
        """A rule on a field the object lacks is not evaluated."""
        interval = {key: value for key, value in INTERVAL.items() if key != "default"}
        adm = admission(obj_schema(rotation=obj_schema(interval=interval)))
        adm.admit(widget({"rotation": {}}))

    def test_schema_errors_that_block_rules(self) -> None:
        """After a required, enum, too-long or type error, rules are not run and the API server says so."""
        adm = admission(
            obj_schema(
                name={"type": "string", "enum": ["a"]},
                n={"type": "integer", "x-kubernetes-validations": [rule("self > 5", "n")]},
            )
        )
        error = rejection(adm, widget({"name": "b", "n": 1}))
        assert [str(c.field) for c in error.causes] == ["spec.name", "<nil>"]
        assert str(error).endswith(NOT_CHECKED + "]")

    def test_schema_errors_that_do_not_block_rules(self) -> None:
        """A pattern or minimum error still lets the rules run, and both are reported."""
        adm = admission(
            obj_schema(
                name={"type": "string", "pattern": "^a"},
                n={"type": "integer", "x-kubernetes-validations": [rule("self > 5", "n is small")]},
            )
        )
        error = rejection(adm, widget({"name": "b", "n": 1}))
        assert [c.field for c in error.causes] == ["spec.name", "spec.n"]

    def test_a_rule_that_does_not_parse_rejects_the_crd(self) -> None:
        """A syntax error in a rule is an Invalid CustomResourceDefinition naming the rule's path."""
        with pytest.raises(Invalid) as caught:
            admission(obj_schema(n={"type": "integer", "x-kubernetes-validations": [rule("self >")]}))
        assert str(caught.value).startswith(
            'CustomResourceDefinition.apiextensions.k8s.io "widgets.example.io" is invalid: '
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[n].x-kubernetes-validations[0].rule: "
            'Invalid value: "self >": compilation failed'
        )


GENERATION: Obj = {
    "type": "integer",
    "default": 1,
    "x-kubernetes-validations": [rule("self >= oldSelf", "generation may only increase")],
}


class TestTransitionRules:
    def test_not_evaluated_on_create(self) -> None:
        """`self >= oldSelf` does not run without a stored object."""
        assert admission(obj_schema(generation=GENERATION)).admit(widget({"generation": 1}))["spec"]["generation"] == 1

    def test_evaluated_on_update(self) -> None:
        """On update a lower value fails and a higher one passes."""
        adm = admission(obj_schema(generation=GENERATION))
        stored = adm.admit(widget({"generation": 3}))
        assert adm.admit(widget({"generation": 4}), stored)["spec"]["generation"] == 4
        assert str(rejection(adm, widget({"generation": 2}), stored)) == (
            'Widget.example.io "billing" is invalid: spec.generation: Invalid value: 2: '
            "generation may only increase"
        )

    def test_skipped_when_the_old_value_is_absent(self) -> None:
        """A stored object without the field does not trigger the rule."""
        generation = {key: value for key, value in GENERATION.items() if key != "default"}
        adm = admission(obj_schema(generation=generation))
        assert adm.admit(widget({"generation": 0}), widget({}))["spec"]["generation"] == 0

    def test_old_objects_are_read_with_todays_defaults(self) -> None:
        """A stored object written before a default existed is compared as the API server reads it, defaulted."""
        adm = admission(obj_schema(generation=GENERATION))
        assert str(rejection(adm, widget({"generation": 0}), widget({}))) == (
            'Widget.example.io "billing" is invalid: spec.generation: Invalid value: 0: '
            "generation may only increase"
        )

    def test_immutable_object_fields(self) -> None:
        """An object rule comparing `self.name == oldSelf.name` rejects a change of name."""
        ref = obj_schema(name=STRING, namespace=STRING)
        ref["x-kubernetes-validations"] = [
            rule("self.name == oldSelf.name", "name is immutable"),
            rule(
                "(has(self.__namespace__) ? self.__namespace__ : '') == "
                "(has(oldSelf.__namespace__) ? oldSelf.__namespace__ : '')",
                "namespace is immutable",
            ),
        ]
        adm = admission(obj_schema(ref=ref))
        stored = adm.admit(widget({"ref": {"name": "a"}}))
        adm.admit(widget({"ref": {"name": "a"}}), stored)
        assert [c.message for c in rejection(adm, widget({"ref": {"name": "b", "namespace": "x"}}), stored).causes] == [
            "Invalid value: name is immutable",
            "Invalid value: namespace is immutable",
        ]

    def test_map_list_items_correlate_by_key(self) -> None:
        """Items of a `list-type: map` compare with the old item of the same key, wherever it moved."""
        items = {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": obj_schema(name=STRING, generation=GENERATION),
        }
        adm = admission(obj_schema(items=items))
        stored = adm.admit(widget({"items": [{"name": "a", "generation": 5}, {"name": "b", "generation": 1}]}))
        adm.admit(
            widget({"items": [{"name": "b", "generation": 2}, {"name": "a", "generation": 5}, {"name": "c"}]}), stored
        )
        error = rejection(
            adm, widget({"items": [{"name": "b", "generation": 1}, {"name": "a", "generation": 4}]}), stored
        )
        assert [c.field for c in error.causes] == ["spec.items[1].generation"]

    def test_atomic_list_items_do_not_correlate(self) -> None:
        """Items of an ordinary list have no old value, so their transition rules do not run."""
        items = {"type": "array", "items": obj_schema(name=STRING, generation=GENERATION)}
        adm = admission(obj_schema(items=items))
        stored = adm.admit(widget({"items": [{"name": "a", "generation": 5}]}))
        assert (
            adm.admit(widget({"items": [{"name": "a", "generation": 1}]}), stored)["spec"]["items"][0]["generation"]
            == 1
        )


# ---------------------------------------------------------------------------
# Ratcheting (the API server since 1.30)


class TestRatcheting:
    SCHEMA: Obj = obj_schema(
        size={"type": "integer", "minimum": 1},
        labels={"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
        rotation=obj_schema(interval=INTERVAL),
    )

    def test_an_update_leaving_an_invalid_field_unchanged_is_accepted(self) -> None:
        """Stored before the schema changed: schema and rule errors of unchanged fields do not block a write."""
        adm = admission(self.SCHEMA)
        stored = widget({"size": 0, "labels": {"a.b/c": "long"}, "rotation": {"interval": "30s"}})
        changed = widget({"size": 0, "labels": {"a.b/c": "long"}, "rotation": {"interval": "30s"}},
                         status={"ready": True})
        assert adm.admit(changed, stored)["status"] == {"ready": True}

    def test_a_changed_field_is_validated(self) -> None:
        """Writing another invalid value, or an invalid value into a valid field, is refused."""
        adm = admission(self.SCHEMA)
        stored = widget({"size": 0, "rotation": {"interval": "30s"}})
        assert [c.field for c in rejection(adm, widget({"size": -1, "rotation": {"interval": "30s"}}), stored)
                .causes] == ["spec.size"]
        assert [c.field for c in rejection(adm, widget({"size": 0, "rotation": {"interval": "40s"}}), stored)
                .causes] == ["spec.rotation.interval"]

    def test_a_create_does_not_ratchet(self) -> None:
        """Without a stored object every error counts."""
        assert rejection(admission(self.SCHEMA), widget({"size": 0})).causes


# ---------------------------------------------------------------------------
# Versions and helpers


class TestAdmissionsFor:
    def test_one_admission_per_served_version(self) -> None:
        """Served versions are keyed `group/version`, each with its own schema; unserved ones are left out."""
        v1 = {"type": "object", "properties": {"spec": obj_schema(a=STRING)}}
        v2 = {"type": "object", "properties": {"spec": obj_schema(b=STRING)}}
        versions = [
            {"name": "v1", "served": True, "storage": False, "schema": {"openAPIV3Schema": v1}},
            {"name": "v2", "served": True, "storage": True, "schema": {"openAPIV3Schema": v2}},
            {"name": "v0", "served": False, "storage": False, "schema": {"openAPIV3Schema": v1}},
        ]
        admissions = admissions_for(make_crd({}, versions=versions))
        assert sorted(admissions) == ["example.io/v1", "example.io/v2"]
        both = {"a": "x", "b": "y"}
        assert admissions["example.io/v1"].admit(widget(both))["spec"] == {"a": "x"}
        assert admissions["example.io/v2"].admit(widget(both, apiVersion="example.io/v2"))["spec"] == {"b": "y"}

    def test_admissions_are_reusable(self) -> None:
        """One admission checks many objects, a failure leaving no trace on the next."""
        adm = admission(obj_schema(rotation=obj_schema(interval=INTERVAL)))
        for interval in ("1m", "30s", "2h", "30s"):
            try:
                adm.admit(widget({"rotation": {"interval": interval}}))
            except Invalid:
                assert interval == "30s"


class TestEscaping:
    @pytest.mark.parametrize(
        ("name", "escaped"),
        [
            ("namespace", "__namespace__"),
            ("if", "__if__"),
            ("plain", "plain"),
            ("a.b", "a__dot__b"),
            ("a-b", "a__dash__b"),
            ("a/b", "a__slash__b"),
            ("a__b", "a__underscores__b"),
            ("_x", "_x"),
            ("1abc", None),
            ("a b", None),
            ("", None),
        ],
    )
    def test_property_names(self, name: str, escaped: str | None) -> None:
        """Property names escape as Kubernetes CEL escapes them; unsupported names are unreachable."""
        assert escape(name) == escaped

    def test_dashed_properties_are_reachable(self) -> None:
        """A property `max-size` is read as `self.max__dash__size`."""
        limits = {"type": "object", "properties": {"max-size": INTEGER}}
        limits["x-kubernetes-validations"] = [rule("self.max__dash__size < 10", "max-size too big")]
        assert rejection(admission(obj_schema(limits=limits)), widget({"limits": {"max-size": 11}})).causes[
            0
        ].message == ("Invalid value: max-size too big")


class TestGoRendering:
    @pytest.mark.parametrize(
        ("text", "quoted"),
        [("plain", '"plain"'), ('say "hi"', '"say \\"hi\\""'), ("tab\there", '"tab\\there"'), ("ünï", '"ünï"')],
    )
    def test_strings_quote_like_strconv(self, text: str, quoted: str) -> None:
        """Strings in messages are quoted as Go's %q quotes them."""
        assert go_quote(text) == quoted

    @pytest.mark.parametrize(("number", "text"), [(3, "3"), (2.5, "2.5"), (1e6, "1e+06"), (123456.0, "123456")])
    def test_numbers_print_like_go(self, number: float, text: str) -> None:
        """Numbers in messages print as Go's %v prints int64 and float64."""
        assert go_number(number) == text


class TestExactDurations:
    """CEL durations keep Go's nanoseconds through comparison and arithmetic (celpy's hold microseconds)."""

    @pytest.mark.parametrize(
        "text",
        [
            "duration('1ns') > duration('0s')",
            "duration('1ns') + duration('1ns') == duration('2ns')",
            "duration('1m') - duration('1ns') < duration('1m')",
            "-duration('1ns') < duration('0s')",
            "duration('1500ms').getSeconds() == 1",
            "duration('-1500ms').getSeconds() == -1",
            "duration('1h30m').getMinutes() == 90",
            "duration(self) == duration('1.5ns') || duration(self) == duration('1ns')",
        ],
    )
    def test_rule_holds(self, text: str) -> None:
        """Each rule is true of `1ns`; a duration truncated to microseconds would make it false."""
        adm = admission(obj_schema(grace={"type": "string", "x-kubernetes-validations": [rule(text, "broken")]}))
        assert adm.admit(widget({"grace": "1ns"}))["spec"]["grace"] == "1ns"

    def test_a_format_duration_field_is_exact_too(self) -> None:
        """A string field of `format: duration` reaches CEL as an exact duration."""
        schema = {"type": "string", "format": "duration",
                  "x-kubernetes-validations": [rule("self > duration('0s')", "must be positive")]}
        adm = admission(obj_schema(grace=schema))
        assert adm.admit(widget({"grace": "1ns"}))["spec"]["grace"] == "1ns"
        assert [c.message for c in rejection(adm, widget({"grace": "0s"})).causes] == [
            'Invalid value: "0s": must be positive'
        ]


def test_a_rule_that_cannot_evaluate_on_an_unchanged_bad_value_is_not_ratcheted() -> None:
    """An order stored before its schema with a string where an object with an immutable name belongs: the schema's
    type error is ratcheted on an update that leaves it alone, but the rule's evaluation error is not (the API server
    ratchets only a rule's false verdict, and never a rule reading oldSelf), so even a status write is refused."""
    adm = admission({
        "type": "object",
        "properties": {
            "ref": {
                "type": "object", "properties": {"name": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": "self.name == oldSelf.name", "message": "name is immutable"}],
            },
        },
    })
    stored = widget({"ref": "cp"})
    refused = rejection(adm, {**stored, "status": {"conditions": []}}, stored)
    assert [(c.field, c.message) for c in refused.causes] == [(
        "spec.ref", 'Invalid value: "object": invalid data, expected a map for the provided schema with type=object '
        "evaluating rule: name is immutable")]
