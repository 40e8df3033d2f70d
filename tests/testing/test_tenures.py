"""The tenure check over a request log (offline.tenures) passes a clean handover and flags two members on
one order at once: interleaved, overlapping, without the leader's relabel, or unattributed."""

from __future__ import annotations

from offline.emulator.requestlog import RequestRecord
from offline.tenures import Touch, member_of, tenures, violations

ORDER = ("", "tenant-a", "u1")
PATH = "/apis/c5c3.io/v1alpha1/namespaces/tenant-a/keystoneusers/u1"
AGENT = "c5c3-order-engine/0.1.0 (member {})"


def request(start: float, member: str | None, method: str = "GET", *, end: float | None = None,
            code: int = 200) -> RequestRecord:
    agent = AGENT.format(member) if member else "kubectl/v1.30"
    ended = start + 0.01 if end is None else end
    return RequestRecord(start, ended, 1e9 + start, 1e9 + ended, method, PATH, agent, code)


def touch(start: float, member: str | None, method: str = "GET", *, end: float | None = None) -> Touch:
    return Touch(ORDER, request(start, member, method, end=end))


def relabel(start: float, *, code: int = 200) -> Touch:
    return Touch(ORDER, request(start, "leader-9", "PATCH", code=code), label_write=True)


HANDOVER = [
    relabel(1.0),                                          # assigned to a
    touch(2.0, "a-1"), touch(2.1, "a-1", "PUT"),           # a's passes
    relabel(3.0),                                          # the drain label, while a still works
    touch(3.5, "a-1", "PUT"),                              # a's pass, then its hand-back
    relabel(4.0),                                          # labelled for b
    touch(5.0, "b-2"), touch(5.1, "b-2", "PUT"),
]


def test_a_handover_through_the_leader_s_relabel_passes() -> None:
    assert violations(HANDOVER) == []
    assert [(t.member, t.requests) for t in tenures(HANDOVER)[ORDER]] == [("a-1", 3), ("b-2", 2)]
    assert member_of(AGENT.format("shard-0-1a2b3c")) == "shard-0-1a2b3c"


def test_an_interleaving_without_overlapping_requests_is_flagged() -> None:
    interleaved = [*HANDOVER[:3], touch(2.5, "b-2"), touch(2.8, "a-1"), *HANDOVER[3:]]
    found = violations(interleaved)
    assert any("member b-2 worked on it after member a-1's last request" in p for p in found), found
    assert any("member a-1 worked on it after member b-2's last request" in p for p in found), found


def test_a_request_begun_while_another_member_s_is_unanswered_is_flagged() -> None:
    slow = [relabel(1.0), touch(2.0, "a-1", "PUT", end=6.0), relabel(4.0), touch(5.0, "b-2")]
    found = violations(slow)
    assert len(found) == 1 and "member b-2's GET" in found[0] and "while member a-1's tenure" in found[0], found


def test_a_failed_relabel_does_not_hand_over_and_an_unnamed_client_is_flagged() -> None:
    found = violations([relabel(1.0), touch(2.0, "a-1"), relabel(3.0, code=409), touch(4.0, "b-2"),
                        touch(5.0, None)])
    assert any("member b-2 worked on it after member a-1's last request" in p for p in found), found
    assert any("names no shard member in its User-Agent 'kubectl/v1.30'" in p for p in found), found
    assert any("member a-1 worked on it first" in p for p in violations([touch(2.0, "a-1")]))


def test_a_member_acting_on_the_label_s_event_before_the_write_s_answer_passes() -> None:
    """The server sends the label's watch event when it stores the write, before the write's answer: the new owner
    may send its first request inside the relabel's own span. Only a tenure begun before the relabel began, or
    without one, is flagged."""
    slow_relabel = Touch(ORDER, request(1.0, "leader-9", "PATCH", end=3.0), label_write=True)
    assert violations([slow_relabel, touch(2.0, "a-1")]) == []
    assert any("member a-1 worked on it first" in p for p in violations([slow_relabel, touch(0.5, "a-1")]))
