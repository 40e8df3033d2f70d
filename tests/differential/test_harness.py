"""The harness itself, without servers: normalisation ignores exactly what ``IGNORED`` names, and a difference
anywhere else is reported with the request and both answers."""

from __future__ import annotations

from tests.differential.harness import Answer, Call, Case, Runner, call, report


class FakeLeg:
    """A leg answering from a function of the request, counting nothing."""

    def __init__(self, name: str, answer: object) -> None:
        self.name = name
        self._answer = answer

    def send(self, request: Call) -> Answer:
        if request.path == "/api/v1/namespaces":
            return Answer(201, {"kind": "Namespace"})
        return self._answer(request)  # type: ignore[operator,no-any-return]

    def close(self) -> None:
        pass


def stored(uid: str, rv: str, stamp: str, **extra: object) -> Answer:
    return Answer(201, {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {
        "name": "a", "uid": uid, "resourceVersion": rv, "creationTimestamp": stamp,
        "managedFields": [{"manager": "m", "operation": "Update", "time": stamp, "fieldsV1": {"f:data": {}}}]},
        **extra})


def test_uids_resource_versions_and_times_are_ignored() -> None:
    """Two servers numbering and dating differently agree when everything else is the same."""
    one = FakeLeg("one", lambda r: stored("u-1", "17", "2026-01-01T00:00:00Z", data={"k": "v"}))
    two = FakeLeg("two", lambda r: stored("u-2", "4", "2027-05-05T10:00:00Z", data={"k": "v"}))
    assert Runner([one, two]).run(Case("same", [call("POST", "/x/{ns}")])) == []


def test_a_no_op_write_that_moves_the_resource_version_is_a_difference() -> None:
    """resourceVersions are numbered by first appearance: a leg whose second answer has a new one differs from
    a leg whose second answer keeps the first."""
    answers = iter([stored("u", "5", "t"), stored("u", "5", "t")])
    moving = iter([stored("u", "5", "t"), stored("u", "6", "t")])
    one = FakeLeg("one", lambda r: next(answers))
    two = FakeLeg("two", lambda r: next(moving))
    found = Runner([one, two]).run(Case("noop", [call("PUT", "/x"), call("PUT", "/x")]))
    assert [d.step for d in found] == [1]
    assert 'body.metadata.resourceVersion: one "<rv:1>" / two "<rv:2>"' in str(found[0])


def test_a_divergence_shows_the_request_both_answers_and_the_difference() -> None:
    one = FakeLeg("real", lambda r: stored("u", "1", "t", data={"k": "v"}))
    two = FakeLeg("emulator", lambda r: stored("u", "1", "t", data={"k": "w"}))
    found = Runner([one, two]).run(Case("data", [call("POST", "/api/v1/namespaces/{ns}/configmaps", {"data": 1})]))
    text = report(found)
    assert "case 'data', step 0: POST /api/v1/namespaces/d1/configmaps" in text
    assert 'body.data.k: real "v" / emulator "w"' in text
    assert "--- real vs emulator, where they differ" in text


def test_references_resolve_per_leg() -> None:
    """``$rv(step)`` is each leg's own resourceVersion of that step."""
    seen: dict[str, list[Call]] = {"one": [], "two": []}

    def answering(name: str, rv: str) -> FakeLeg:
        def answer(request: Call) -> Answer:
            seen[name].append(request)
            return stored("u", rv, "t")
        return FakeLeg(name, answer)

    Runner([answering("one", "10"), answering("two", "3")]).run(Case("refs", [
        call("POST", "/x/{ns}", name="made"), call("PUT", "/x/{ns}", {"metadata": {"resourceVersion": "$rv(made)"}}),
    ]))
    assert seen["one"][1].body == {"metadata": {"resourceVersion": "10"}}
    assert seen["two"][1].body == {"metadata": {"resourceVersion": "3"}}
    assert seen["one"][1].path == "/x/d1"
