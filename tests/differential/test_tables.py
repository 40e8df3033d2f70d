"""Written cases: the Tables ``kubectl get`` asks for (``Accept: ...;as=Table``), for every built-in kind the
project uses, on the real server and the emulator (the MemoryCluster interface has no tables)."""

from __future__ import annotations

import pytest

from tests.differential.harness import TABLE, Case, Runner, call, report
from tests.differential.objects import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CM,
    DEPLOYMENTS,
    EVENTS,
    LEASES,
    NAMESPACES,
    NETWORK_POLICIES,
    NEW_EVENTS,
    PDBS,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    configmap,
    deployment,
)

SUBJECTS = [{"kind": "ServiceAccount", "name": "op", "namespace": "{ns}"}, {"kind": "User", "name": "alice"},
            {"kind": "Group", "name": "devs"}, {"kind": "User", "name": "bob"}]


def table(path: str, **query: str) -> object:
    return call("GET", path, accept=TABLE, **query)


CASES = [
    Case("Secret and ConfigMap", [
        call("POST", SECRETS, {"metadata": {"name": "s"}, "data": {"a": "eA==", "b": "eQ=="}}),
        call("POST", SECRETS, {"metadata": {"name": "t"}, "type": "kubernetes.io/basic-auth",
                               "stringData": {"username": "u", "password": "p"}}),
        call("POST", CM, configmap("c", a="1", b="2")),
        call("POST", CM, {"metadata": {"name": "bin"}, "binaryData": {"x": "AA=="}}),
        table(SECRETS), table(SECRETS + "/s"), table(CM), table(CM, includeObject="Object"),
        table(CM, includeObject="None"),
    ]),
    Case("Deployment", [
        call("POST", DEPLOYMENTS, deployment()),
        call("POST", DEPLOYMENTS, deployment("two", selector={"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["z", "db"]}, {"key": "gone", "operator": "DoesNotExist"}]},
            template={"metadata": {"labels": {"a": "1", "b": "2", "tier": "db"}}, "spec": {"containers": [
                {"name": "one", "image": "x:1"}, {"name": "two", "image": "y:2"}]}})),
        table(DEPLOYMENTS),
    ]),
    Case("Namespace, ServiceAccount, Lease", [
        call("POST", NAMESPACES, {"metadata": {"name": "{ns}-t", "labels": {"t": "{ns}"}}}),
        table(NAMESPACES, labelSelector="t={ns}"),
        call("POST", SERVICE_ACCOUNTS, {"metadata": {"name": "op"}}),
        table(SERVICE_ACCOUNTS),
        call("POST", LEASES, {"metadata": {"name": "l"}, "spec": {"holderIdentity": "pod-1"}}),
        call("POST", LEASES, {"metadata": {"name": "m"}, "spec": {}}),
        table(LEASES),
    ]),
    Case("RBAC", [
        call("POST", ROLES, {"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["secrets"],
                                                                  "verbs": ["get"]}]}),
        call("POST", ROLE_BINDINGS, {"metadata": {"name": "rb"}, "subjects": SUBJECTS,
                                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                 "name": "r"}}),
        call("POST", CLUSTER_ROLES, {"metadata": {"name": "{ns}-cr", "labels": {"t": "{ns}"}}, "rules": []}),
        call("POST", CLUSTER_ROLE_BINDINGS, {"metadata": {"name": "{ns}-crb", "labels": {"t": "{ns}"}},
                                             "subjects": SUBJECTS[:1], "roleRef": {
                                                 "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                 "name": "{ns}-cr"}}),
        table(ROLES), table(ROLE_BINDINGS), table(CLUSTER_ROLES, labelSelector="t={ns}"),
        table(CLUSTER_ROLE_BINDINGS, labelSelector="t={ns}"),
    ]),
    Case("PodDisruptionBudget and NetworkPolicy", [
        call("POST", PDBS, {"metadata": {"name": "p"}, "spec": {"minAvailable": 1,
                                                                "selector": {"matchLabels": {"a": "b"}}}}),
        call("POST", PDBS, {"metadata": {"name": "q"}, "spec": {"maxUnavailable": "50%", "selector": {}}}),
        table(PDBS),
        call("POST", NETWORK_POLICIES, {"metadata": {"name": "n"}, "spec": {
            "podSelector": {"matchLabels": {"a": "b"}}, "ingress": [{"ports": [{"port": 8080}]}]}}),
        call("POST", NETWORK_POLICIES, {"metadata": {"name": "all"}, "spec": {"podSelector": {}}}),
        table(NETWORK_POLICIES),
    ]),
    Case("Service", [
        call("POST", SERVICES, {"metadata": {"name": "s"}, "spec": {"selector": {"app": "x"}, "ports": [
            {"name": "metrics", "port": 8080, "targetPort": "metrics"},
            {"name": "dns", "port": 53, "protocol": "UDP"}]}}),
        table(SERVICES),
    ]),
    Case("Events, both versions", [
        call("POST", EVENTS, {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p",
                                                                           "namespace": "{ns}"},
                              "reason": "Started", "message": " started \n", "type": "Normal",
                              "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
                              "count": 3, "source": {"component": "kubelet", "host": "node-1"}}),
        call("POST", NEW_EVENTS, {"metadata": {"name": "e2"}, "eventTime": "2026-01-01T00:00:00.000000Z",
                                  "reportingController": "op", "reportingInstance": "op-1", "action": "Did",
                                  "reason": "Done", "note": "done", "type": "Warning",
                                  "regarding": {"kind": "Deployment", "name": "d", "namespace": "{ns}"}}),
        table(EVENTS), table(NEW_EVENTS),
    ]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_tables_agree(http_runner: Runner, case: Case) -> None:
    found = http_runner.run(case)
    assert not found, report(found)
