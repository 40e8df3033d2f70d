"""The pass scope: names resolved on first read, once, whichever way an expression or a template reads them."""

from __future__ import annotations

from typing import Any

from engine.expr import compile_query, compile_text
from engine.reconcile.context import UNKNOWN, Scope


def scope_counting() -> tuple[Scope, list[str]]:
    resolved: list[str] = []

    def resolve(name: str) -> Any:
        known = {"lazy": {"v": 1}, "none": None, "falsy": ""}
        if name not in known:
            return UNKNOWN
        resolved.append(name)
        return known[name]

    return Scope({"given": "g"}, resolve, lambda name: name in ("lazy", "none", "falsy")), resolved


def test_a_name_is_resolved_on_first_read_and_once() -> None:
    scope, resolved = scope_counting()
    assert resolved == []
    assert scope.get("lazy") == {"v": 1}
    assert scope["lazy"] == {"v": 1} and scope.get("lazy") == {"v": 1}
    assert compile_query("lazy.v").evaluate(scope) == 1
    assert compile_text("{{ lazy.v }}-{{ none }}-{{ falsy }}").render(scope) == "1--"
    assert compile_query("[none, falsy, given]").evaluate(scope) == [None, "", "g"]
    assert sorted(resolved) == ["falsy", "lazy", "none"]  # each once


def test_an_unknown_name_reads_as_null_and_is_not_held() -> None:
    scope, resolved = scope_counting()
    assert scope.get("unknown") is None and scope["unknown"] is None
    assert compile_query("unknown.x || 'd'").evaluate(scope) == "d"
    assert "unknown" not in scope and not dict.__contains__(scope, "unknown") and resolved == []


def test_a_child_scope_reads_through_to_its_parent() -> None:
    scope, resolved = scope_counting()
    child = scope.child(item={"k": "i"})
    assert compile_query("[item.k, lazy.v, given, unknown]").evaluate(child) == ["i", 1, "g", None]
    assert child.get("lazy") == {"v": 1} and scope.get("lazy") == {"v": 1}
    assert resolved == ["lazy"]
