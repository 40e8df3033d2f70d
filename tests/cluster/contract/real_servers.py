"""Real API servers shared by the contract suite's tests, each put back to its first state before a test uses it.

A server costs about 3 s to start, so the suite starts one per role and shares it: ``management`` and
``edge-1`` with the Widget and Gadget CRDs installed (the ``cluster`` and ``clusters`` fixtures), ``bare`` with
none (the ``bare`` fixture). Before a test gets a server, ``reset`` removes what earlier tests wrote: objects of the
kinds the suite writes (their finalizers dropped first), CRDs and namespaces beyond the first state, and the suite's
CRDs as first installed. The namespaces the tests write into exist (a real server refuses a write into a namespace
no Namespace stands for), except ``nowhere``, which a test needs absent.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from contract_kit import GADGET_CRD, WIDGET_CRD, Obj, eventually

from engine.cluster.api import Cluster, NotFound
from engine.cluster.kube import KubeCluster, kube_cluster_from_kubeconfig
from offline.realkube import KubeBinaries, KubeServer

CRD = "apiextensions.k8s.io/v1"
SUITE_NAMESPACES = ("one", "two", "other", "d", "ops")
"""Namespaces tests write into besides ``default``: present on every real server, as on a cluster in use."""
WRITTEN_KINDS = (("example.com/v1", "Widget"), ("example.com/v1", "Gadget"), ("v1", "Secret"), ("v1", "ConfigMap"),
                 ("coordination.k8s.io/v1", "Lease"))
"""The kinds the suite writes, whose objects ``reset`` removes (the custom kinds of other CRDs go with them)."""
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
PATIENCE = 60.0
"""Seconds a reset waits for the server's asynchronous work (a CRD established or removed, a namespace gone)."""


def gone(cluster: Cluster, api_version: str, kind: str, namespace: str | None, name: str) -> bool:
    try:
        cluster.get(api_version, kind, namespace, name, live=True)
    except NotFound:
        return True
    return False


def established(cluster: Cluster, name: str) -> bool:
    try:
        crd = cluster.get(CRD, "CustomResourceDefinition", None, name, live=True)
    except NotFound:
        return False
    conditions = {c.get("type"): c.get("status") for c in (crd.get("status") or {}).get("conditions") or []}
    return conditions.get("Established") == "True"


class SharedServer:
    """One real server of the suite and a live client of its own that puts it back to its first state."""

    def __init__(self, role: str, binaries: KubeBinaries, crds: tuple[Obj, ...]) -> None:
        self.role = role
        self.server = KubeServer(f"contract-{role}", binaries=binaries).start()
        self.janitor = kube_cluster_from_kubeconfig(role, self.server.kubeconfig(role), cache=False)
        self.crds = {crd["metadata"]["name"]: crd for crd in crds}
        for namespace in SUITE_NAMESPACES:
            self.janitor.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        for crd in crds:
            self.janitor.create(crd)
        for name in self.crds:
            eventually(lambda name=name: established(self.janitor, name), f"CRD {name} established", PATIENCE)  # type: ignore[misc]
        self._wait_served()
        self.first_specs = {name: self.janitor.get(CRD, "CustomResourceDefinition", None, name)["spec"]
                            for name in self.crds}
        self.first_uids = self._uids()

    def client(self, name: str, *, cache: bool, discovery: Path) -> KubeCluster:
        """A fresh KubeCluster on this server, named as the test asked."""
        return kube_cluster_from_kubeconfig(name, self.server.kubeconfig(name or "management"), cache=cache,
                                            discovery_cache_dir=discovery)

    def stop(self) -> None:
        self.janitor.stop()
        self.server.stop()

    # -- putting the server back -------------------------------------------------------------------------------

    def reset(self) -> None:
        """Remove every trace of earlier tests: their CRDs, objects and namespaces; restore the suite's CRDs."""
        self._reset_crds()
        for api_version, kind in WRITTEN_KINDS:
            for obj in self._all(api_version, kind):
                self._remove(api_version, kind, obj)
        for namespace in self.janitor.list("v1", "Namespace", live=True).items:
            self._remove("v1", "Namespace", namespace)

    def _reset_crds(self) -> None:
        for crd in self.janitor.list(CRD, "CustomResourceDefinition", live=True).items:
            name = crd["metadata"]["name"]
            if name not in self.crds:
                self._remove(CRD, "CustomResourceDefinition", crd)
            elif crd["spec"] != self.first_specs[name]:
                self.janitor.update({**crd, "spec": self.first_specs[name]})
        for name, crd in self.crds.items():
            if gone(self.janitor, CRD, "CustomResourceDefinition", None, name):
                self.janitor.create(crd)
                eventually(lambda name=name: established(self.janitor, name), f"CRD {name} established", PATIENCE)  # type: ignore[misc]
        self._wait_served()

    def _wait_served(self) -> None:
        for crd in self.crds.values():
            group, names = crd["spec"]["group"], crd["spec"]["names"]
            version = crd["spec"]["versions"][0]["name"]
            eventually(lambda g=group, v=version, k=names["kind"]: self.janitor.serves(f"{g}/{v}", k),  # type: ignore[misc]
                       f"{names['kind']} served", PATIENCE)

    def _remove(self, api_version: str, kind: str, obj: Obj) -> None:
        """Delete an object a test left, finalizers first; wait for a CRD to be really gone (a test may create one
        of that name again). A namespace is left to the namespace controller: tests name theirs uniquely."""
        meta = obj["metadata"]
        namespace, name = meta.get("namespace"), meta["name"]
        if meta["uid"] in self.first_uids or namespace in SYSTEM_NAMESPACES:
            return
        if meta.get("deletionTimestamp") and kind == "Namespace":
            return  # being emptied and removed by the namespace controller
        with contextlib.suppress(NotFound):
            if meta.get("finalizers"):
                self.janitor.patch(api_version, kind, namespace, name, {"metadata": {"finalizers": None}})
            self.janitor.delete(api_version, kind, namespace, name)
        if kind == "CustomResourceDefinition":
            eventually(lambda: gone(self.janitor, api_version, kind, namespace, name), f"{kind} {name} removed",
                       PATIENCE)

    def _uids(self) -> set[str]:
        uids = {crd["metadata"]["uid"] for crd in self.janitor.list(CRD, "CustomResourceDefinition", live=True).items}
        uids |= {ns["metadata"]["uid"] for ns in self.janitor.list("v1", "Namespace", live=True).items}
        for api_version, kind in WRITTEN_KINDS:
            uids |= {obj["metadata"]["uid"] for obj in self._all(api_version, kind)}
        return uids

    def _all(self, api_version: str, kind: str) -> list[Obj]:
        """Every object of a kind; none where the kind is not served (a custom kind on ``bare``)."""
        try:
            return list(self.janitor.list(api_version, kind, live=True).items)
        except NotFound:
            return []


class RealServers:
    """The suite's shared servers by role, each started on first use."""

    ROLES = {"management": (WIDGET_CRD, GADGET_CRD), "edge-1": (WIDGET_CRD, GADGET_CRD), "bare": ()}

    def __init__(self, binaries: KubeBinaries) -> None:
        self.binaries = binaries
        self.started: dict[str, SharedServer] = {}

    def get(self, role: str) -> SharedServer:
        """The server of ``role``, put back to its first state."""
        if role not in self.started:
            self.started[role] = SharedServer(role, self.binaries, self.ROLES[role])
        else:
            self.started[role].reset()
        return self.started[role]

    def stop(self) -> None:
        for shared in self.started.values():
            shared.stop()
        self.started.clear()
