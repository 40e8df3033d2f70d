"""The registration kubeconfig reader: inline material only, bounded, and its errors never quote the document."""

from __future__ import annotations

import base64

import pytest
import yaml

from engine.cluster.kubeconfig import MAX_DEPTH, KubeconfigRefused, read_kubeconfig

TOKEN = "eyJhbGciOiJSUzI1NiIsImtpZCI6InNlY3JldCJ9.c2VjcmV0LXBheWxvYWQ"
PEM = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()


def document(user: dict[str, object] | None = None, cluster: dict[str, object] | None = None) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "b",
        "clusters": [{"name": "a", "cluster": {"server": "https://elsewhere:1"}},
                     {"name": "b", "cluster": {"server": "https://edge.example:6443", **(cluster or {})}}],
        "users": [{"name": "a", "user": {"exec": {"command": "sh"}}},
                  {"name": "b", "user": {"token": TOKEN} if user is None else user}],
        "contexts": [{"name": "b", "context": {"cluster": "b", "user": "b", "namespace": "x"}}],
    })


def refusal(text: str) -> KubeconfigRefused:
    with pytest.raises(KubeconfigRefused) as caught:
        read_kubeconfig(text)
    return caught.value


def no_part_of(secret: str, text: str) -> bool:
    """No 6-character piece of ``secret`` shows in ``text``."""
    return not any(secret[i:i + 6] in text for i in range(len(secret) - 5))


def test_the_current_contexts_inline_material_is_read() -> None:
    """Only the current context's cluster and user count (another user's exec is never looked at)."""
    settings = read_kubeconfig(document(cluster={"certificate-authority-data": PEM, "tls-server-name": "edge",
                                                 "proxy-url": "http://proxy:3128"}))
    assert settings.server == "https://edge.example:6443"
    assert settings.token == TOKEN
    assert settings.ca_data is not None and settings.ca_data.startswith("-----BEGIN CERTIFICATE-----")
    assert (settings.tls_server_name, settings.proxy_url, settings.insecure) == ("edge", "http://proxy:3128", False)
    assert TOKEN not in repr(settings)


def test_username_and_password() -> None:
    settings = read_kubeconfig(document({"username": "admin", "password": "pa ss"}))
    assert (settings.username, settings.password, settings.token) == ("admin", "pa ss", None)


def test_a_token_with_a_trailing_newline_is_refused_without_quoting_it() -> None:
    """The newline would end up in an 'Invalid header value' error that quotes the whole header."""
    refused = refusal(document({"token": TOKEN + "\n"}))
    assert refused.reason == "malformed" and refused.key == "token"
    assert "trailing newline" in str(refused)
    assert no_part_of(TOKEN, str(refused))


@pytest.mark.parametrize("broken", [
    f'users: [{{name: b, user: {{token: "{TOKEN}}}]\n',
    f"current-context: b\nusers:\n- name: b\n  user:\n    token: {TOKEN}\n   bad: indentation\n",
    f"users:\n\t- token: {TOKEN}\n",
    f"users: !!python/object:os.system {TOKEN}\n",
])
def test_a_yaml_error_names_the_place_not_the_content(broken: str) -> None:
    """A syntax error gives line and column only; the YAML library's own message quotes the line."""
    refused = refusal(broken)
    assert refused.reason == "malformed"
    assert no_part_of(TOKEN, str(refused))


def test_size_depth_and_aliases_are_bounded() -> None:
    assert "larger than" in str(refusal("a: " + "x" * 300_000))
    deep = "a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert "nests deeper" in str(refusal(deep))
    assert "aliases" in str(refusal("a: &x [1]\nb: *x\n"))


@pytest.mark.parametrize(("user", "cluster", "reason", "key"), [
    ({"exec": {"command": "sh"}}, {}, "exec", "exec"),
    ({"auth-provider": {"name": "gcp"}}, {}, "auth-provider", "auth-provider"),
    ({"tokenFile": "/var/run/secrets/token"}, {}, "token-file", "tokenFile"),
    ({"client-certificate": "/a", "client-key": "/b"}, {}, "file-path", "client-certificate"),
    (None, {"certificate-authority": "/ca"}, "file-path", "certificate-authority"),
    ({"token": TOKEN, "as": "admin"}, {}, "unknown-key", "as"),
    ({TOKEN: "x"}, {}, "unknown-key", "(not shown)"),
    (None, {"server": "file:///etc/passwd"}, "malformed", "server"),
    (None, {"server": "https://user:pw@edge"}, "malformed", "server"),
    (None, {"certificate-authority-data": PEM, "insecure-skip-tls-verify": True}, "malformed",
     "insecure-skip-tls-verify"),
    (None, {"certificate-authority-data": "not base64!"}, "malformed", "certificate-authority-data"),
    ({"client-certificate-data": PEM}, {}, "malformed", "client-key-data"),
    ({"token": TOKEN, "username": "a", "password": "b"}, {}, "malformed", "token"),
])
def test_refusals_name_the_key_and_the_reason(user: dict[str, object] | None, cluster: dict[str, object],
                                              reason: str, key: str) -> None:
    refused = refusal(document(user, cluster))
    assert (refused.reason, refused.key) == (reason, key)
    assert no_part_of(TOKEN, str(refused))


def test_structure_errors() -> None:
    assert "no current-context" in str(refusal("clusters: []\n"))
    assert "not a YAML mapping" in str(refusal("- a\n"))
    text = document().replace("current-context: b", "current-context: nowhere")
    assert "no context the current context names" in str(refusal(text))
