"""A registration's kubeconfig is untrusted input: read only inline connection material from it.

Anyone who may create a Secret in the clusters namespace writes these documents, so one must
never make the operator run a command (``exec``, ``auth-provider``) or read a local file and
send it to a server of the writer's choice (``tokenFile``; the file paths
``certificate-authority``, ``client-certificate``, ``client-key``). The kubernetes library's
loader honours all of those, so registrations never go through it: this reader takes the
current context's cluster and user, accepts the keys in ``CLUSTER_KEYS`` and ``USER_KEYS``,
skips the keys in ``IGNORED`` (they never change how the operator connects) and refuses every
other key by name. The answer is plain data (``ClientSettings``); ``engine.cluster.kube``
builds the client from it. Errors name the problem and the key, never a value of the document.
See docs/decisions/0005-registration-kubeconfigs.md.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import yaml

MAX_BYTES = 256 * 1024
"""A larger document is refused before it is parsed (real kubeconfigs are a few KiB)."""

MAX_DEPTH = 16
"""Nesting deeper than this is refused before the document is built (a kubeconfig nests 4 deep)."""

CLUSTER_KEYS = frozenset({
    "server", "certificate-authority-data", "tls-server-name", "insecure-skip-tls-verify", "proxy-url",
})
USER_KEYS = frozenset({"client-certificate-data", "client-key-data", "token", "username", "password"})
CONTEXT_KEYS = frozenset({"cluster", "user"})
TOP_KEYS = frozenset({"clusters", "users", "contexts", "current-context"})

IGNORED = {
    "document": frozenset({"apiVersion", "kind", "preferences", "extensions"}),
    "context": frozenset({"namespace", "extensions"}),
    "cluster": frozenset({"extensions"}),
    "user": frozenset({"extensions"}),
}
"""Read by nobody: ``extensions`` only ever reach exec plugins (refused anyway), ``preferences``
are kubectl's, a context's ``namespace`` is replaced by the registration's ``namespaces``."""

REFUSED = {
    "exec": "exec",
    "auth-provider": "auth-provider",
    "tokenFile": "token-file",
    "certificate-authority": "file-path",
    "client-certificate": "file-path",
    "client-key": "file-path",
}
"""Keys refused for what they would make the operator do, and the metric reason of each."""

WHY = {
    "exec": "it would run a command as the operator",
    "auth-provider": "it would run an authentication plugin as the operator",
    "token-file": "it would read a local file and send it as a token",
    "file-path": "it would read a local file",
}

UNKNOWN = "unknown-key"
MALFORMED = "malformed"
REASONS = (*sorted(set(REFUSED.values())), UNKNOWN, MALFORMED)
"""Every reason a kubeconfig is refused for (the label values of the refusal metric)."""

