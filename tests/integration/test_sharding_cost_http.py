"""What an order costs under ``--sharded``: the requests of a single replica plus the leader's one label write.

Three ``engine run --sharded`` processes converge a batch of new KeystoneUser orders. Counted from the API
server's request log (the emulator's, or a real server's audit log), by the members' User-Agents: each order is
labelled once (no drain and hand-back of a new order), no member lists an order's children before its first pass
(a new order has none: decision 0067), and no child is read by name from the API server (a member's caches say
whether one exists, as a single replica's do). Then a fourth member joins: only the orders that move cost more
(a drain, a hand-back, a label, the take-over's lists and relabels), bounded per moved order."""

from __future__ import annotations

import collections
import re
import time
from urllib.parse import parse_qsl, unquote, urlsplit

from integration_kit import API, TENANT, World, condition, get, order, wait_for
from test_sharding_http import KIND_KEY, PATIENCE, SHARD, a_member_that_wins, three_replicas

from engine.runtime.sharding import ring
from offline.emulator.requestlog import RequestRecord

ORDERS = [f"cost{n:02}" for n in range(12)]
CHILD_RESOURCES = ("secrets", "pushsecrets", "users")
MEMBER_AGENT = re.compile(r"\(member [a-z0-9-]+\)")


def classify(record: RequestRecord) -> tuple[str, str, str]:
    """(verb, resource, object name or "") of one request: GET of a named object, LIST, WATCH, or the method."""
    split = urlsplit(record.path)
    query = dict(parse_qsl(split.query))
    parts = [unquote(part) for part in split.path.strip("/").split("/")]
    if "namespaces" in parts and parts.index("namespaces") + 2 < len(parts):
        rest = parts[parts.index("namespaces") + 2:]  # resource [name [subresource]]
    elif parts[:2] == ["api", "v1"]:
        rest = parts[2:]
    else:
        rest = parts[3:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    if record.method == "GET":
        verb = "GET" if name else ("WATCH" if query.get("watch") in ("true", "1") else "LIST")
    else:
        verb = record.method
    return verb, resource, name


def shards(world: World) -> dict[str, dict[str, str]]:
    """Order name -> its labels."""
    return {item["metadata"]["name"]: dict(item["metadata"].get("labels") or {})
            for item in world.management.list(API, "KeystoneUser", TENANT).items if item["metadata"]["name"] in ORDERS}


def take_overs_of(world: World, since: float, names: list[str], until: float | None = None) -> list[RequestRecord]:
    """The members' lists of children selected by one of ``names`` (a take-over), from ``since`` (to ``until``)."""
    return [r for r in world.server.requests.records()
            if r.wall_started >= since and (until is None or r.wall_started <= until)
            and MEMBER_AGENT.search(r.user_agent) and classify(r)[0] == "LIST"
            and any(f"={name}" in unquote(r.path) for name in names)]


def test_a_new_order_costs_its_requests_plus_one_label_write(world: World) -> None:
    with three_replicas(world, "cost") as started:
        since = time.time()
        for name in ORDERS:
            world.management.create(order("KeystoneUser", name))
        wait_for(lambda: all(condition(get(world.management, API, "KeystoneUser", TENANT, name),
                                       "Ready") == "True" for name in ORDERS),
                 timeout=PATIENCE, message="every order Ready")
        records = [r for r in world.server.requests.records()
                   if r.wall_started >= since and MEMBER_AGENT.search(r.user_agent)]
        before = {name: labels.get(SHARD) for name, labels in shards(world).items()}
        joined = time.time()
        fourth, newcomer = a_member_that_wins(
            world, set(started), [ring.order_key("", KIND_KEY, TENANT, name) for name in ORDERS], prefix="cost-3")
        try:
            wait_for(lambda: newcomer in {labels.get(SHARD) for labels in shards(world).values()}
                     and not any("sharding.c5c3.io/drain" in labels for labels in shards(world).values())
                     and all(condition(get(world.management, API, "KeystoneUser", TENANT, name), "Ready") == "True"
                             for name in ORDERS), timeout=PATIENCE, message="the fourth member's orders moved")
            moved = [name for name, labels in shards(world).items() if labels.get(SHARD) != before[name]]
            # The new member's first pass of each moved order takes it over (a list of each child kind, then the
            # relabels): wait for every list, not a fixed time, then a second for the relabels that follow them.
            wait_for(lambda: len(take_overs_of(world, joined, moved)) >= 3 * len(moved), timeout=PATIENCE,
                     message="the new member's take-over of every moved order")
            time.sleep(1.0)
            moves = [r for r in world.server.requests.records()
                     if r.wall_started >= joined and MEMBER_AGENT.search(r.user_agent)]
        finally:
            fourth.stop()
    assert moved
    counted = collections.Counter(classify(r)[:2] for r in moves if classify(r)[1] not in ("leases", ""))
    move_shown = ", ".join(f"{verb} {resource}: {count}" for (verb, resource), count in sorted(counted.items()))
    # A moved order: the drain label, the hand-back, the new label; its take-over's list of each of its 3 child
    # kinds and one relabel per child (3 Secrets, a PushSecret, a User); its new member's first pass writes nothing.
    # The new member's caches' first lists come on top, once.
    # Under load a conditional write can meet a Conflict and be sent again: two such retries are allowed in all.
    order_writes = counted[("PATCH", "keystoneusers")] + counted[("PUT", "keystoneusers")]
    assert 3 * len(moved) <= order_writes <= 3 * len(moved) + 2, move_shown
    take_overs = len(take_overs_of(world, joined, moved, until=moves[-1].wall_started if moves else joined))
    assert 3 * len(moved) <= take_overs <= 3 * len(moved) + 2, move_shown
    relabels = sum(count for (verb, resource), count in counted.items()
                   if resource in CHILD_RESOURCES and verb not in ("LIST", "WATCH"))
    assert relabels <= 5 * len(moved), move_shown
    assert counted[("PUT", "keystoneusers/status")] == 0, move_shown
    seen = collections.Counter(classify(r) for r in records)
    by_verb: collections.Counter[tuple[str, str]] = collections.Counter()
    for (verb, resource, _), count in seen.items():
        by_verb[(verb, resource)] += count
    shown = ", ".join(f"{verb} {resource}: {count}" for (verb, resource), count in sorted(by_verb.items()))
    n = len(ORDERS)
    # The order itself: the leader's one label write; no drain acknowledged, nothing handed back.
    label_writes = [r for r in records if classify(r)[1] == "keystoneusers" and classify(r)[2] in ORDERS
                    and "fieldManager=c5c3-sharding" in r.path]
    assert len(label_writes) == n, shown
    # No child listed for an order (the take-over of a moved order selects by the order's name label).
    take_overs = [r for r in records if classify(r)[0] == "LIST" and any(f"%3D{name}" in r.path or f"={name}" in
                                                                      unquote(r.path) for name in ORDERS)]
    assert take_overs == [], [r.path for r in take_overs]
    # No child read by name from the server: a member's caches answer whether it exists (about 5 per order before).
    child_gets = sum(count for (verb, resource), count in by_verb.items()
                     if verb == "GET" and resource.split("/")[0] in CHILD_RESOURCES)
    assert child_gets <= n // 4, shown
    # All told (Leases, watches, discovery and the caches' first lists aside): a single replica's 13 per order, the
    # label write, and a little slack for a write retried under load.
    per_order = sum(count for (verb, resource), count in by_verb.items()
                    if resource not in ("leases", "") and verb not in ("LIST", "WATCH")) / n
    assert per_order <= 14.5, shown
