"""Three ``engine run --sharded`` processes share the orders of the management cluster and of a target
cluster: spread, a member killed (-9), a member added; never two passes of one order at once.

"Never two at once" has two witnesses: the API servers' request logs (``check_tenures_from_requests``:
what the emulators saw, or a real server's audit log, attributed to members by their User-Agent, so a member
wrong about its own passes cannot hide it), and the members' own pass records (``passes``: they also see a
pass that sent no request, which the request logs cannot)."""

from __future__ import annotations

import collections
import contextlib
import hashlib
import itertools
import json
import os
import re
import subprocess
import time
from collections.abc import Hashable, Iterator
from urllib.parse import parse_qsl

import pytest
from integration_kit import API, TENANT, OperatorProcess, Server, Target, World, condition, get, order, wait_for

from engine.cluster.api import Cluster
from engine.runtime.sharding import ring
from offline.emulator.requestlog import RequestRecord
from offline.tenures import Tenure, Touch, tenures, violations

SHARD = "sharding.c5c3.io/shard"
DRAIN = "sharding.c5c3.io/drain"
SHARDED = ("--sharded", "--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "4s",
           "--leader-elect-retry-period", "500ms")
"""Generous for a loaded machine: a member that misses its renew deadline stops for good (and exits 1)."""
MANAGEMENT_ORDERS = [f"m{n:02}" for n in range(18)]
EDGE_ORDERS = [f"e{n:02}" for n in range(9)]
PATIENCE = 120.0


@pytest.fixture(scope="module")
def edge(world: World) -> Target:
    target = world.target("edge-s")
    world.register(target)
    world.assign("edge-s")
    return target


@pytest.fixture
def replicas(world: World, edge: Target) -> Iterator[dict[str, OperatorProcess]]:
    with three_replicas(world, "shard") as started:
        yield started


@contextlib.contextmanager
def three_replicas(world: World, prefix: str, *extra: str) -> Iterator[dict[str, OperatorProcess]]:
    """Three ``engine run --sharded`` processes, by the member name each joined under; all stopped after."""
    started: dict[str, OperatorProcess] = {}
    processes = [OperatorProcess(world, *SHARDED, *extra, name=f"{prefix}-{n}") for n in range(3)]
    try:
        for process in processes:
            started[member_of(process)] = process
        yield started
    finally:  # also when one failed to start
        for process in {*processes, *started.values()}:
            if process.process.poll() is None:
                process.stop()


def member_of(process: OperatorProcess) -> str:
    """The member name a replica joined under (from its log)."""
    found: list[str] = []

    def joined() -> bool:
        found[:] = re.findall(r"joined the shards as member ([a-z0-9-]+)", process.logs())
        return bool(found) or process.process.poll() is not None

    wait_for(joined, timeout=PATIENCE, message="a replica to join")
    assert found, process.logs()[-3000:]
    return found[0]


def orders(world: World, edge: Target) -> dict[tuple[str, str], dict[str, str]]:
    """(cluster, name) -> the order's labels."""
    found = {}
    for cluster_name, cluster in (("", world.management), ("edge-s", edge.cluster)):
        for item in cluster.list(API, "KeystoneUser", TENANT).items:
            name = item["metadata"]["name"]
            if name in MANAGEMENT_ORDERS or name in EDGE_ORDERS:
                found[(cluster_name, name)] = dict(item["metadata"].get("labels") or {})
    return found


def owners(world: World, edge: Target) -> dict[tuple[str, str], str]:
    return {key: labels.get(SHARD, "") for key, labels in orders(world, edge).items()}


def settled_on(world: World, edge: Target, members: set[str]) -> bool:
    """Every order labelled with one of ``members``, none draining, and every member holding some that rendezvous
    hashing over ``members`` gives some (the member names are random: one may win none)."""
    found = orders(world, edge)
    held = {labels.get(SHARD) for labels in found.values()}
    return (len(found) == len(MANAGEMENT_ORDERS) + len(EDGE_ORDERS) and held == set(placed(members).values())
            and not any(DRAIN in labels for labels in found.values()))


