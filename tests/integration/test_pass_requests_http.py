"""What a KeystoneUser order costs in requests on its way to Ready, counted over HTTP (issue 11).

An in-process operator (the real rules, a KubeCluster over HTTP to the emulated management
cluster, Secrets cached by label as decision 14 has them) converges orders while every request
its management client sends is recorded. A Secret the label-scoped cache can answer (a child of
the order, its delivered Secret once delivered) is never read from the API server; the only live
Secret read is the delivered Secret's owner check before it is first delivered. A password Secret
made by hand (unlabelled, so in no cache) is still found and claimed: its create answers
AlreadyExists and it is read live.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from integration_kit import API, TENANT, World, condition, get, operator_in_process, order, secret_value, wait_for

from engine.cluster.kube import KubeCluster, kube_cluster_from_kubeconfig

Request = tuple[str, str]
"""(method, path) of one request that is not a watch."""


class Recorder:
    """Every request the management client sends, watches left out."""

    def __init__(self, cluster: KubeCluster) -> None:
        self._seen: list[Request] = []
        self._lock = threading.Lock()
        rest: Any = cluster.api_client.rest_client
        original = rest.request

        def recorded(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            parts = urlsplit(url)
            if parse_qs(parts.query).get("watch") != ["true"]:
                with self._lock:
                    self._seen.append((method, parts.path))
            return original(method, url, *args, **kwargs)

        rest.request = recorded

    def since(self, start: int, *names: str) -> list[Request]:
        """The requests from the ``start``-th on that name one of these objects (or its status), and the
        creates (POST to a collection)."""
        with self._lock:
            seen = self._seen[start:]
        return [(m, p) for m, p in seen
                if m == "POST" or p.rsplit("/", 1)[-1] in names or any(p.endswith(f"/{n}/status") for n in names)]

    def every(self, start: int) -> list[Request]:
        """Every request from the ``start``-th on."""
        with self._lock:
            return self._seen[start:]

    def count(self) -> int:
        with self._lock:
            return len(self._seen)


def is_discovery(path: str) -> bool:
    """A discovery document's path: /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>."""
    return path in ("/api", "/api/v1", "/apis") or (path.startswith("/apis/") and path.count("/") <= 3)


def reason(obj: dict[str, Any] | None, type_: str) -> str | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return str(cond.get("reason"))
    return None


def prefix(name: str) -> str:
    return f"{name}-{hashlib.sha256(f'/{TENANT}/{name}'.encode()).hexdigest()[:8]}-user-"


def quiet(recorder: Recorder, for_s: float = 1.0) -> None:
    """Wait (bounded) until no request has been sent for ``for_s`` seconds: the order's last passes are done."""
    deadline = time.monotonic() + 10
    last, since = recorder.count(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = recorder.count()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= for_s:
            return


@pytest.fixture(scope="module")
def operator(world: World) -> Iterator[Recorder]:
    management = kube_cluster_from_kubeconfig("", world.kubeconfig, context="management")
    recorder = Recorder(management)
    with operator_in_process(management):
        yield recorder


def converge(world: World, recorder: Recorder, name: str) -> list[Request]:
    """Create a KeystoneUser, wait until it is Ready and its passes are over; the requests about it and its
    children (every path naming the order, a child or the delivered Secret)."""
    quiet(recorder)
    start = recorder.count()
    world.management.create(order("KeystoneUser", name))
    wait_for(lambda: condition(get(world.management, API, "KeystoneUser", TENANT, name), "Ready") == "True",
             message=f"KeystoneUser {name} Ready")
    quiet(recorder)
    children = [prefix(name) + suffix for suffix in ("user-probe", "user", "password-v1", "source", "backup")]
    return recorder.since(start, name, f"{name}-credentials", *children)


def test_a_converging_order_reads_no_secret_live(world: World, operator: Recorder) -> None:
    requests = converge(world, operator, "counted")
    p = prefix("counted")
    # Nothing is read live: the delivered Secret's owner check is its create (decision 31).
    assert [path for method, path in requests if method == "GET"] == []
    # Each child is written once: the password created, the source and the backup (its stamp folded in) applied,
    # the delivered Secret created, the probe applied and deleted once (not again while K-ORC's finalizer holds it).
    writes = [(method, path) for method, path in requests if method != "GET"]
    assert writes.count(("POST", "/api/v1/namespaces/openstack/secrets")) == 1
    assert writes.count(("PATCH", f"/api/v1/namespaces/openstack/secrets/{p}source")) == 1
    pushsecrets = "/apis/external-secrets.io/v1alpha1/namespaces/openstack/pushsecrets"
    assert writes.count(("PATCH", f"{pushsecrets}/{p}backup")) == 1
    assert writes.count(("POST", f"/api/v1/namespaces/{TENANT}/secrets")) == 1
    assert [path for method, path in writes if path.endswith("/counted-credentials")] == []
    users = "/apis/openstack.k-orc.cloud/v1alpha1/namespaces/openstack/users"
    assert writes.count(("DELETE", f"{users}/{p}user-probe")) == 1
    push = get(world.management, "external-secrets.io/v1alpha1", "PushSecret", "openstack", f"{p}backup")
    assert push is not None and push["metadata"]["annotations"]["c5c3.io/keystoneuser-push-hash"]
    delivered = get(world.management, "v1", "Secret", TENANT, "counted-credentials")
    assert delivered is not None and delivered["metadata"]["ownerReferences"][0]["controller"] is True


def test_an_unlabelled_secret_of_the_delivered_name_is_refused_untouched(world: World, operator: Recorder) -> None:
    # No cache holds it (no ownership label): the create answers AlreadyExists, it is read live and refused.
    foreign = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "taken-credentials", "namespace": TENANT},
               "data": {"password": base64.b64encode(b"not-the-operator-s").decode()}}
    world.management.create(foreign)
    quiet(operator)
    start = operator.count()
    world.management.create(order("KeystoneUser", "taken"))
    wait_for(lambda: reason(get(world.management, API, "KeystoneUser", TENANT, "taken"), "DeliveryReady")
             == "DeliveryRefused", message="KeystoneUser taken DeliveryRefused")
    quiet(operator)
    delivered = [(method, path) for method, path in operator.since(start, "taken-credentials")
                 if method != "POST" or path == f"/api/v1/namespaces/{TENANT}/secrets"]
    assert delivered == [("POST", f"/api/v1/namespaces/{TENANT}/secrets"),
                         ("GET", f"/api/v1/namespaces/{TENANT}/secrets/taken-credentials")]
    kept = get(world.management, "v1", "Secret", TENANT, "taken-credentials")
    assert kept is not None and secret_value(kept, "password") == "not-the-operator-s"
    assert not kept["metadata"].get("ownerReferences")


