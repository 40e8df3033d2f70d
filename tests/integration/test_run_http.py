"""One ``engine run`` process serving a management cluster and registered target clusters over HTTP."""

from __future__ import annotations

import base64
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from integration_kit import (
    API,
    TENANT,
    OperatorProcess,
    Target,
    World,
    condition,
    example,
    get,
    order,
    secret_value,
    wait_for,
)

from engine.cluster.api import MANAGEMENT_CLUSTER, Cluster, Obj
from engine.cluster.patches import json_copy

KINDS = ("KeystoneUser", "RabbitMQVhost")


@pytest.fixture(scope="module")
def edge1(world: World) -> Target:
    target = world.target("edge-1")
    world.register(target)
    return target


@pytest.fixture(scope="module")
def operator(world: World, edge1: Target) -> Iterator[OperatorProcess]:
    process = OperatorProcess(world)
    process.wait_ready()
    yield process
    assert process.stop() == 0, process.logs()[-3000:]
    assert "operator stopped" in process.logs()


def ready(cluster: Cluster, kind: str, name: str) -> bool:
    return condition(get(cluster, API, kind, TENANT, name), "Ready") == "True"


def delivered(cluster: Cluster, name: str) -> Obj | None:
    return get(cluster, "v1", "Secret", TENANT, f"{name}-credentials")


def children(world: World, kind: str, name: str, cluster: str) -> list[str]:
    """Everything in the ControlPlane's namespace labelled as that order's child."""
    prefix = f"c5c3.io/{kind.lower()}"
    labels = {f"{prefix}-name": name, f"{prefix}-namespace": TENANT, f"{prefix}-cluster": cluster}
    found = []
    for api_version, child in (("v1", "Secret"), ("openstack.k-orc.cloud/v1alpha1", "User"),
                               ("external-secrets.io/v1alpha1", "PushSecret"), ("rabbitmq.com/v1beta1", "Vhost"),
                               ("rabbitmq.com/v1beta1", "User"), ("rabbitmq.com/v1beta1", "Permission")):
        found += [f"{child} {o['metadata']['name']}" for o in world.management.list(
            api_version, child, "openstack", labels=labels).items]
    return found


@pytest.fixture(scope="module")
def examples(world: World, edge1: Target, operator: OperatorProcess) -> None:
    """The example orders of both kinds, created on the management cluster and on edge-1 (once per module, so
    every test that reads them also runs alone)."""
    for cluster in (world.management, edge1.cluster):
        for kind in KINDS:
            cluster.create(example(kind, cluster.name))


def test_orders_of_both_kinds_on_both_clusters_go_ready(world: World, edge1: Target, examples: None) -> None:
    """The example orders, created on the management cluster and on edge-1, are Ready and delivered there."""
    for cluster in (world.management, edge1.cluster):
        for kind in KINDS:
            name = example(kind, cluster.name)["metadata"]["name"]
            wait_for(lambda c=cluster, k=kind, n=name: ready(c, k, n), message=f"{kind} {name} on {cluster.name!r}")
            assert secret_value(delivered(cluster, name), "password")
    clouds = secret_value(delivered(edge1.cluster, "billing"), "clouds.yaml") or ""
    assert "https://keystone.example.com/v3" in clouds
    assert children(world, "KeystoneUser", "billing", "edge-1")
    assert children(world, "KeystoneUser", "workflow", "")


def test_no_password_reaches_the_logs(world: World, edge1: Target, operator: OperatorProcess, examples: None) -> None:
    """Not one delivered password, nor its base64 form, appears in the operator's log lines."""
    for cluster in (world.management, edge1.cluster):
        for kind in KINDS:
            name = example(kind, cluster.name)["metadata"]["name"]
            wait_for(lambda c=cluster, k=kind, n=name: ready(c, k, n), message=f"{kind} {name} on {cluster.name!r}")
    logs = operator.logs()
    assert '"logger": "engine' in logs
    for cluster in (world.management, edge1.cluster):
        for kind in KINDS:
            secret = delivered(cluster, example(kind, cluster.name)["metadata"]["name"])
            password = secret_value(secret, "password")
            assert password
            assert password not in logs
            assert base64.b64encode(password.encode()).decode() not in logs


