"""Our CRD checks (``crd_check.crd_refusal``, which ``engine lint`` and the memory cluster share) against a real
API server's answers to the corpus (``corpus/*.yaml``, ``corpus/answers.json``).

Every case must get the answer the real server gave: the same verdict (accepted, 422 Invalid, 400 BadRequest),
for a refusal the same causes (field path and message) or the same message. Where we differ on purpose the case
is listed below with the reason, and tested as a difference, so the list stays true. A real-server test keeps
``answers.json`` what the server answers today.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from engine.rules.crd_lint import file_field, steps
from offline.realkube import KubeServer
from tests.crds.corpus_kit import Case, RealServer, load_answers, load_cases, ours

Obj = dict[str, Any]

CASES = load_cases()
ANSWERS = load_answers()

MISSED: dict[str, str] = {
    "rule-unknown-function": "a method cel-go does not know is not refused: the checker types what it does not know"
                             " as dyn, since a list of every Kubernetes CEL library function that missed one would"
                             " refuse a good CRD",
    "cel-bind-not-in-the-crd-environment": "a name used as the receiver of a call (cel.bind, math.greatest) is taken"
                                           " for a library's namespace (optional.of, ...), not checked against the"
                                           " libraries the CRD environment has",
    "math-greatest-not-in-the-crd-environment": "as cel-bind-not-in-the-crd-environment",
    "rule-cost-too-high": "CEL cost estimation (cel-go's static estimator and the per-CRD budget) is not emulated",
    "message-expression-string-conversion-too-costly": "as rule-cost-too-high",
    "rule-old-self-unbounded-list-also-too-costly": "as rule-cost-too-high: its oldSelf refusal is found, its cost"
                                                    " refusals are not",
}
"""Refusals of the real server our checks miss, and why (a missed refusal, never a false one)."""

WORDED_OTHERWISE: dict[str, str] = {
    "rule-syntax-error": "celpy's parser (lark) cannot say what ANTLR expected, nor point past the end: the cause's"
                         " path and 'Syntax error' agree, the rest of the words and the column do not",
    "rule-unbalanced": "as rule-syntax-error",
    "rule-message-expression-syntax-error": "as rule-syntax-error",
    "rule-two-bad-of-three": "as rule-syntax-error, for its first rule",
    "name-generate-name": "the server names the object before validating it, with a random suffix",
    "no-storage-version": "the API server prints spec.versions as its internal Go structs (every field, nested"
                          " schemas); ours prints each version's name, served and storage",
    "two-storage-versions": "as no-storage-version",
    "duplicate-version-names": "as no-storage-version",
    "status-subresource-root-any-of": "the API server prints the whole root schema as its Go struct; ours {...}",
}
"""Refusals where the verdict and every cause's field path agree but the message's words do not, and why."""


def _case_id(case: Case) -> str:
    return case.id


def _fields(answer: Obj) -> list[str]:
    return sorted(field for field, _ in answer.get("causes") or [])


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_our_checks_answer_as_the_real_server_did(case: Case) -> None:
    """The verdict, each cause's field and message (or the 400's message) as the real server gave them."""
    real, mine = ANSWERS[case.id], ours(case.crd)
    if case.id in MISSED:
        assert real["status"] != 201, "listed as a missed refusal, but the real server accepts it"
        assert (mine["status"], _fields(mine)) != (real["status"], _fields(real)), f"{case.id} now agrees: unlist it"
        assert mine["status"] == 201 or set(_fields(mine)) < set(_fields(real)), "a missed refusal only"
    elif case.id in WORDED_OTHERWISE:
        assert (mine["status"], _fields(mine)) == (real["status"], _fields(real))
        assert mine != real, f"{case.id} now agrees word for word: unlist it"
    else:
        assert mine == real, f"{case.file}: {case.why or case.id}"


def test_the_lists_name_corpus_cases() -> None:
    """Every listed difference is a case of the corpus."""
    ids = {case.id for case in CASES}
    assert set(MISSED) <= ids and set(WORDED_OTHERWISE) <= ids
    assert set(ANSWERS) == ids, "answers.json is not the corpus's: python -m tests.crds.corpus_kit record"


def test_the_corpus_has_good_and_bad_cases_of_every_kind() -> None:
    """Each corpus file holds CRDs the real server accepts and ones it refuses."""
    by_file: dict[str, set[int]] = {}
    for case in CASES:
        by_file.setdefault(case.file, set()).add(ANSWERS[case.id]["status"])
    assert all(201 in codes and codes - {201} for name, codes in by_file.items() if name != "decoding.yaml"), by_file
    assert by_file["decoding.yaml"] >= {400, 422}


@pytest.mark.parametrize("case", [c for c in CASES if ANSWERS[c.id]["status"] == 422], ids=_case_id)
def test_lint_finds_each_cause_in_the_crd_file(case: Case) -> None:
    """Each cause about a value the file has, its field read back to where it is written in a v1 CRD file (the
    API server names a schema every version shares spec.validation, ...), is there, every step of it; so
    ``engine lint`` points at the field itself (a cause about a missing field points at its parent)."""
    for field, message in ANSWERS[case.id]["causes"]:
        if message.startswith(_ABOUT_ABSENT) or field in _NOT_WRITTEN.get(case.id, ()):
            continue
        path = steps(file_field(field))
        found = _resolved(case.crd, path)
        assert found == len(path), f"{field} -> {path}: only {path[:found]} is in the file"


_ABOUT_ABSENT = ("Required value", "Invalid value: null", 'Invalid value: ""')


_NOT_WRITTEN: dict[str, tuple[str, ...]] = {
    "name-generate-name": ("metadata.name",),
    "kind-missing": ("spec.names.kind",),
    "kind-and-singular-missing": ("spec.names.kind", "spec.names.singular", "spec.names.listKind"),
    "versions-missing": ("spec.versions", "status.storedVersions"),
    "group-missing": ("spec.group", "metadata.name"),
    "plural-missing": ("spec.names.plural", "metadata.name"),
}
"""Causes whose field the file does not have at all (the CRD leaves it out, or the server defaults it)."""


def _resolved(doc: Any, path: list[str | int]) -> int:
    """How many steps of ``path`` lead through ``doc``."""
    for count, step in enumerate(path):
        in_map = isinstance(doc, dict) and step in doc
        in_list = isinstance(doc, list) and isinstance(step, int) and 0 <= step < len(doc)
        if not (in_map or in_list):
            return count
        doc = doc[step]
    return len(path)


@pytest.fixture(scope="module")
def real_server(real_cluster: Callable[[str], KubeServer]) -> RealServer:
    server = real_cluster("crds")
    return RealServer(server.url, server.token(), server.ca_pem)


_GENERATED = re.compile(r'"widgets\.[a-z0-9]{5}"')


def test_the_recorded_answers_are_the_real_servers(real_server: RealServer) -> None:
    """answers.json is what the real server answers today (server-side dry runs; a random generated name aside)."""
    differing = []
    for case in CASES:
        answer = real_server.create(case.crd)
        if case.id == "name-generate-name":
            answer = {**answer, "causes": [[f, _GENERATED.sub('"widgets.?"', m)] for f, m in answer["causes"]]}
            recorded = {**ANSWERS[case.id], "causes": [[f, _GENERATED.sub('"widgets.?"', m)]
                                                        for f, m in ANSWERS[case.id]["causes"]]}
        else:
            recorded = ANSWERS[case.id]
        if answer != recorded:
            differing.append(case.id)
    assert differing == [], "re-record with python -m tests.crds.corpus_kit record and review the diff"