KIND_KEY = f"{API}/KeystoneUser"
"""What the leader hashes an order's kind by (the order kind's key)."""


def order_keys() -> dict[tuple[str, str], str]:
    """(cluster, name) -> the ring key of each of the test's orders."""
    return {(cluster, name): ring.order_key(cluster, KIND_KEY, TENANT, name)
            for cluster, names in (("", MANAGEMENT_ORDERS), ("edge-s", EDGE_ORDERS)) for name in names}


def placed(members: set[str]) -> dict[tuple[str, str], str | None]:
    """(cluster, name) -> the member rendezvous hashing places each of the test's orders on, over ``members``."""
    return {where: ring.owner(key, members) for where, key in order_keys().items()}


def a_member_that_wins(world: World, members: set[str], keys: list[str], *, prefix: str,
                       tries: int = 8) -> tuple[OperatorProcess, str]:
    """A new ``--sharded`` replica that rendezvous hashing over ``members`` and it gives at least one of ``keys``
    (ring keys): its name is random, so a given one may win none, and then there would be no move to watch. Such a
    one is stopped and another started, up to ``tries`` times."""
    for attempt in range(tries):
        process = OperatorProcess(world, *SHARDED, name=f"{prefix}-{attempt}" if attempt else prefix)
        try:
            newcomer = member_of(process)
        except BaseException:
            process.stop()
            raise
        if any(ring.owner(key, members | {newcomer}) == newcomer for key in keys):
            return process, newcomer
        process.stop()
    raise AssertionError(f"{tries} new members in a row won none of {len(keys)} orders")


def spread_of(found: dict[tuple[str, str], str]) -> str:
    """Orders per member, for assertion messages."""
    counts = collections.Counter(found.values())
    return ", ".join(f"{member}: {count}" for member, count in sorted(counts.items())) + f" (of {len(found)})"


def wait_placed(world: World, edge: Target, members: set[str], stage: str) -> dict[tuple[str, str], str]:
    """Waits until every order carries exactly the member rendezvous hashing picks among ``members`` (the live ones)
    and none is draining; the owners then. Fails naming the orders labelled otherwise, and the spread.

    Waited for, not read once: a move the leader decided a round later than the others (its label write met a
    Conflict) may still be under way when the other orders have settled."""
    want = placed(members)
    deadline = time.monotonic() + PATIENCE
    while True:
        found = owners(world, edge)
        if found == want and settled_on(world, edge, members):
            return found
        if time.monotonic() > deadline:
            wrong = {key: (found.get(key), want[key]) for key in want if found.get(key) != want[key]}
            pytest.fail(f"{stage}: orders not on the member rendezvous hashing over {sorted(members)} picks "
                        f"(labelled, picked): {wrong}; spread {spread_of(found)}")
        time.sleep(0.1)