def test_each_kind_is_watched_once_per_cluster(world: World, edge1: Target, operator: OperatorProcess,
                                               examples: None) -> None:
    """One watch per kind (and label selector) on each cluster feeds both the operator's read cache and the
    events that wake orders: no kind is watched twice, so no event is decoded and stored twice."""
    wait_for(lambda: ready(world.management, "KeystoneUser", "workflow"), message="an order Ready")

    def once(server: Any) -> dict[tuple[str, str], int]:
        """The open watches once each is alone (a stream just closed counts until the emulator notices)."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(n == 1 for n in server.open_watches().values()):
            time.sleep(0.1)
        watching: dict[tuple[str, str], int] = server.open_watches()
        assert watching and all(count == 1 for count in watching.values()), watching
        return watching

    management, target = once(world.server), once(edge1.server)
    paths = {path for path, _ in management}
    assert "/apis/c5c3.io/v1alpha1/keystoneusers" in paths and "/apis/openstack.k-orc.cloud/v1alpha1/users" in paths
    assert ("/api/v1/secrets", "c5c3.io/keystoneuser-name") in management
    assert "/apis/c5c3.io/v1alpha1/keystoneusers" in {path for path, _ in target}


def test_metrics_count_the_passes(operator: OperatorProcess, examples: None) -> None:
    """The metrics endpoint reports passes, step durations, the leader gauge and an idle queue."""
    wait_for(lambda: (operator.metric("c5c3_operator_reconcile_duration_seconds_count") or 0) > 0, message="a pass")
    wait_for(lambda: (operator.metric("c5c3_operator_workqueue_depth") == 0.0), message="an idle queue")
    assert operator.metric("c5c3_operator_leader_status") == 1.0
    assert operator.metric("c5c3_operator_active_workers") is not None


def test_metrics_report_the_process_and_the_api_requests(world: World, edge1: Target,
                                                         operator: OperatorProcess) -> None:
    """/metrics has the process's CPU, memory and open files, and the API requests by cluster, verb and code."""
    wait_for(lambda: (operator.metric("c5c3_operator_workqueue_depth") == 0.0), message="an idle queue")
    for process_metric in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"):
        assert (operator.metric(process_metric) or 0) > 0, process_metric
    lists = 'c5c3_operator_api_requests_total{cluster="",code="200",verb="LIST"}'
    watches = 'c5c3_operator_api_requests_total{cluster="",code="200",verb="WATCH"}'
    assert (operator.metric(lists) or 0) > 0 and (operator.metric(watches) or 0) > 0
    assert (operator.metric('c5c3_operator_api_requests_total{cluster="edge-1",code="200",verb="LIST"}') or 0) > 0
    latency = 'c5c3_operator_api_request_duration_seconds_count{cluster="",code="200",verb="LIST"}'
    assert (operator.metric(latency) or 0) > 0


def test_an_edited_delivered_secret_is_repaired(world: World, edge1: Target, examples: None) -> None:
    """Tampering with the delivered Secret on a target cluster, or deleting it on the management one, is undone."""
    wait_for(lambda: ready(edge1.cluster, "KeystoneUser", "billing"), message="the order Ready")
    secret = json_copy(delivered(edge1.cluster, "billing"))
    assert secret is not None
    password = secret_value(secret, "password")
    secret["data"]["password"] = base64.b64encode(b"tampered").decode()
    edge1.cluster.update(secret)
    wait_for(lambda: secret_value(delivered(edge1.cluster, "billing"), "password") == password,
             message="the password restored on edge-1")
    before = secret_value(delivered(world.management, "workflow"), "password")
    world.management.delete("v1", "Secret", TENANT, "workflow-credentials")
    wait_for(lambda: secret_value(delivered(world.management, "workflow"), "password") == before,
             message="the deleted Secret delivered again")


