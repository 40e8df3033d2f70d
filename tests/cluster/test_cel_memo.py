"""The memo of CEL rule verdicts: a remembered verdict reads exactly as a fresh one, and the memo stays bounded."""

from __future__ import annotations

import copy
import random
import tracemalloc
from typing import Any

import celpy
import pytest

from engine.cluster.api import Invalid
from offline.cluster.admission import CrdAdmission
from offline.cluster.admission.celreads import project, reads
from offline.cluster.admission.memo import PASSED, Verdict, VerdictMemo
from tests.cluster.test_crd_admission import INTERVAL, STRING, make_crd, obj_schema, rule, widget

Obj = dict[str, Any]


def admission(spec_schema: Obj, *, memo_bytes: int | None = None, **kwargs: Any) -> CrdAdmission:
    crd = make_crd(spec_schema, **kwargs)
    return CrdAdmission(crd, "v1") if memo_bytes is None else CrdAdmission(crd, "v1", memo_bytes=memo_bytes)


def outcome(adm: CrdAdmission, obj: Obj, old: Obj | None = None) -> Any:
    """What a client sees: the stored object, or the rejection's text and causes."""
    try:
        return adm.admit(copy.deepcopy(obj), copy.deepcopy(old))
    except Invalid as error:
        return str(error), [(c.field, c.reason, c.message) for c in error.causes]


REF = obj_schema(name=STRING, namespace=STRING)
REF["x-kubernetes-validations"] = [
    rule("self.name == oldSelf.name", "ref.name is immutable"),
    rule(
        "(has(self.__namespace__) ? self.__namespace__ : '') == "
        "(has(oldSelf.__namespace__) ? oldSelf.__namespace__ : '')",
        "ref.namespace is immutable",
    ),
]
GENERATION: Obj = {
    "type": "integer",
    "x-kubernetes-validations": [rule("self >= oldSelf", messageExpression="'was ' + string(oldSelf)")],
}
TAGS: Obj = {
    "type": "array",
    "items": STRING,
    "x-kubernetes-validations": [
        rule("size(self) <= 3", "at most three tags", reason="FieldValueTooMany", fieldPath=".x"),
    ],
}
SPEC = obj_schema(
    ref=REF,
    generation=GENERATION,
    tags=TAGS,
    rotation=obj_schema(interval=INTERVAL),
    limit={"type": "integer", "x-kubernetes-validations": [rule("100 / self > 1", "limit below 50")]},
    userName=STRING,
)
SPEC["x-kubernetes-validations"] = [
    rule(
        "!has(self.tags) || self.tags.all(t, t.startsWith('t-'))",
        messageExpression="'bad tags: ' + self.tags.join(',')",
    )
]
ROOT_RULES = [
    rule("size(self.metadata.name) <= 8", "name is too long"),
    rule(
        "(has(self.spec.userName) ? self.spec.userName : self.metadata.name) == "
        "(has(oldSelf.spec.userName) ? oldSelf.spec.userName : oldSelf.metadata.name)",
        "userName is immutable",
        reason="FieldValueForbidden",
    ),
]

FAILING: list[tuple[str, Obj, Obj | None]] = [
    ("a message", widget({"rotation": {"interval": "30s"}}), None),
    ("an evaluation error", widget({"rotation": {"interval": "soon"}}), None),
    ("an evaluation error of division", widget({"limit": 0}), None),
    ("a messageExpression on self", widget({"tags": ["t-a", "b"]}), None),
    ("a reason and a fieldPath", widget({"tags": ["t-a", "t-b", "t-c", "t-d"]}), None),
    ("a root rule", widget({}, name="much-too-long"), None),
    ("a messageExpression on oldSelf", widget({"generation": 1}), widget({"generation": 5})),
    (
        "a transition rule on an escaped name",
        widget({"ref": {"name": "a", "namespace": "y"}}),
        widget({"ref": {"name": "a", "namespace": "x"}}),
    ),
    ("a transition root rule", widget({"userName": "bob"}), widget({"userName": "alice"})),
]