def shard_column(world: World) -> dict[str, str]:
    """Each management order's cell in the SHARD column of the real ``kubectl get keystoneusers -o wide`` (the CRD's
    last printer column, priority 1; an empty cell is an order with no shard label)."""
    assert world.kubectl is not None
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(world.tmp), "KUBECONFIG": str(world.kubeconfig)}
    result = subprocess.run([world.kubectl, "get", "keystoneusers", "-n", TENANT, "-o", "wide"], env=env,
                            capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split()[-1] == "SHARD", header
    return {row.split()[0]: row[header.rindex("SHARD"):].strip() for row in rows}


def ready(cluster: Cluster, name: str) -> bool:
    return condition(get(cluster, API, "KeystoneUser", TENANT, name), "Ready") == "True"


def all_ready(world: World, edge: Target) -> bool:
    return (all(ready(world.management, n) for n in MANAGEMENT_ORDERS)
            and all(ready(edge.cluster, n) for n in EDGE_ORDERS))


def passes(process: OperatorProcess, member: str, killed_at: float | None) -> list[tuple[str, float, float, str]]:
    """(request, start, end, member) of every pass a replica logged; a pass cut by a kill ends at the kill."""
    started: dict[str, float] = {}
    spans = []
    for line in process.logs().splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        found = re.match(r"pass (started|ended) at ([0-9.]+) by ", record.get("message", ""))
        if not found:
            continue
        request, moment = record["request"], float(found.group(2))
        if found.group(1) == "started":
            assert request not in started, f"{member}: {request} started twice without ending"
            started[request] = moment
        else:
            spans.append((request, started.pop(request), moment, member))
    for request, start in started.items():
        assert killed_at is not None, f"{member}: {request} never ended"
        spans.append((request, start, killed_at, member))
    return spans


def managed_users(world: World, name: str, cluster: str) -> int:
    labels = {"c5c3.io/keystoneuser-name": name, "c5c3.io/keystoneuser-namespace": TENANT,
              "c5c3.io/keystoneuser-cluster": cluster}
    users = world.management.list("openstack.k-orc.cloud/v1alpha1", "User", "openstack", labels=labels).items
    return len([u for u in users if not u["metadata"]["name"].endswith("-probe")])


NAME_LABEL = "c5c3.io/keystoneuser-name"
CHILD_KINDS = (("v1", "Secret"), ("external-secrets.io/v1alpha1", "PushSecret"),
               ("openstack.k-orc.cloud/v1alpha1", "User"))
"""Kinds of the orders' children a member caches by its shard label: K-ORC Users too, though the name claims list
them across orders (those lists are answered from a projected cache of every User, decision 0040)."""


def children(world: World, owner_of: dict[tuple[str, str], str]) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(apiVersion, namespace, name) of every child of the test's orders on the management cluster -> (its shard
    label, the member owning its order)."""
    found = {}
    for api_version, kind in CHILD_KINDS:
        for item in world.management.list(api_version, kind, labels=NAME_LABEL).items:
            labels = item["metadata"].get("labels") or {}
            key = (labels.get("c5c3.io/keystoneuser-cluster", ""), labels[NAME_LABEL])
            if key in owner_of:
                found[(kind, item["metadata"]["namespace"], item["metadata"]["name"])] = (labels.get(SHARD, ""),
                                                                                         owner_of[key])
    return found


def children_not_cached_by_member(world: World, edge: Target, replicas: dict[str, OperatorProcess]) -> list[object]:
    """What breaks "every child carries its order's member's label, and each member's caches hold its own children
    only" (empty when it holds)."""
    owner_of = owners(world, edge)
    found = children(world, owner_of)
    if not found:
        return ["no children of the test's orders"]
    wrong: list[object] = [(child, shard, member) for child, (shard, member) in found.items() if shard != member]
    for member, process in replicas.items():
        if process.process.poll() is not None:
            continue
        for api_version, kind in CHILD_KINDS:
            mine = world.management.list(api_version, kind, labels=f"{NAME_LABEL},{SHARD}={member}").items
            held = process.metric(f'c5c3_operator_cached_objects{{cluster="",kind="{kind}"}}') or 0.0
            if held != float(len(mine)):
                wrong.append((member, kind, held, len(mine)))
    return wrong


