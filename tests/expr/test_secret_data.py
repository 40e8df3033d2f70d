"""The one rule for which Secret data values are secret, shared by the log redactor and `noSecretLeak`."""

from __future__ import annotations

import base64

from engine.expr import secret_data
from engine.expr.functions import SecretSink, remember_secrets, use_sink
from offline.scenario import leaks
from tests.call_count import calls


def secret(**data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def test_whole_values_of_password_token_secret_and_clouds_keys() -> None:
    values = set(secret_data.secret_values_of(secret(
        PASSWORD="pw-0123456789", api_token="tok-0123456789", client_secret="sec-0123456789",
        **{"clouds.yaml": "clouds: {a: b}"}, short_password="1234567", name="not-a-secret-value")))
    assert values == {"pw-0123456789", "tok-0123456789", "sec-0123456789", "clouds: {a: b}"}


def test_a_url_key_counts_only_for_the_password_it_carries() -> None:
    values = set(secret_data.secret_values_of(secret(
        endpoint_url="https://keystone.example:5000/v3",
        transport_url="rabbit://app:Sup3rS3cretPass@rabbit-0:5672,app:An0therS3cret@rabbit-1:5672/vhost",
        short_url="amqp://app:short@rabbit/")))
    assert values == {"Sup3rS3cretPass", "An0therS3cret"}


def test_string_data_is_read_as_is() -> None:
    obj = {"apiVersion": "v1", "kind": "Secret", "stringData": {"password": "plain-password-1"}}
    assert list(secret_data.secret_values_of(obj)) == ["plain-password-1"]


def test_the_leak_checker_uses_the_same_rule() -> None:
    assert leaks.secret_values_of is secret_data.secret_values_of


def test_secrets_read_from_a_cluster_reach_the_current_sink() -> None:
    """What a pass reads (an object or a list) teaches the sink; other kinds teach nothing."""
    sink = SecretSink()
    with use_sink(sink):
        remember_secrets([secret(password="read-back-password"), {"kind": "ConfigMap", "data": {"password": "x"}}])
        remember_secrets(secret(transport_url="rabbit://app:Read-Back-Pass@h/"))
        remember_secrets(None)
    assert set(sink.values()) == {"read-back-password", "Read-Back-Pass"}


def versioned(version: str, uid: str = "u-1", **data: str) -> dict[str, object]:
    obj = secret(**data)
    obj["metadata"] = {"name": "s", "uid": uid, "resourceVersion": version}
    return obj


def test_a_secret_version_is_read_for_its_values_once() -> None:
    """Every pass reads the same Secrets (issue 11): a version (uid, resourceVersion) already learned is not
    decoded again, a new version or another Secret is, and one without a version always is."""
    sink = SecretSink()
    read = versioned("7", password="first-password-1", **{f"k{i}": "x" for i in range(20)})
    sink.learn(read)
    again = calls(lambda: [sink.learn(read) for _ in range(10)]) / 10
    fresh = calls(lambda: SecretSink().learn(read))
    assert again * 4 < fresh, (again, fresh)
    sink.learn(versioned("8", password="rotated-password-2"))
    sink.learn(versioned("7", uid="u-2", password="other-secret-pw3"))
    unversioned = secret(password="no-version-password")
    sink.learn(unversioned)
    assert set(sink.values()) == {"first-password-1", "rotated-password-2", "other-secret-pw3", "no-version-password"}