@pytest.mark.parametrize(("case", "obj", "old"), FAILING, ids=[case for case, _, _ in FAILING])
def test_a_remembered_failure_reads_exactly_as_a_fresh_one(case: str, obj: Obj, old: Obj | None) -> None:
    """The second admission of the same write is answered from the memo (no rule is evaluated again), and its
    rejection has the text and causes of the first and of an admission that remembers nothing."""
    fresh = outcome(admission(SPEC, root_rules=ROOT_RULES, memo_bytes=0), obj, old)
    warm = admission(SPEC, root_rules=ROOT_RULES)
    first = outcome(warm, obj, old)
    misses, hits = warm.memo.misses, warm.memo.hits
    second = outcome(warm, obj, old)
    assert isinstance(fresh, tuple), case
    assert first == second == fresh
    assert warm.memo.misses == misses
    assert warm.memo.hits > hits


def test_a_remembered_pass_reads_exactly_as_a_fresh_one() -> None:
    obj = widget({"ref": {"name": "a"}, "generation": 2, "tags": ["t-a"], "rotation": {"interval": "1h"}, "limit": 5})
    old = widget({"ref": {"name": "a"}, "generation": 1, "tags": [], "limit": 5})
    warm = admission(SPEC, root_rules=ROOT_RULES)
    first = outcome(warm, obj, old)
    misses = warm.memo.misses
    assert outcome(warm, obj, old) == first == outcome(admission(SPEC, root_rules=ROOT_RULES, memo_bytes=0), obj, old)
    assert warm.memo.misses == misses


def test_a_change_the_rules_do_not_read_is_answered_from_the_memo_and_one_they_read_is_judged_again() -> None:
    """Status writes leave every read path alone: after the first update (whose transition rules meet that
    pair of values for the first time) no rule runs. A changed name, namespace (escaped in CEL) or the presence
    of an optional field is judged anew, so the memo never answers for what a rule can see."""
    adm = admission(SPEC, root_rules=ROOT_RULES)
    stored = adm.admit(widget({"ref": {"name": "a", "namespace": "x"}}, name="short"))
    misses = adm.memo.misses
    stored = adm.admit({**stored, "status": {"phase": "Pending"}}, stored)
    assert adm.memo.misses == misses + 3  # the transition rules: ref.name, ref.namespace, the root's userName
    misses = adm.memo.misses
    adm.admit({**stored, "status": {"phase": "Ready", "seen": 3}}, stored)
    assert adm.memo.misses == misses

    assert outcome(adm, widget({"ref": {"name": "a", "namespace": "x"}}, name="far-too-long"))[1] == [
        ("<nil>", "FieldValueInvalid", 'Invalid value: name is too long')
    ]
    moved = widget({"ref": {"name": "a", "namespace": "y"}}, name="short")
    assert outcome(adm, moved, stored)[1] == [
        ("spec.ref", "FieldValueInvalid", 'Invalid value: ref.namespace is immutable')
    ]
    renamed = widget({"ref": {"name": "a", "namespace": "x"}, "userName": "short2"}, name="short")
    assert outcome(adm, renamed, stored)[1] == [("<nil>", "FieldValueForbidden", "Forbidden: userName is immutable")]


def test_random_writes_are_judged_as_without_a_memo() -> None:
    """Random creates and updates over every rule above: the memo (warm, and small enough to evict) agrees
    with an admission that remembers nothing, rejection by rejection."""
    chosen = random.Random(13)

    def pick(good: list[Any], bad: list[Any]) -> Any:
        return chosen.choice(bad if chosen.random() < 0.15 else good)

    def spec() -> Obj:
        candidates: dict[str, Any] = {
            "ref": {"name": chosen.choice("ab")}
            | ({"namespace": chosen.choice("xy")} if chosen.random() < 0.5 else {}),
            "generation": chosen.randint(0, 3),
            "tags": pick([["t-a"], ["t-b", "t-d"], []], [["c"], ["t-a", "t-b", "t-d", "t-e"]]),
            "rotation": {"interval": pick(["1h", "0s", "720h"], ["30s", "soon", "87601h"])},
            "limit": pick([1, 5], [0, 60]),
            "userName": chosen.choice(["u", "v"]),
        }
        return {key: value for key, value in candidates.items() if chosen.random() < 0.6}

    fresh = admission(SPEC, root_rules=ROOT_RULES, memo_bytes=0)
    warm = admission(SPEC, root_rules=ROOT_RULES, memo_bytes=16 * 1024)
    stored: list[Obj] = []
    rejected = 0
    for _ in range(400):
        obj = widget(spec(), name=pick(["w", "w2"], ["much-too-long"]), status={"n": chosen.random()})
        old = chosen.choice(stored) if stored and chosen.random() < 0.7 else None
        answer = outcome(warm, obj, old)
        assert answer == outcome(fresh, obj, old)
        if isinstance(answer, dict):
            stored.append(answer)
        else:
            rejected += 1
    assert 50 < rejected < 350
    assert warm.memo.hits > warm.memo.misses
    assert len(stored) > 50