_NAMEABLE_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,39}")
"""An unknown key is quoted only when it looks like a field name, never when it could be a value."""
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class KubeconfigRefused(ValueError):
    """The kubeconfig is not used: ``reason`` (one of REASONS), ``key`` (the key at fault, if one)."""

    def __init__(self, reason: str, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.key = key


@dataclass(frozen=True)
class ClientSettings:
    """How to reach one cluster, all of it inline; the secret parts never show in a repr."""

    server: str
    ca_data: str | None = field(default=None, repr=False)
    """PEM certificates to verify the server with (None: the system's)."""
    client_cert_data: bytes | None = field(default=None, repr=False)
    client_key_data: bytes | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    tls_server_name: str | None = None
    insecure: bool = False
    proxy_url: str | None = field(default=None, repr=False)

    def secret_values(self) -> tuple[str, ...]:
        """The values a log line must never show (the redactor learns them)."""
        values = [self.token, self.password, self.proxy_url]
        if self.client_key_data is not None:
            values.append(self.client_key_data.decode("ascii", "replace"))
        return tuple(v for v in values if v)


def read_kubeconfig(text: str) -> ClientSettings:
    """The current context's connection settings; KubeconfigRefused names what is wrong."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise KubeconfigRefused(MALFORMED, f"the kubeconfig is larger than {MAX_BYTES // 1024} KiB")
    _check_shape(text)
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise KubeconfigRefused(MALFORMED, f"the kubeconfig is not valid YAML{_where(exc)}") from None
    if not isinstance(document, dict):
        raise KubeconfigRefused(MALFORMED, "the kubeconfig is not a YAML mapping")
    _check_keys(document, TOP_KEYS, "document")
    current = document.get("current-context")
    if not isinstance(current, str) or not current:
        raise KubeconfigRefused(MALFORMED, "the kubeconfig names no current-context", key="current-context")
    context = _named(document, "contexts", "context", current)
    _check_keys(context, CONTEXT_KEYS, "context")
    cluster = _named(document, "clusters", "cluster", context.get("cluster"))
    _check_keys(cluster, CLUSTER_KEYS, "cluster")
    user = _named(document, "users", "user", context["user"]) if context.get("user") else {}
    _check_keys(user, USER_KEYS, "user")
    return _settings(cluster, user)


def _check_shape(text: str) -> None:
    """Refuse aliases and deep nesting from the event stream, before any object is built."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise KubeconfigRefused(MALFORMED, "the kubeconfig uses YAML aliases")
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise KubeconfigRefused(MALFORMED, f"the kubeconfig nests deeper than {MAX_DEPTH} levels")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError as exc:
        raise KubeconfigRefused(MALFORMED, f"the kubeconfig is not valid YAML{_where(exc)}") from None


def _where(exc: yaml.YAMLError) -> str:
    """Only the position: the library's own text quotes the document."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return ""
    return f" (line {mark.line + 1}, column {mark.column + 1})"


def _named(document: Mapping[str, Any], section: str, item: str, name: Any) -> Mapping[str, Any]:
    """The ``item`` of the entry of ``section`` called ``name``."""
    if not isinstance(name, str) or not name:
        raise KubeconfigRefused(MALFORMED, f"the current context names no {item}", key=item)
    entries = document.get(section)
    if not isinstance(entries, list):
        raise KubeconfigRefused(MALFORMED, f"the kubeconfig's {section} is not a list", key=section)
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") == name:
            for key in entry:
                if key not in ("name", item):
                    _refuse_key(str(key), f"an entry of {section}")
            body = entry.get(item)
            if body is None:
                return {}
            if not isinstance(body, dict):
                raise KubeconfigRefused(MALFORMED, f"the current {item} is not a mapping", key=item)
            return body
    raise KubeconfigRefused(MALFORMED, f"the kubeconfig has no {item} the current context names", key=section)


def _check_keys(body: Mapping[Any, Any], allowed: frozenset[str], where: str) -> None:
    for key in body:
        key = str(key)
        if key not in allowed and key not in IGNORED[where]:
            _refuse_key(key, "the kubeconfig" if where == "document" else f"the current {where}")


def _refuse_key(key: str, where: str) -> None:
    reason = REFUSED.get(key)
    if reason is not None:
        raise KubeconfigRefused(reason, f"{where} has key {key!r}, refused: {WHY[reason]}; only inline "
                                        "credentials are accepted", key=key)
    if _NAMEABLE_KEY.fullmatch(key):
        raise KubeconfigRefused(UNKNOWN, f"{where} has key {key!r}, which the operator does not accept", key=key)
    raise KubeconfigRefused(UNKNOWN, f"{where} has a key that is no kubeconfig field", key="(not shown)")


def _settings(cluster: Mapping[str, Any], user: Mapping[str, Any]) -> ClientSettings:
    server = _text(cluster, "server", "the cluster's server")
    if server is None:
        raise KubeconfigRefused(MALFORMED, "the current cluster has no server", key="server")
    _check_url(server, "server", ("http", "https"))
    insecure = cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(insecure, bool):
        raise KubeconfigRefused(MALFORMED, "insecure-skip-tls-verify is not true or false",
                                key="insecure-skip-tls-verify")
    ca_data = _pem(cluster, "certificate-authority-data")
    if insecure and ca_data is not None:
        raise KubeconfigRefused(MALFORMED, "certificate-authority-data and insecure-skip-tls-verify together "
                                           "are contradictory", key="insecure-skip-tls-verify")
    tls_server_name = _text(cluster, "tls-server-name", "the cluster's tls-server-name")
    if tls_server_name is not None and not _VISIBLE_ASCII.fullmatch(tls_server_name):
        raise KubeconfigRefused(MALFORMED, "tls-server-name is not a host name", key="tls-server-name")
    proxy_url = _text(cluster, "proxy-url", "the cluster's proxy-url")
    if proxy_url is not None:
        _check_url(proxy_url, "proxy-url", ("http", "https"), credentials=True)
    token = _text(user, "token", "the user's token")
    if token is not None and not _VISIBLE_ASCII.fullmatch(token):
        raise KubeconfigRefused(MALFORMED, "the user's token holds whitespace or a control character "
                                           "(a trailing newline?); it is not sent", key="token")
    username = _text(user, "username", "the user's username")
    password = _text(user, "password", "the user's password")
    if (username is None) != (password is None):
        raise KubeconfigRefused(MALFORMED, "the user has a username or a password but not both",
                                key="username" if username is None else "password")
    if username is not None and (":" in username or _CONTROL.search(username)):
        raise KubeconfigRefused(MALFORMED, "the user's username holds a colon or a control character",
                                key="username")
    if password is not None and _CONTROL.search(password):
        raise KubeconfigRefused(MALFORMED, "the user's password holds a control character", key="password")
    if token is not None and username is not None:
        raise KubeconfigRefused(MALFORMED, "the user has both a token and a username/password", key="token")
    cert = _pem(user, "client-certificate-data")
    key = _pem(user, "client-key-data")
    if (cert is None) != (key is None):
        raise KubeconfigRefused(MALFORMED, "the user has a client certificate or a client key but not both",
                                key="client-key-data" if key is None else "client-certificate-data")
    return ClientSettings(
        server=server.rstrip("/"), ca_data=ca_data, tls_server_name=tls_server_name, insecure=insecure,
        proxy_url=proxy_url, token=token, username=username, password=password,
        client_cert_data=None if cert is None else cert.encode("ascii"),
        client_key_data=None if key is None else key.encode("ascii"),
    )


def _text(body: Mapping[str, Any], key: str, what: str) -> str | None:
    value = body.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise KubeconfigRefused(MALFORMED, f"{what} is not a string", key=key)
    return value


def _pem(body: Mapping[str, Any], key: str) -> str | None:
    """Base64-encoded PEM, decoded; refused when it is not."""
    value = _text(body, key, key)
    if value is None:
        return None
    try:
        pem = base64.b64decode("".join(value.split()), validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise KubeconfigRefused(MALFORMED, f"{key} is not base64-encoded PEM", key=key) from None
    if "-----BEGIN " not in pem:
        raise KubeconfigRefused(MALFORMED, f"{key} holds no PEM block", key=key)
    return pem


def _check_url(url: str, key: str, schemes: tuple[str, ...], *, credentials: bool = False) -> None:
    if not _VISIBLE_ASCII.fullmatch(url):
        raise KubeconfigRefused(MALFORMED, f"{key} holds whitespace or a control character", key=key)
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        raise KubeconfigRefused(MALFORMED, f"{key} is not a URL", key=key) from None
    if parts.scheme not in schemes or not host:
        raise KubeconfigRefused(MALFORMED, f"{key} is not an {' or '.join(schemes)} URL with a host", key=key)
    if not credentials and (parts.username is not None or parts.password is not None):
        raise KubeconfigRefused(MALFORMED, f"{key} carries credentials; put them in the user", key=key)
