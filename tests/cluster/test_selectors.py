"""Label and field selectors parse as the API server's do and match what it would match."""

from __future__ import annotations

import pytest

from engine.cluster import selectors
from engine.cluster.api import BadRequest
from engine.cluster.selectors import (
    FieldRequirement,
    Requirement,
    carries_labels,
    fitting_selector,
    is_subdomain,
    label_key_errors,
    label_value_errors,
    parse_fields,
    parse_labels,
)
from tests.call_count import calls

LABELS = {"app": "web", "tier": "front", "example.com/role": "x"}


class TestParseLabels:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("app=web", Requirement("app", "=", ("web",))),
            ("app==web", Requirement("app", "=", ("web",))),
            ("app!=web", Requirement("app", "!=", ("web",))),
            ("app in (web, db)", Requirement("app", "in", ("db", "web"))),
            ("app notin (db)", Requirement("app", "notin", ("db",))),
            ("app", Requirement("app", "exists")),
            ("!app", Requirement("app", "!")),
            ("example.com/role=x", Requirement("example.com/role", "=", ("x",))),
            ("app=", Requirement("app", "=", ("",))),
        ],
    )
    def test_each_operator(self, text: str, expected: Requirement) -> None:
        """Every operator of the selector grammar parses into its requirement."""
        assert parse_labels(text).requirements == (expected,)

    def test_several_requirements(self) -> None:
        """Commas separate requirements, also inside and after sets; as apimachinery's parser keeps them, they
        come sorted by key and a set's values sorted."""
        selector = parse_labels("app in (web,db),!gone, tier")
        assert [str(r) for r in selector.requirements] == ["app in (db,web)", "!gone", "tier"]

    def test_mapping_is_equality(self) -> None:
        """A mapping selects by equality on each key."""
        assert parse_labels({"app": "web", "tier": "front"}).requirements == (
            Requirement("app", "=", ("web",)),
            Requirement("tier", "=", ("front",)),
        )

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("app,!gone", (Requirement("app", "exists"), Requirement("gone", "!"))),
            ("app=,tier=front", (Requirement("app", "=", ("",)), Requirement("tier", "=", ("front",)))),
        ],
    )
    def test_a_requirement_without_value_may_be_followed_by_more(
        self, text: str, expected: tuple[Requirement, ...]
    ) -> None:
        """A bare key or an empty value ends at the comma, and the requirements after it still count."""
        assert parse_labels(text).requirements == expected

    @pytest.mark.parametrize(
        "text",
        [
            "app=web",
            "app==web",
            "app!=web",
            "app=",
            "app in (web,db)",
            "app notin (,db)",
            "app",
            "!app",
            "example.com/role=x,tier!=back,!gone,app in (web)",
        ],
    )
    def test_written_back_it_parses_to_the_same_selector(self, text: str) -> None:
        """A parsed selector written as text (what the kube cluster sends the API server as labelSelector) is
        the same selector again: every operator and the commas between requirements survive the round trip."""
        selector = parse_labels(text)
        assert parse_labels(str(selector)) == selector

    @pytest.mark.parametrize("empty", [None, "", "   ", {}])
    def test_empty_selects_everything(self, empty: str | dict[str, str] | None) -> None:
        """No selector, an empty string or an empty map match every object."""
        assert parse_labels(empty).matches({}) is True

    @pytest.mark.parametrize(
        ("text", "said"),
        [
            ("app in web", "unable to parse requirement: found 'web' expected: '('"),
            ("app=web=db", "found '=', expected: ',' or 'end of string'"),
            ("=web", "found '=', expected: !, identifier, or 'end of string'"),
            ("!", "unable to parse requirement: found '', expected: identifier"),
            ("app in (web", "unable to parse requirement: found '', expected: ',' or ')'"),
            ("app in (==)", "unable to parse requirement: found '==', expected: ',', ')' or identifier"),
            ("a,", "found '', expected: identifier after ','"),
            ("/app=web", 'unable to parse requirement: <nil>: Invalid value: "/app": prefix part must be non-empty'),
            ("bad key=x", "unable to parse requirement: found 'key', expected: in, notin, =, ==, !=, gt, lt"),
            ("app=-x", 'unable to parse requirement: values[0][app]: Invalid value: "-x": a valid label must'),
            ("a/b/c=x", 'unable to parse requirement: <nil>: Invalid value: "a/b/c": a valid label key must consist'),
            (f"{'k' * 64}=x", "name part must be no more than 63 bytes"),
            ("a>x", "values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"),
        ],
    )
    def test_malformed_is_bad_request(self, text: str, said: str) -> None:
        """A malformed selector is a BadRequest worded as the API server's parser words it."""
        with pytest.raises(BadRequest) as caught:
            parse_labels(text)
        assert caught.value.message.startswith(said) if said.startswith(("unable", "found")) else (
            said in caught.value.message)

    def test_mapping_with_bad_value(self) -> None:
        """An equality map is checked like the string form."""
        with pytest.raises(BadRequest, match="must be no more than 63 bytes"):
            parse_labels({"app": "v" * 64})

    @pytest.mark.parametrize("pairs", [{"app": "v" * 64}, {"-app": "x"}, {"a/": "x"}])
    def test_mapping_fails_as_its_text_would(self, pairs: dict[str, str]) -> None:
        """A map's error is the one the text form ``key=value`` of its bad pair gives."""
        with pytest.raises(BadRequest) as from_map:
            parse_labels(pairs)
        with pytest.raises(BadRequest) as from_text:
            parse_labels(",".join(f"{k}={v}" for k, v in pairs.items()))
        assert from_map.value.message == from_text.value.message

    @pytest.mark.parametrize(("pairs", "said"), [
        ({"example.com/x": "a b"}, 'values[0][example.com/x]: Invalid value: "a b": '),
        ({"ok": "fine", "bad key": "x"}, '<nil>: Invalid value: "bad key": '),
    ])
    def test_mapping_names_its_bad_pair(self, pairs: dict[str, str], said: str) -> None:
        """A pair the text form could not even write (a space) is named by its key or value with its problem."""
        with pytest.raises(BadRequest) as caught:
            parse_labels(pairs)
        assert said in caught.value.message

    def test_a_map_not_seen_before_is_parsed_cheaply(self) -> None:
        """Each order lists with label maps of its own (issue 11: at 1000 orders more than the parse cache holds):
        a map the cache misses is checked pair by pair, not tokenized as text (291 calls for three pairs before,
        46 after)."""
        pairs = (("example.com/owner-name", "order-1"), ("example.com/owner-namespace", "tenant-a"),
                 ("example.com/owner-cluster", ""))
        assert calls(lambda: selectors._parse_pairs(pairs)) <= 60


