"""A registration Secret's kubeconfig is untrusted input (docs/decisions/0005-registration-kubeconfigs.md): on a
real target cluster it names the API server, the CA that signed the server's certificate
(``certificate-authority-data``) and a bearer token. The operator trusts the server only through that CA: a
registration carrying another cluster's CA engages nothing it can read (TLS verification fails, the token is never
logged, an order there is left alone), and the corrected Secret engages the cluster afresh.

Real servers only: the emulator serves plain HTTP, so there is no certificate to verify.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator

import pytest
import yaml
from integration_kit import API, TENANT, OperatorProcess, World, condition, get, order, wait_for

from engine.cluster.api import Obj
from engine.runtime.clusters import KUBECONFIG_KEY
from offline.realkube.certificates import make_certificates

pytestmark = pytest.mark.only_on("real", reason="the emulator serves plain HTTP: no certificate to verify")

EDGE = "edge-tls"


@pytest.fixture(scope="module")
def operator(world: World) -> Iterator[OperatorProcess]:
    process = OperatorProcess(world, name="tls-operator")
    process.wait_ready()
    yield process
    assert process.stop() == 0, process.logs()[-3000:]


def with_ca(secret: Obj, ca_pem: bytes) -> Obj:
    """The registration Secret with another CA (one that did not sign the server's certificate)."""
    config = yaml.safe_load(base64.b64decode(secret["data"][KUBECONFIG_KEY]))
    stranger = base64.b64encode(ca_pem).decode()
    assert config["clusters"][0]["cluster"]["certificate-authority-data"] != stranger
    config["clusters"][0]["cluster"]["certificate-authority-data"] = stranger
    return {**secret, "data": {**secret["data"], KUBECONFIG_KEY: base64.b64encode(
        yaml.safe_dump(config).encode()).decode()}}


def test_a_registration_with_another_clusters_ca_is_not_trusted_until_corrected(
        world: World, operator: OperatorProcess) -> None:
    edge = world.target(EDGE)
    world.assign(EDGE)
    edge.cluster.create(order("KeystoneUser", "behind-tls"))
    token = edge.registration()
    (world.tmp / "stranger").mkdir()
    stranger = make_certificates(world.tmp / "stranger", "stranger").ca.read_bytes()  # a CA made apart
    world.management.create(with_ca(token, stranger))

    wait_for(lambda: "CERTIFICATE_VERIFY_FAILED" in operator.logs(), message="the operator to refuse the certificate")
    time.sleep(1.0)  # whatever it does meanwhile, it serves nothing there
    left_alone = get(edge.cluster, API, "KeystoneUser", TENANT, "behind-tls") or {}
    assert not left_alone.get("status") and not left_alone["metadata"].get("finalizers")
    secret_token = yaml.safe_load(base64.b64decode(token["data"][KUBECONFIG_KEY]))["users"][0]["user"]["token"]
    assert secret_token not in operator.logs()

    world.register(edge)  # the Secret corrected: the CA that signed edge-tls's certificate
    wait_for(lambda: condition(get(edge.cluster, API, "KeystoneUser", TENANT, "behind-tls"), "Ready") == "True",
             message="the order Ready once the registration carries the right CA")
    assert secret_token not in operator.logs()