def test_the_memo_stays_within_its_budget() -> None:
    """Thousands of distinct inputs: the memo keeps the most recent within its budget, not all of them."""
    adm = admission(
        obj_schema(), root_rules=[rule("size(self.metadata.name) <= 8", "name is too long")], memo_bytes=64 * 1024
    )
    for n in range(3000):
        adm.admit(widget({}, name=f"w{n:05}"))
    assert adm.memo.weight <= 64 * 1024
    assert 50 < len(adm.memo) < 3000
    misses = adm.memo.misses
    adm.admit(widget({}, name="w02999"))  # the latest: still held
    assert (adm.memo.hits, adm.memo.misses) == (1, misses)
    adm.admit(widget({}, name="w00000"))  # the first: dropped long ago, judged again
    assert (adm.memo.hits, adm.memo.misses) == (1, misses + 1)


def test_the_budget_counts_at_least_what_the_entries_take() -> None:
    """What the memo counts against its budget is no less than the memory its entries take (tracemalloc)."""
    memo = VerdictMemo(10**9)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(5000):
            verdict = PASSED if n % 2 else Verdict(passed=False, detail=f"no such key: field{n}")
            key = (n % 7, f"{{'metadata': {{'name': 'o{n:05}'}}}}", f"{{'name': '{n}'}}" if n % 3 else None)
            memo.put(key, verdict)
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(memo) == 5000
    assert taken <= memo.weight


def test_an_entry_heavier_than_a_sixteenth_of_the_budget_is_not_kept() -> None:
    memo = VerdictMemo(16 * 1024)
    memo.put((1, "x" * 2000, ""), PASSED)
    memo.put((1, "y", ""), PASSED)
    assert memo.get((1, "x" * 2000, "")) is None
    assert memo.get((1, "y", "")) is PASSED


def _reads(text: str) -> Any:
    return reads(celpy.Environment().compile(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("size(self.metadata.name) <= 63", {"self": {"metadata": {"name": None}}}),
        ("has(self.spec.userName) ? self.spec.userName : ''", {"self": {"spec": {"userName": None}}}),
        ("self.a.b == oldSelf.a", {"self": {"a": {"b": None}}, "oldSelf": {"a": None}}),
        ("self.a.b == 1 && self.a == {}", {"self": {"a": None}}),
        ("self == oldSelf", {"self": None, "oldSelf": None}),
        ("self.items.all(x, x.name != '')", {"self": {"items": None}}),
        ("self.items[0].name == 'x'", {"self": {"items": None}}),
        ("(self).a == 1", {"self": None}),
        ("size(self) > 0", {"self": None}),
        ("1 == 1", {}),
    ],
)
def test_reads_are_the_selections_from_each_variable_and_anything_else_reads_whole(text: str, expected: Any) -> None:
    assert _reads(text) == expected


def test_a_projection_keeps_the_read_paths_by_their_property_names() -> None:
    value = {"metadata": {"name": "n", "uid": "u"}, "spec": {"namespace": "x", "other": 1}, "status": {}}
    trie = {"metadata": {"name": None}, "spec": {"__namespace__": None, "absent": None}}
    assert project(value, trie) == {"metadata": {"name": "n"}, "spec": {"namespace": "x"}}
    assert project({"spec": "not a map"}, trie) == {"spec": "not a map"}
    assert project(value, None) is value