class TestMatch:
    @pytest.mark.parametrize(
        ("text", "matches"),
        [
            ("app=web", True),
            ("app=db", False),
            ("app!=db", True),
            ("missing!=db", True),
            ("app in (db,web)", True),
            ("app in (db)", False),
            ("missing in (db)", False),
            ("app notin (db)", True),
            ("app notin (web)", False),
            ("missing notin (web)", True),
            ("app", True),
            ("missing", False),
            ("!missing", True),
            ("!app", False),
            ("app=web,tier=back", False),
            ("app=web,example.com/role=x", True),
        ],
    )
    def test_semantics(self, text: str, matches: bool) -> None:
        """Each operator matches as on a real cluster (!= and notin accept a missing key)."""
        assert parse_labels(text).matches(LABELS) is matches

    @pytest.mark.parametrize(
        ("labels", "in_web", "notin_web"),
        [({"app": ""}, True, False), ({"app": "web"}, True, False), ({"app": "db"}, False, True)],
    )
    def test_a_set_may_hold_the_empty_value(self, labels: dict[str, str], in_web: bool, notin_web: bool) -> None:
        """``(,web)`` and ``(web,)`` hold the empty value besides web, as on a real cluster: an object whose app
        label is empty is selected by ``in`` and not by ``notin``."""
        assert parse_labels("app in (,web)").matches(labels) is in_web
        assert parse_labels("app notin (web,)").matches(labels) is notin_web

    @pytest.mark.parametrize(("labels", "in_empty", "notin_empty"), [
        ({"app": ""}, True, False), ({"app": "web"}, False, True), ({}, False, True)])
    def test_an_empty_set_is_the_set_of_the_empty_value(self, labels: dict[str, str], in_empty: bool,
                                                         notin_empty: bool) -> None:
        """``app in ()`` is accepted, as a real API server accepts it (apimachinery reads ``()`` as the set of the
        empty value): it selects an object whose app label is empty, and ``notin ()`` every other object."""
        assert parse_labels("app in ()").matches(labels) is in_empty
        assert parse_labels("app notin ()").matches(labels) is notin_empty

    def test_object_with_labels(self) -> None:
        """An object is matched on its metadata.labels."""
        obj = {"metadata": {"name": "a", "labels": {"app": "web"}}}
        assert parse_labels("app=web").matches_object(obj) is True
        assert parse_labels("app=db").matches_object(obj) is False

    def test_object_without_labels(self) -> None:
        """An object with no labels matches only negative requirements."""
        assert parse_labels("!app").matches_object({"metadata": {}}) is True
        assert parse_labels("app").matches_object({"metadata": {}}) is False