def test_an_order_deleted_goes_down_to_nothing(world: World, edge1: Target, examples: None) -> None:
    """Deleting an order on edge-1 sweeps its children on the management cluster, its Secret, then the order."""
    wait_for(lambda: ready(edge1.cluster, "KeystoneUser", "billing"), message="the order Ready")
    wait_for(lambda: ready(world.management, "KeystoneUser", "workflow"), message="the order Ready")
    assert children(world, "KeystoneUser", "billing", "edge-1")
    edge1.cluster.delete(API, "KeystoneUser", TENANT, "billing")
    wait_for(lambda: get(edge1.cluster, API, "KeystoneUser", TENANT, "billing") is None, message="the order gone")
    assert children(world, "KeystoneUser", "billing", "edge-1") == []
    assert delivered(edge1.cluster, "billing") is None
    assert children(world, "KeystoneUser", "workflow", "")  # the management cluster's order is untouched
    assert ready(world.management, "KeystoneUser", "workflow")


def test_a_registration_added_changed_and_deleted(world: World, operator: OperatorProcess) -> None:
    """A new Secret engages a cluster; pointing it elsewhere engages the new one; deleting it disengages."""
    edge2, edge3 = world.target("edge-2"), world.target("edge-3")
    world.assign("edge-2")

    # Not registered yet: an order there is not served.
    edge2.cluster.create(order("KeystoneUser", "alpha"))
    time.sleep(1.0)
    assert not (get(edge2.cluster, API, "KeystoneUser", TENANT, "alpha") or {}).get("status")

    world.register(edge2)
    wait_for(lambda: ready(edge2.cluster, "KeystoneUser", "alpha"), message="alpha Ready once edge-2 is registered")

    # The Secret now reaches another API server: that one is engaged afresh under the same name.
    edge3.cluster.create(order("KeystoneUser", "beta"))
    world.register(edge3, name="edge-2")
    wait_for(lambda: ready(edge3.cluster, "KeystoneUser", "beta"), message="beta Ready through the changed Secret")
    assert children(world, "KeystoneUser", "beta", "edge-2")

    # Deleted: the cluster is disengaged, and a new order there is left alone.
    world.management.delete("v1", "Secret", "c5c3-clusters", "edge-2")
    wait_for(lambda: "cluster 'edge-2' disengaged" in operator.logs(), message="edge-2 disengaged")
    edge3.cluster.create(order("KeystoneUser", "gamma"))
    time.sleep(1.5)
    gamma = get(edge3.cluster, API, "KeystoneUser", TENANT, "gamma") or {}
    assert not gamma.get("status")
    assert not gamma["metadata"].get("finalizers")


def test_the_management_cluster_is_named_empty_in_child_labels(world: World, operator: OperatorProcess) -> None:
    """Children of a management-cluster order carry an empty cluster label, as the seeds say."""
    assert children(world, "RabbitMQVhost", "messaging", MANAGEMENT_CLUSTER)


def test_a_refused_order_gets_one_warning_event_in_a_series(world: World, operator: OperatorProcess) -> None:
    """An order naming a ControlPlane that does not exist: one Warning Event on it (events.k8s.io/v1), with the
    order's uid, by which a core v1 reader (kubectl describe) finds it."""
    refused = order("KeystoneUser", "no-cp")
    refused["spec"]["controlPlaneRef"] = {"name": "missing", "namespace": "openstack"}
    world.management.create(refused)
    uid = world.management.get(API, "KeystoneUser", TENANT, "no-cp")["metadata"]["uid"]

    def warnings() -> list[Obj]:
        found = world.management.list("events.k8s.io/v1", "Event", TENANT).items
        return [e for e in found if e["regarding"].get("uid") == uid]

    (event,) = wait_for(warnings, message="a Warning Event on the refused order")
    assert (event["type"], event["reason"]) == ("Warning", "ControlPlaneNotFound")
    assert event["regarding"]["kind"] == "KeystoneUser" and event["regarding"]["name"] == "no-cp"
    world.management.delete(API, "KeystoneUser", TENANT, "no-cp")


