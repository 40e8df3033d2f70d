"""Whether shard members ever worked on one order at once, judged from an API server's request log alone.

The operator's own records come from the code under test, which could be wrong the same way its behaviour is, so
this reads what the API server saw: the emulator's request log, each request attributed to a member by the
User-Agent a ``--sharded`` replica sends and to an order by the caller (``Touch``). An order's requests, sorted by
start, fall into tenures: the longest runs sent by one member. ``violations`` holds that each tenure starts after
the previous one ended and after a label write of the leader's in between (a member gets an order only from the
leader's label, decision 0027), and says what the log cannot show.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from offline.emulator.requestlog import RequestRecord

MEMBER_AGENT = re.compile(r"\(member ([a-z0-9]([-a-z0-9]*[a-z0-9])?)\)")
"""The member name a shard member's User-Agent carries."""


def member_of(user_agent: str) -> str | None:
    """The shard member that sent a request, from its User-Agent; None when it names none."""
    found = MEMBER_AGENT.search(user_agent)
    return found.group(1) if found else None


@dataclass(frozen=True)
class Touch:
    """A request that names an order (``order``: any key the caller chooses), and whether it is the leader's
    label write on it (successful or not: only a 2xx one counts as a relabel)."""

    order: Hashable
    record: RequestRecord
    label_write: bool = False


@dataclass(frozen=True)
class Tenure:
    """One member's unbroken run of requests on one order: from the start of its first to the end of the last
    one answered."""

    member: str
    started: float
    ended: float
    first: RequestRecord
    last: RequestRecord
    """The last request to start."""
    requests: int


def tenures(touches: Iterable[Touch]) -> dict[Hashable, list[Tenure]]:
    """Each order's tenures, in order (label writes and requests that name no member left out)."""
    by_order: dict[Hashable, list[tuple[str, RequestRecord]]] = {}
    for touch in touches:
        member = member_of(touch.record.user_agent)
        if not touch.label_write and member is not None:
            by_order.setdefault(touch.order, []).append((member, touch.record))
    found: dict[Hashable, list[Tenure]] = {}
    for order, requests in by_order.items():
        runs: list[Tenure] = []
        for member, record in sorted(requests, key=lambda item: item[1].started):
            last = runs[-1] if runs else None
            if last is not None and last.member == member:
                runs[-1] = Tenure(member, last.started, max(last.ended, record.ended), last.first, record,
                                  last.requests + 1)
            else:
                runs.append(Tenure(member, record.started, record.ended, record, record, 1))
        found[order] = runs
    return found


def violations(touches: Iterable[Touch]) -> list[str]:
    """What in the log shows two members on one order at once, or a member on an order it was not given; each named with
    the order, the members and the requests. Empty when nothing does.

    An order's requests, sorted by start, fall into tenures: the longest runs sent by one member. Two members never
    work on one order at once when, for each tenure after the first:

    - it starts after the previous tenure ended (its first request begins after every request of the previous one has
      been answered), and
    - the leader relabelled the order in between: a successful label write (a ``Touch`` marked ``label_write``,
      whoever sent it) began after the previous tenure ended and before this one began. A member gets an order only
      from the leader's label (decision 0027), so a tenure without one is another member working on an order it was
      never given: an interleaving. (Not "answered before": the server sends the label's watch event when it stores
      the write, and the member may act on it before the write's own answer is stamped; that happened, under load, in
      the 3-replica HTTP test.)

    The first tenure of an order must come after a label write too. Label writes are the leader's and are not part of
    any tenure (the leader adds the drain label while the owner still works).

    What the log cannot show: a pass that sends no request (it read everything from its caches); when inside a
    request's [start, end] its effect took place (a member's tenure is judged by its requests' server-side times, not
    by the pass around them); and requests that do not name an order (lists by other selectors, watches). A killed
    member's last requests end at the latest when the server answered them after the kill. The times are the
    emulator's: every emulator of one test process shares its monotonic clock, so logs of several clusters can be
    merged.
    """
    touches = list(touches)
    problems = [f"{touch.order}: {_request(touch.record)} names no shard member in its User-Agent"
                f" {touch.record.user_agent!r}"
                for touch in touches if not touch.label_write and member_of(touch.record.user_agent) is None]
    relabels: dict[Hashable, list[RequestRecord]] = {}
    for touch in touches:
        if touch.label_write and 200 <= touch.record.code <= 299:
            relabels.setdefault(touch.order, []).append(touch.record)
    for order, runs in tenures(touches).items():
        before: Tenure | None = None
        for tenure in runs:
            after = before.ended if before is not None else float("-inf")
            if before is not None and tenure.started < before.ended:
                problems.append(
                    f"{order}: member {tenure.member}'s {_request(tenure.first)} began while member {before.member}'s"
                    f" tenure ({before.requests} request(s)) still ran, until {before.ended - tenure.started:.6f}s"
                    " later")
            elif not any(after <= write.started <= tenure.started for write in relabels.get(order, ())):
                since = f"after member {before.member}'s last request" if before is not None else "first"
                problems.append(
                    f"{order}: member {tenure.member} worked on it {since} ({_request(tenure.first)}) with no label"
                    " write of the leader in between")
            before = tenure
    return problems


def _request(record: RequestRecord) -> str:
    return f"{record.method} {record.path} (at {record.started:.6f})"
