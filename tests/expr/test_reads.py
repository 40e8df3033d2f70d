"""What an expression reads of each element of a list (decision 0040): every path, or None when an element or the
list is read whole, so a projected cache is used only where it holds everything a rule may look at."""

from __future__ import annotations

import pytest

from engine.expr.reads import element_reads, merge_reads


@pytest.mark.parametrize(("source", "expected"), [
    ("claims[].metadata.name", {("metadata", "name")}),
    ("claims[].{a: spec.x, b: metadata.labels.\"k/l\" || ''}", {("spec", "x"), ("metadata", "labels", "k/l")}),
    ("claims[?status.id != `null`].metadata.name", {("status", "id"), ("metadata", "name")}),
    ("claims[0].status.conditions[0].type", {("status", "conditions", "[]", "type")}),
    ("claims[].spec | [0]", {("spec",)}),  # a subtree passed on is read whole
    ("keys(claims[0].spec)", {("spec",)}),
    ("claims.foo", set()),  # a field of the list itself: null either way
    ("other[].spec", set()),
])
def test_the_paths_read_of_each_element(source: str, expected: set[tuple[str, ...]]) -> None:
    assert element_reads(source, "claims") == expected


@pytest.mark.parametrize("source", [
    "claims", "length(claims)", "claims[0]", "first(claims).x", "sort_by(claims, &metadata.name)",
    "claims[].status.*", "to_string(@)", "claims[]", "[claims][0][0].spec",
])
def test_a_list_or_element_read_whole_has_no_projection(source: str) -> None:
    assert element_reads(source, "claims") is None


def test_a_where_clause_reads_its_item() -> None:
    assert element_reads("item.metadata.labels.a != order.metadata.name", "item", element=True) == {
        ("metadata", "labels", "a")}
    assert element_reads("contains(names, item)", "item", element=True) is None


def test_merged_reads_keep_the_widest_path() -> None:
    assert merge_reads([frozenset({("spec", "x"), ("status",)}), frozenset({("status", "id")})]) == (
        ("spec", "x"), ("status",))
    assert merge_reads([frozenset({("spec",)}), None]) is None