def test_two_orders_naming_one_keystone_user_one_holds_it_the_other_waits(
        world: World, edge1: Target, operator: OperatorProcess) -> None:
    """Over HTTP, against the simulated K-ORC: two orders on two clusters ask for one Keystone user at once.
    One holds it; the other is refused naming the holder, and goes Ready once the holder is deleted."""
    first, second = order("KeystoneUser", "shared-a"), order("KeystoneUser", "shared-b")
    first["spec"]["userName"], second["spec"]["userName"] = "shared-name", "Shared-Name"
    world.management.create(first)
    edge1.cluster.create(second)
    orders = {"shared-a": world.management, "shared-b": edge1.cluster}

    def settled() -> tuple[str, str] | None:
        holders = [name for name, cluster in orders.items() if ready(cluster, "KeystoneUser", name)]
        if len(holders) != 1:
            return None
        other = next(name for name in orders if name not in holders)
        refused = get(orders[other], API, "KeystoneUser", TENANT, other) or {}
        reasons = {c["type"]: c for c in (refused.get("status") or {}).get("conditions") or ()}
        verdict = reasons.get("UserReady", {})
        # Refused first by K-ORC's "already exists" when its probe answered before the holder's User showed its
        # id; the name of the holder follows at its next pass (no event on the rival's User wakes it).
        named = "is held by KeystoneUser" in verdict.get("message", "")
        return (holders[0], other) if verdict.get("reason") == "ServiceAccountCollision" and named else None

    def conditions() -> str:
        """Both orders' conditions (reasons and messages carry no secret), for a failure to show where each stood."""
        return "; ".join(f"{name}: " + ", ".join(
            f"{c['type']}={c['status']}/{c.get('reason')}: {c.get('message', '')}"
            for c in (status_of(cluster, name).get("conditions") or ())) for name, cluster in orders.items())

    def status_of(cluster: Any, name: str) -> dict[str, Any]:
        return (get(cluster, API, "KeystoneUser", TENANT, name) or {}).get("status") or {}

    try:  # the refused order names the holder at a pass after its 10 s requeue: two rounds, with room for load
        holder, other = wait_for(settled, timeout=60)
    except pytest.fail.Exception:
        pytest.fail(f"one order Ready, the other refused with ServiceAccountCollision naming it; {conditions()}")
    refused = get(orders[other], API, "KeystoneUser", TENANT, other) or {}
    message = next(c["message"] for c in refused["status"]["conditions"] if c["type"] == "UserReady")
    where = "the management cluster" if holder == "shared-a" else 'target cluster "edge-1"'
    assert f"is held by KeystoneUser {TENANT}/{holder} on {where}" in message
    time.sleep(1.0)  # passes of both go on: still exactly one of them holds the name
    assert settled() == (holder, other)

    orders[holder].delete(API, "KeystoneUser", TENANT, holder)
    wait_for(lambda: ready(orders[other], "KeystoneUser", other), timeout=60,
             message=f"{other} Ready once {holder} is deleted")
    orders[other].delete(API, "KeystoneUser", TENANT, other)
    wait_for(lambda: get(orders[other], API, "KeystoneUser", TENANT, other) is None, message=f"{other} gone")


