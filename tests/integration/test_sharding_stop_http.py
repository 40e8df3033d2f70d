"""A graceful stop of a shard member lets the passes already running finish: the member keeps renewing its
Lease until its workers have stopped, so a pass that outlasts the renew deadline after the stop signal
still writes (the fence refuses writes only once the tenure has really lapsed, decision 0033)."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from integration_kit import ROOT, TENANT, World, order, wait_for

from engine.cluster.api import Obj, Verb
from engine.cluster.kube import kube_cluster_from_kubeconfig
from engine.cluster.wrapper import WRITES, ClusterWrapper
from engine.operator import Operator, Options
from engine.runtime.sharding.labels import SHARD_LABEL

T = TypeVar("T")
NAME = "stopping"
RENEW_DEADLINE = 2.0


class HeldAtPassword(ClusterWrapper):
    """The management cluster, but the first create of a password Secret waits until ``release`` is set;
    every write sent after that is recorded (verb, kind)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner, cluster_name=inner.name)
        self.held, self.release = threading.Event(), threading.Event()
        self.after_release: list[tuple[str, str]] = []

    def _call(self, verb: Verb, api_version: str, kind: str, namespace: str | None, name: str | None,
              send: Callable[[], T], **extra: Any) -> T:
        if verb == "create" and kind == "Secret" and "password-v" in (name or "") and not self.held.is_set():
            self.held.set()
            assert self.release.wait(60), "the test never released the held write"
        elif verb in WRITES and self.release.is_set():
            self.after_release.append((verb, kind))
        return send()

    def __getattr__(self, name: str) -> Any:  # the client's cache hooks and ``stop``
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_a_pass_running_at_the_stop_signal_finishes_past_the_renew_deadline(world: World) -> None:
    management = HeldAtPassword(kube_cluster_from_kubeconfig("", world.kubeconfig, context="management"))
    options = Options(rules=ROOT / "rules", metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0",
                      clusters_namespace="", watch_timeout=5.0, sharded=True, lease_duration=4.0,
                      renew_deadline=RENEW_DEADLINE, retry_period=0.5)
    running = Operator(options, management)
    stop = threading.Event()
    thread = threading.Thread(target=contextvars.copy_context().run, args=(running.run, stop), daemon=True)
    thread.start()
    try:
        world.management.create(order("KeystoneUser", NAME))
        wait_for(management.held.is_set, message="the pass that creates the password Secret")
        stop.set()  # a graceful stop while that pass runs
        time.sleep(RENEW_DEADLINE + 1.5)  # past the renew deadline counted from the stop
        management.release.set()
        thread.join(40)
        assert not thread.is_alive(), "the operator did not stop"
    finally:
        management.release.set()
        stop.set()
    fenced = running.registry.get_sample_value("c5c3_operator_shard_fenced_writes_total") or 0
    assert fenced == 0, "a write of the pass that was running at the stop signal was refused by the fence"
    assert ("apply", "User") in management.after_release, (
        f"the held pass did not go on to apply its managed User; writes after the release: {management.after_release}")
    handed_back: Obj = world.management.get("c5c3.io/v1alpha1", "KeystoneUser", TENANT, NAME)
    assert SHARD_LABEL not in (handed_back["metadata"].get("labels") or {}), (
        "the member did not hand its order back after its passes ended")
