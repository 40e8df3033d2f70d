"""`present` matching and how differences are shown (never a Secret's data)."""

from __future__ import annotations

from offline.scenario.match import MISSING, match
from offline.scenario.report import diff, mask_secret

LIVE = {
    "apiVersion": "v1",
    "kind": "Thing",
    "metadata": {"name": "t", "labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]},
    "spec": {"n": 3, "flag": True, "items": [{"k": 1, "extra": 2}, {"k": 2}]},
}


def paths(expected: dict[str, object], live: dict[str, object] = LIVE) -> list[str]:
    return [m.path for m in match(expected, live)[0]]


class TestMatch:
    def test_mappings_match_by_key_and_the_live_side_may_have_more(self) -> None:
        """Only the keys written are compared."""
        assert paths({"metadata": {"labels": {"a": "1"}}, "spec": {"n": 3}}) == []

    def test_lists_match_element_by_element_with_the_same_length(self) -> None:
        """A list of the wrong length fails; elements match as partial objects."""
        assert paths({"spec": {"items": [{"k": 1}, {"k": 2}]}}) == []
        assert paths({"metadata": {"finalizers": ["x"]}}) == ["metadata.finalizers"]
        assert paths({"spec": {"items": [{"k": 1}, {"k": 3}]}}) == ["spec.items[1].k"]

    def test_scalars_compare_strictly(self) -> None:
        """A boolean never equals a number, a string never equals an int; 1 equals 1.0."""
        assert paths({"spec": {"flag": 1}}) == ["spec.flag"]
        assert paths({"spec": {"n": "3"}}) == ["spec.n"]
        assert paths({"spec": {"n": 3.0}}) == []

    def test_null_matches_only_a_missing_field(self) -> None:
        """Expected null: the field is absent (or null); a present value fails."""
        assert paths({"status": None, "spec": {"gone": None}}) == []
        assert paths({"spec": {"n": None}}) == ["spec.n"]

    def test_a_missing_field_fails(self) -> None:
        """A field the live object lacks is a mismatch shown as missing."""
        mismatches, projected = match({"status": {"phase": "Ready"}}, LIVE)
        assert [m.note for m in mismatches] == ["missing"]
        assert projected == {"status": MISSING}

    def test_keys_in_parentheses_are_jmespath_on_their_node(self) -> None:
        """`(expr)` is evaluated on the mapping it sits in, with the engine's functions."""
        assert paths({"metadata": {"(length(finalizers))": 2, "(labels.b)": "2"}}) == []
        assert paths({"(spec.n > `5`)": True}) == ["(spec.n > `5`)"]
        assert paths({"(sha256('a') == sha256('a'))": True}) == []

    def test_a_failing_expression_is_a_mismatch_not_a_crash(self) -> None:
        """An expression that cannot be evaluated says so in the mismatch."""
        mismatches, _ = match({"(length(`3`))": 1}, LIVE)
        assert len(mismatches) == 1 and "the expression fails" in mismatches[0].note

    def test_the_projection_holds_only_what_was_written(self) -> None:
        """The live side of a diff shows the expected keys only."""
        _, projected = match({"metadata": {"name": "t"}, "(spec.n)": 4}, LIVE)
        assert projected == {"metadata": {"name": "t"}, "(spec.n)": 3}


class TestReport:
    def test_secret_data_is_masked_on_both_sides(self) -> None:
        """Equal values read <hidden>; differing ones say so with a length only."""
        want = {"kind": "Secret", "data": {"a": "eA==", "b": "eQ==", "c": "eg=="}}
        got = {"kind": "Secret", "data": {"a": "eA==", "b": "c2VjcmV0", "c": MISSING}}
        masked_want, masked_got = mask_secret(want, got)
        assert masked_want["data"] == {"a": "<hidden>", "b": "<hidden>", "c": "<hidden>"}
        assert masked_got["data"] == {"a": "<hidden>", "b": "<hidden: differs, 8 chars>", "c": MISSING}
        assert "c2VjcmV0" not in "\n".join(diff(masked_want, masked_got))

    def test_the_diff_is_unified_yaml_and_trimmed(self) -> None:
        """Expected lines start with -, live ones with +; a long diff is cut with a count."""
        lines = diff({"spec": {"n": 4}}, {"spec": {"n": 3}})
        assert lines[:2] == ["--- expected", "+++ live"] and "-  n: 4" in lines and "+  n: 3" in lines
        long = diff({"k": [str(i) for i in range(100)]}, {"k": [str(i) for i in range(100, 200)]})
        assert len(long) == 41 and long[-1].endswith("more diff lines)")