def test_a_labelled_secret_without_a_usable_kubeconfig_is_refused_out_loud(
        world: World, operator: OperatorProcess) -> None:
    """Through the API server: a registration Secret holding a binary file, and one with no kubeconfig at all,
    engage nothing and each get a warning naming the Secret and a count by reason; the bytes are never logged."""
    binary = b"\x89PNG\r\n\x1a\n\xffbinary-registration-payload-0123456789"
    for name, data in (("edge-binary", {"kubeconfig": base64.b64encode(binary).decode()}),
                       ("edge-nothing", {"namespaces": base64.b64encode(TENANT.encode()).decode()})):
        world.management.create({
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": "c5c3-clusters",
                         "labels": {"sigs.k8s.io/multicluster-runtime-kubeconfig": "true"}},
            "data": data,
        })

    def refused(reason: str) -> float:
        answer = urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=5).read().decode()
        line = f'c5c3_operator_cluster_registrations_refused_total{{reason="{reason}"}} '
        return next((float(row[len(line):]) for row in answer.splitlines() if row.startswith(line)), 0.0)

    try:
        wait_for(lambda: refused("binary") == 1.0 and refused("no-kubeconfig") == 1.0,
                 message="both Secrets refused and counted")
        logs = operator.logs()
        assert ("refused registration Secret c5c3-clusters/edge-binary: its data key 'kubeconfig' is not UTF-8 text"
                in logs)
        assert "refused registration Secret c5c3-clusters/edge-nothing: its data has no key 'kubeconfig'" in logs
        assert "binary-registration-payload" not in logs
        assert "cluster 'edge-binary' engaged" not in logs and "cluster 'edge-nothing' engaged" not in logs
    finally:
        for name in ("edge-binary", "edge-nothing"):
            world.management.delete("v1", "Secret", "c5c3-clusters", name)


def test_a_name_the_assignment_does_not_allow_is_refused(world: World, operator: OperatorProcess) -> None:
    """Through the API server: the ControlPlane's assignment keeps allowedNames (its CRD declares the field), an
    order claiming another name is refused with NameNotAllowed before any finalizer, and goes on once allowed."""

    def with_allowed(names: list[str] | None) -> None:
        cp = json_copy(world.management.get(API, "ControlPlane", "openstack", "cp"))
        for entry in cp["spec"]["namespaceAssignments"]:
            if entry["namespace"] == TENANT and not entry.get("targetClusterRef"):
                entry.pop("allowedNames", None)
                if names is not None:
                    entry["allowedNames"] = names
        world.management.update(cp)

    def user_ready(obj: Obj | None) -> dict[str, Any]:
        found = [c for c in ((obj or {}).get("status") or {}).get("conditions") or () if c["type"] == "UserReady"]
        return found[0] if found else {}

    with_allowed(["tenant-a-*"])
    try:
        stored = world.management.get(API, "ControlPlane", "openstack", "cp")
        assert [e.get("allowedNames") for e in stored["spec"]["namespaceAssignments"]
                if e["namespace"] == TENANT and not e.get("targetClusterRef")] == [["tenant-a-*"]]
        world.management.create(order("KeystoneUser", "squatter"))
        verdict = wait_for(lambda: user_ready(get(world.management, API, "KeystoneUser", TENANT, "squatter"))
                           .get("reason") == "NameNotAllowed"
                           and user_ready(get(world.management, API, "KeystoneUser", TENANT, "squatter")),
                           message="squatter refused with NameNotAllowed")
        assert 'claim only the names ["tenant-a-*"]' in verdict["message"]
        assert 'Keystone user "squatter" is not among them' in verdict["message"]
        squatter = get(world.management, API, "KeystoneUser", TENANT, "squatter") or {}
        assert not squatter["metadata"].get("finalizers")
    finally:
        with_allowed(None)
    wait_for(lambda: ready(world.management, "KeystoneUser", "squatter"), timeout=60,
             message="squatter Ready once the assignment allows any name again")
    world.management.delete(API, "KeystoneUser", TENANT, "squatter")
    wait_for(lambda: get(world.management, API, "KeystoneUser", TENANT, "squatter") is None, message="squatter gone")