def check_children_cached_by_member(world: World, edge: Target, replicas: dict[str, OperatorProcess]) -> None:
    """Waits until every child carries its order's member's label and each member caches its own children only.

    An order can be Ready and labelled for its new member before that member's first pass relabels the children
    its old member wrote (the take-over), so this is waited for, not read once; it fails naming what still differs."""
    deadline = time.monotonic() + PATIENCE
    while (wrong := children_not_cached_by_member(world, edge, replicas)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not wrong, wrong


def test_three_replicas_share_the_orders_and_hand_them_over_safely(
        world: World, edge: Target, replicas: dict[str, OperatorProcess]) -> None:
    for name in MANAGEMENT_ORDERS:
        world.management.create(order("KeystoneUser", name))
    for name in EDGE_ORDERS:
        edge.cluster.create(order("KeystoneUser", name))
    members = set(replicas)
    wait_for(lambda: settled_on(world, edge, members), timeout=PATIENCE, message="the orders spread over 3 members")
    wait_for(lambda: all_ready(world, edge), timeout=PATIENCE, message="every order Ready")
    first = wait_placed(world, edge, members, "after the spread")
    spread = collections.Counter(first.values())
    # Exactly as rendezvous hashing over the three names places them (9 each expected); how evenly it spreads is
    # tests/runtime/test_sharding.py's part, measured over 3000 orders rather than bounded over these 27.
    assert spread == collections.Counter(placed(members).values()), spread_of(first)
    assert {cluster for cluster, _ in first} == {"", "edge-s"}
    if world.kubectl:  # what a user sees: each order's member in kubectl's SHARD column
        assert shard_column(world) == {name: member for (cluster, name), member in first.items() if not cluster}

    # Each member holds its own orders in full, and no other (its watch and its client's read cache).
    for member, process in replicas.items():
        held = {cluster: sum(1 for (c, _), m in first.items() if c == cluster and m == member)
                for cluster in ("", "edge-s")}
        for cluster, count in held.items():
            # A member with no order on a cluster may have no sample there (no cache of it to count).
            cached = process.metric(f'c5c3_operator_cached_objects{{cluster="{cluster}",kind="KeystoneUser"}}')
            assert (cached or 0.0) == float(count), (member, cluster, cached, count)

    check_children_cached_by_member(world, edge, replicas)

    # The leader's /metrics: live members, orders per member, moves.
    leader = next(p for p in replicas.values() if p.leads())
    assert leader.metric("c5c3_operator_shard_members") == 3.0
    for member, count in spread.items():
        assert leader.metric(f'c5c3_operator_shard_orders{{member="{member}"}}') == float(count)

    # kill -9 a member that is not the leader and holds orders: only its orders move, to the survivors.
    victim = next(m for m, p in replicas.items() if not p.leads() and spread[m])
    replicas[victim].kill()
    killed_at = time.time()
    survivors = members - {victim}
    wait_for(lambda: settled_on(world, edge, survivors), timeout=PATIENCE, message="the killed member's orders moved")
    second = wait_placed(world, edge, survivors, "after the kill")
    assert {k for k in first if first[k] != second[k]} == {k for k in first if first[k] == victim}, spread_of(second)
    moves_before_join = leader.metric('c5c3_operator_shard_moves_total{how="moved"}') or 0.0
    assert "is gone; reassigned to member" in leader.logs()
    assert f"member {victim} left the shards or its Lease expired" in leader.logs()

    # A member joins (one that wins some of the orders: its name is random): only the orders it wins move, each
    # drained by its owner first.
    newcomer, joined = a_member_that_wins(world, survivors, list(order_keys().values()), prefix="shard-3")
    replicas[joined] = newcomer
    wait_for(lambda: settled_on(world, edge, survivors | {joined}), timeout=PATIENCE,
             message="the new member to get its share")
    third = wait_placed(world, edge, survivors | {joined}, "after the join")
    moved = {k for k in second if second[k] != third[k]}
    wins = {k for k, member in placed(survivors | {joined}).items() if member == joined}
    assert moved == wins, (f"moved {sorted(moved)}, the newcomer wins {sorted(wins)}; "
                           f"spread {spread_of(second)} -> {spread_of(third)}")
    assert {third[k] for k in moved} == {joined}
    # About a third of 27 (tests/runtime/test_sharding.py: 1/n +- 4 points of 3000 orders for realistic names).
    assert 1 <= len(moved) <= 18, f"moved {len(moved)} of {len(third)}: {spread_of(second)} -> {spread_of(third)}"
    assert "drained, handed back to the leader" in "".join(p.logs() for p in replicas.values())
    assert (leader.metric('c5c3_operator_shard_moves_total{how="moved"}') or 0) >= len(moved)
    # Each of them moved once, after a drain, and nothing else did.
    moves = (leader.metric('c5c3_operator_shard_moves_total{how="moved"}') or 0.0) - moves_before_join
    assert moves == len(moved), (moves, sorted(moved))
    wait_for(lambda: all_ready(world, edge), timeout=PATIENCE, message="every order Ready after the moves")
    check_children_cached_by_member(world, edge, replicas)

    for member, process in replicas.items():
        if member != victim:
            assert process.stop() == 0, process.logs()[-3000:]

    # Never two passes of one order at once, across the replicas: as the members recorded their passes (which
    # shows passes that sent no request), then as the API servers saw their requests (check_tenures_from_requests).
    spans: dict[str, list[tuple[float, float, str]]] = collections.defaultdict(list)
    for member, process in replicas.items():
        for request, start, end, who in passes(process, member, killed_at if member == victim else None):
            spans[request].append((start, end, who))
    assert len(spans) == len(first)
    for request, runs in spans.items():
        runs.sort()
        for (_, end, who), (start, _, other) in itertools.pairwise(runs):
            assert who == other or end <= start, f"{request}: {other} started a pass while {who}'s ran"
    check_tenures_from_requests({"": world.server, "edge-s": edge.server}, list(first), [first, second, third],
                                killed=victim)

    # Nothing provisioned twice.
    for cluster, name in first:
        where = world.management if cluster == "" else edge.cluster
        stored = get(where, API, "KeystoneUser", TENANT, name) or {}
        assert stored["status"]["passwordGeneration"] == 1
        assert managed_users(world, name, cluster) == 1, (cluster, name)


KEYSTONE_USERS = f"/apis/{API}/namespaces/{TENANT}/keystoneusers/"
CHILD_COLLECTIONS = ("/api/v1/namespaces/openstack/secrets/",
                     "/apis/external-secrets.io/v1alpha1/namespaces/openstack/pushsecrets/",
                     "/apis/openstack.k-orc.cloud/v1alpha1/namespaces/openstack/users/")
"""Where the children of an order live (rules/keystoneuser.yaml: the ControlPlane's namespace, on the management
cluster): the password and source Secrets, the PushSecret, the K-ORC User and its probe."""
CHILD_PREFIX = re.compile(r"[a-z0-9-]+?-[0-9a-f]{8}-user-")
"""A child's name starts with ``<order>-<hash8(cluster/namespace/order)>-user-`` (the rules' ``prefix``)."""


def order_touched(cluster: str, record: RequestRecord, known: dict[str, tuple[str, str]]) -> Touch | None:
    """The request as a ``Touch`` of one of the test's orders, or None when it names none of them.

    It touches an order when it reads or writes the order (its status too) or the delivered Secret
    ``<name>-credentials`` beside it, on the order's cluster; a child of it in the ControlPlane's namespace on the
    management cluster (by the name prefix of the rules); or lists objects by the order's name label (a new
    member's take-over of the children, decision 0032). Watches never name one order. ``known``: the test's order
    names and their children's name prefixes -> (cluster, name). The leader's label write is a PATCH of the order
    itself with field manager c5c3-sharding (a member hands an order back with a PUT: part of its tenure)."""
    path, _, text = record.path.partition("?")
    query = dict(parse_qsl(text))
    if query.get("watch") in ("true", "1"):
        return None
    if path.startswith(KEYSTONE_USERS):
        name, _, subresource = path[len(KEYSTONE_USERS):].partition("/")
        if known.get(name) != (cluster, name):
            return None
        label_write = (record.method == "PATCH" and not subresource
                       and query.get("fieldManager") == "c5c3-sharding")
        return Touch((cluster, name), record, label_write=label_write)
    delivered = f"/api/v1/namespaces/{TENANT}/secrets/"
    if path.startswith(delivered) and path.endswith("-credentials"):
        name = path[len(delivered):].removesuffix("-credentials")
        return Touch((cluster, name), record) if known.get(name) == (cluster, name) else None
    for collection in CHILD_COLLECTIONS:
        if cluster == "" and path.startswith(collection):
            prefix = CHILD_PREFIX.match(path[len(collection):])
            return Touch(known[prefix.group(0)], record) if prefix and prefix.group(0) in known else None
    for term in query.get("labelSelector", "").split(","):
        if term.startswith(f"{NAME_LABEL}=") and term[len(NAME_LABEL) + 1:] in known:
            return Touch(known[term[len(NAME_LABEL) + 1:]], record)
    return None


def handed_back(record: RequestRecord) -> bool:
    """Whether a request is a member's successful hand-back of an order: an update of the order itself (not its
    status) with field manager c5c3-sharding (``ShardMember._acknowledge``, ``leave``)."""
    path, _, text = record.path.partition("?")
    return (record.method == "PUT" and path.startswith(KEYSTONE_USERS) and "/" not in path[len(KEYSTONE_USERS):]
            and dict(parse_qsl(text)).get("fieldManager") == "c5c3-sharding" and record.code == 200)


def check_tenures_from_requests(servers: dict[str, Server], orders: list[tuple[str, str]],
                                owners_seen: list[dict[tuple[str, str], str]], *,
                                killed: str) -> dict[Hashable, list[Tenure]]:
    """No order was worked on by two members at once, as the API servers saw it (``offline.tenures``).

    Every request the emulators (``servers``, by cluster name) logged that names one of ``orders`` ((cluster,
    name); ``order_touched``) is the member's its User-Agent names. For every order, each member's run of requests
    (a tenure) must start after the previous member's last request was answered, with a label write of the leader
    in between (a member gets an order only from the leader's label), and the first one after the leader's first
    label: under the churn the test made (a spread, kill -9, a join and its drains, each replica's graceful stop
    handing its orders on).

    What this proves: no request of a member on an order was served while another member's tenure on it ran, and
    no member touched an order the leader had not relabelled since another member last did. What it cannot: a
    pass that sent no request is invisible (the members' pass records cover those); a tenure is bounded by its
    requests' server times, not by the pass around them (a pass running on between two requests is not seen); a
    killed member's last requests end at the latest when the server answered them, after the kill; when in a
    request's [start, end] its effect happened is not known, so a tenure's requests must be separated from the
    next tenure's by the emulator's time from a write to its answer, which the handover's round trips (a watch
    event, the leader's round, a label write, a watch event) always exceed.

    A move is a drain: every tenure another member's follows ends with its member's hand-back of the order (the
    update removing its label), but for the member ``killed`` (-9), which hands nothing back.

    Every order has a tenure. ``owners_seen``: the owners observed at each stage; each order's tenures must show
    those it appears in, in that order, so the log saw every move (the check is not vacuous). Returns each order's
    tenures."""
    known: dict[str, tuple[str, str]] = {}
    for cluster, name in orders:
        prefix = f"{name}-{hashlib.sha256(f'{cluster}/{TENANT}/{name}'.encode()).hexdigest()[:8]}-user-"
        known[name] = known[prefix] = (cluster, name)
    assert len(known) == 2 * len(set(orders)), "order names must be unique across clusters"
    touches: list[Touch] = []
    for cluster, server in servers.items():
        assert server.requests.dropped == 0, f"the request log of {cluster or 'management'} overflowed"
        touches.extend(t for r in server.requests.records() if (t := order_touched(cluster, r, known)) is not None)
    problems = violations(touches)
    assert not problems, "\n".join(problems[:20])
    found = tenures(touches)
    assert set(found) == set(orders), set(orders) ^ set(found)
    for order_key in orders:
        expected = [owner for owner, _ in itertools.groupby(stage[order_key] for stage in owners_seen
                                                           if order_key in stage)]
        members = iter(run.member for run in found[order_key])
        assert all(owner in members for owner in expected), (order_key, expected, [r.member for r in found[order_key]])
        for run, _ in itertools.pairwise(found[order_key]):
            assert run.member == killed or handed_back(run.last), (
                f"{order_key}: member {run.member}'s tenure ended with {run.last.method} {run.last.path}, not its"
                " hand-back: the order moved without a drain")
    return found