class TestLabelSyntax:
    def test_valid_key_and_value(self) -> None:
        """Qualified keys and empty or alphanumeric values are valid."""
        assert label_key_errors("app.kubernetes.io/name") == []
        assert label_value_errors("") == []
        assert label_value_errors("a.b_c-d") == []

    def test_value_too_long(self) -> None:
        """A value over 63 characters is worded as the API server words it."""
        assert label_value_errors("v" * 64) == ["must be no more than 63 bytes"]

    def test_longest_keys_and_values(self) -> None:
        """A key's name part and a value may have 63 characters, a key's prefix 253: one more is refused."""
        prefix = ".".join(["p" * 63, "p" * 63, "p" * 63, "p" * 61])
        assert len(prefix) == 253
        assert label_key_errors(f"{prefix}/{'n' * 63}") == []
        assert label_value_errors("v" * 63) == []
        assert label_key_errors(f"{prefix}p/name") == ["prefix part must be no more than 253 bytes"]
        assert label_key_errors("n" * 64) == ["name part must be no more than 63 bytes"]

    def test_longest_subdomain(self) -> None:
        """An object name (a DNS subdomain) may have 253 characters, not 254."""
        assert is_subdomain("a" * 253) is True
        assert is_subdomain("a" * 254) is False

    def test_key_with_bad_prefix(self) -> None:
        """A prefix must be a DNS subdomain."""
        assert label_key_errors("Bad_Prefix/name")[0].startswith("prefix part a lowercase RFC 1123 subdomain")


class TestParseFields:
    def test_name_and_namespace(self) -> None:
        """metadata.name and metadata.namespace clauses parse, with =, == and !=, in sorted order (as apimachinery
        sorts the terms); a space is part of the field or value, as there."""
        selector = parse_fields("metadata.namespace!=b,metadata.name==c,metadata.name=a")
        assert selector.requirements == (
            FieldRequirement("metadata.name", "=", "c"),  # "metadata.name==c" sorts before "metadata.name=a"
            FieldRequirement("metadata.name", "=", "a"),
            FieldRequirement("metadata.namespace", "!=", "b"),
        )
        assert parse_fields("metadata.name= a").requirements == (FieldRequirement("metadata.name", "=", " a"),)
        with pytest.raises(BadRequest, match=r"^field label not supported:  metadata\.namespace$"):
            parse_fields("metadata.name=a, metadata.namespace!=b", labelled=True)

    def test_matches(self) -> None:
        """A field selector compares the object's field; a missing namespace reads as empty."""
        obj = {"metadata": {"name": "a"}}
        assert parse_fields("metadata.name=a").matches(obj) is True
        assert parse_fields("metadata.name!=a").matches(obj) is False
        assert parse_fields("metadata.namespace=").matches(obj) is True

    @pytest.mark.parametrize("empty", [None, ""])
    def test_no_field_selector_selects_everything(self, empty: str | None) -> None:
        """No field selector, or an empty one (a list without ``fieldSelector``), matches every object."""
        assert parse_fields(empty).matches({"metadata": {"name": "a", "namespace": "b"}}) is True

    def test_an_empty_term_is_skipped(self) -> None:
        """``metadata.name=a,`` selects as ``metadata.name=a`` (apimachinery skips empty terms)."""
        assert parse_fields("metadata.name=a,,") == parse_fields("metadata.name=a")
        assert parse_fields(",metadata.name=a").matches({"metadata": {"name": "a"}}) is True

    def test_unsupported_field(self) -> None:
        """Only supported fields may be selected on."""
        with pytest.raises(BadRequest, match=r'"spec\.x" is not a known field selector: only "metadata\.name", '
                                             r'"metadata\.namespace"'):
            parse_fields("spec.x=1")
        with pytest.raises(BadRequest, match=r"field label not supported: spec\.x"):
            parse_fields("spec.x=1", ("type",), labelled=True)

    def test_malformed(self) -> None:
        """A clause without an operator is a BadRequest."""
        with pytest.raises(BadRequest, match=r"^invalid selector: 'metadata\.name'; can't understand 'metadata\.name"):
            parse_fields("metadata.name")


class TestFittingSelector:
    def test_values_that_fit_are_selected_by_as_they_are(self) -> None:
        """A map whose values are all label values stays the map (the cheap, indexed selector)."""
        labels = {"a.io/name": "w", "a.io/cluster": ""}
        assert fitting_selector(labels) is labels

    def test_a_value_no_label_holds_is_only_required_to_be_there(self) -> None:
        """A 64-character value becomes a presence requirement the API server accepts; the exact value is the
        caller's to check, and carries_labels does."""
        long = "n" * 64
        selector = fitting_selector({"a.io/name": long, "a.io/namespace": "ns"})
        assert selector == "a.io/name,a.io/namespace=ns"
        parsed = parse_labels(selector)
        own = {"metadata": {"labels": {"a.io/name": long, "a.io/namespace": "ns"}}}
        other = {"metadata": {"labels": {"a.io/name": "w", "a.io/namespace": "ns"}}}
        assert parsed.matches_object(own) and parsed.matches_object(other)
        assert carries_labels(own, {"a.io/name": long, "a.io/namespace": "ns"})
        assert not carries_labels(other, {"a.io/name": long, "a.io/namespace": "ns"})
        assert not carries_labels({"metadata": {}}, {"a.io/name": long})