def test_a_password_secret_made_by_hand_is_still_read_live_and_claimed(world: World, operator: Recorder) -> None:
    p = prefix("claimed")
    hand_made = "made-by-hand-0123456789-abcdefghijklmnop"
    world.management.create({"apiVersion": "v1", "kind": "Secret",
                             "metadata": {"name": f"{p}password-v1", "namespace": "openstack"},
                             "data": {"password": base64.b64encode(hand_made.encode()).decode()}})
    requests = converge(world, operator, "claimed")
    password = [(method, path) for method, path in requests if path.endswith(f"{p}password-v1")
                or (method == "POST" and path == "/api/v1/namespaces/openstack/secrets")]
    # Not in the labelled cache: the create answers AlreadyExists, the Secret is read live and claimed.
    assert password == [("POST", "/api/v1/namespaces/openstack/secrets"),
                        ("GET", f"/api/v1/namespaces/openstack/secrets/{p}password-v1"),
                        ("PATCH", f"/api/v1/namespaces/openstack/secrets/{p}password-v1")]
    claimed = get(world.management, "v1", "Secret", "openstack", f"{p}password-v1")
    assert claimed is not None and claimed["metadata"]["labels"]["c5c3.io/keystoneuser-name"] == "claimed"
    delivered = get(world.management, "v1", "Secret", TENANT, "claimed-credentials")
    assert secret_value(delivered, "password") == hand_made


def test_a_converged_vhost_pass_asks_discovery_nothing(world: World, operator: Recorder) -> None:
    """The topology kinds' `served:` inputs are discovery's remembered answers: a converged pass woken by an
    edit of the order makes no discovery request (it used to make three, one per kind, on every pass)."""
    world.management.create(order("RabbitMQVhost", "bus"))
    wait_for(lambda: condition(get(world.management, API, "RabbitMQVhost", TENANT, "bus"), "Ready") == "True",
             message="RabbitMQVhost bus Ready")
    quiet(operator)
    start = operator.count()
    world.management.patch(API, "RabbitMQVhost", TENANT, "bus", {"metadata": {"annotations": {"touched": "1"}}})
    # The pass reads the delivered Secret's owner live (the spec's uncached read): it has run.
    wait_for(lambda: ("GET", f"/api/v1/namespaces/{TENANT}/secrets/bus-credentials") in operator.every(start),
             message="a pass of RabbitMQVhost bus")
    quiet(operator)
    requests = operator.every(start)
    assert [path for _, path in requests if is_discovery(path)] == []
    assert [method for method, _ in requests if method != "GET"] == []  # converged: nothing written
