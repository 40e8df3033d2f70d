"""Build a KubeCluster from a kubeconfig or from a pod's service account, each with its own
Configuration: the library's global default is never read or written.

Two kinds of kubeconfig: the management cluster's (``--kubeconfig``, given by the admin) goes
through the library's loader, which honours exec plugins and file paths; a registration's
(written by whoever may create Secrets in the clusters namespace) never does: it is read by
``engine.cluster.kubeconfig`` (inline material only) and the Configuration is built here."""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import load_incluster_config

from engine import __version__
from engine.cluster.api import BadRequest
from engine.cluster.kube.cluster import DISCOVERY_PREFIX, POOL_SIZE, KubeCluster
from engine.cluster.kube.library import kube_config
from engine.cluster.kube.owned_dirs import sweep_dead
from engine.cluster.kube.requests import RequestObserver
from engine.cluster.kubeconfig import ClientSettings, read_kubeconfig

MAX_KUBECONFIG_FILE_BYTES = 4 * 1024 * 1024
"""The largest ``--kubeconfig`` file handed to the library's loader, which reads and parses it whole: a kubeconfig
of a few hundred contexts with their certificates inline stays under 1 MiB."""

USER_AGENT = f"c5c3-order-engine/{__version__}"
"""The User-Agent of every request (an API server's audit log records it); a shard member's clients add
`` (member <name>)`` (``engine.operator``). The library's own would say ``OpenAPI-Generator/<version>/python``."""


def api_client(configuration: Configuration) -> ApiClient:
    """An ApiClient on a Configuration, sending our User-Agent."""
    client = ApiClient(configuration)
    client.user_agent = USER_AGENT
    return client


def api_client_from_kubeconfig(kubeconfig: Mapping[str, Any] | str | Path, *, context: str | None = None) -> ApiClient:
    """An ApiClient for one context of a trusted kubeconfig; BadRequest when the kubeconfig is unusable."""
    configuration = _fresh()
    if not isinstance(kubeconfig, Mapping):
        _check_size(Path(kubeconfig))
    loader = kube_config()  # imported here: a pod's operator reads no kubeconfig (decision 0036)
    try:
        if isinstance(kubeconfig, Mapping):
            loader.load_kube_config_from_dict(
                dict(kubeconfig), context=context, client_configuration=configuration, persist_config=False)
        else:
            loader.load_kube_config(
                config_file=str(kubeconfig), context=context, client_configuration=configuration, persist_config=False)
    except (ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        raise BadRequest(f"unusable kubeconfig: {exc}") from None
    except Exception as exc:  # the library's YAML parser's own errors (a file that is no YAML text)
        raise BadRequest(f"unusable kubeconfig: {type(exc).__name__}") from None
    return api_client(configuration)


def _check_size(path: Path) -> None:
    """BadRequest, before the loader reads a byte, for a kubeconfig file over ``MAX_KUBECONFIG_FILE_BYTES`` (a pipe,
    ``--kubeconfig <(...)``, states no size and is read as given)."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # the loader says what is wrong with the path
    if size > MAX_KUBECONFIG_FILE_BYTES:
        raise BadRequest(f"unusable kubeconfig: the file is {size / (1 << 20):.0f} MiB, over the limit of "
                         f"{MAX_KUBECONFIG_FILE_BYTES >> 20} MiB; it is not read")


def kube_cluster_from_kubeconfig(
    name: str,
    kubeconfig: Mapping[str, Any] | str | Path,
    *,
    context: str | None = None,
    cache: bool = True,
    discovery_cache_dir: Path | None = None,
    namespaces: Sequence[str] | None = None,
    on_request: RequestObserver | None = None,
) -> KubeCluster:
    """A KubeCluster named ``name`` for one context (default: the current one) of a trusted kubeconfig."""
    return KubeCluster(name, api_client_from_kubeconfig(kubeconfig, context=context), cache=cache,
                       discovery_cache_dir=discovery_cache_dir, namespaces=namespaces, on_request=on_request)


PRIVATE_PREFIX = "engine-kubeconfig-"
"""Private directories of client certificates and keys: ``<prefix><pid>-<process tag>-<random>`` in the
temporary folder."""

PROCESS_TAG = secrets.token_hex(4)
"""Tells this process's directories from those of an earlier process that had the same pid."""


def sweep_private_dirs(temp_dir: Path | None = None) -> list[Path]:
    """Remove the client-key directories a killed operator left behind; the removed ones.

    A graceful stop removes its own; after ``kill -9`` (or an OOM kill) they stay, and on a pod's
    emptyDir /tmp they outlive the container. A directory is stale when its process is gone, or
    carries our pid with another process's tag (a restarted container's operator is pid 1 again).
    Another live operator's directories, and this process's own, stay."""
    removed: list[Path] = []
    folder = temp_dir if temp_dir is not None else Path(tempfile.gettempdir())
    for path in folder.glob(f"{PRIVATE_PREFIX}*-*"):
        pid_text, _, rest = path.name[len(PRIVATE_PREFIX):].partition("-")
        if not pid_text.isdigit() or path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.getuid():
            continue
        pid, tag = int(pid_text), rest.partition("-")[0]
        if (pid == os.getpid() and tag != PROCESS_TAG) or (pid != os.getpid() and not _alive(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def sweep_discovery_dirs(temp_dir: Path | None = None) -> list[Path]:
    """Remove the discovery cache folders that operators which did not stop left behind; the removed ones.
    A folder goes only when its owner's lock is free (``owned_dirs``): a live operator's stays, on any pid."""
    return sweep_dead(DISCOVERY_PREFIX, temp_dir)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, as another user
    return True


def kube_cluster_from_registration(
    name: str,
    kubeconfig: str,
    *,
    cache: bool = True,
    discovery_cache_dir: Path | None = None,
    namespaces: Sequence[str] | None = None,
    on_request: RequestObserver | None = None,
    on_secrets: Callable[[tuple[str, ...]], None] | None = None,
) -> KubeCluster:
    """A KubeCluster from an untrusted kubeconfig's text (a registration Secret's); KubeconfigRefused
    (a ValueError) names the key it will not use. Client certificates go to 0600 files in a private
    directory the cluster removes when it stops. ``on_secrets`` learns the credentials it will send
    (token, password, client key, proxy URL), so log redaction blanks them from then on."""
    settings = read_kubeconfig(kubeconfig)
    if on_secrets is not None:
        on_secrets(settings.secret_values())
    private_dir = tempfile.mkdtemp(prefix=f"{PRIVATE_PREFIX}{os.getpid()}-{PROCESS_TAG}-")
    try:
        configuration = configuration_for(settings, Path(private_dir))
        return KubeCluster(name, api_client(configuration), cache=cache, discovery_cache_dir=discovery_cache_dir,
                           namespaces=namespaces, on_request=on_request, private_dir=private_dir)
    except BaseException:
        shutil.rmtree(private_dir, ignore_errors=True)
        raise


def configuration_for(settings: ClientSettings, private_dir: Path) -> Configuration:
    """A Configuration with exactly the settings' material; the client certificate and key, which the
    TLS library reads from files only, are written to ``private_dir`` (mode 0600)."""
    configuration = _fresh()
    configuration.host = settings.server
    configuration.verify_ssl = not settings.insecure
    if settings.ca_data is not None:
        configuration.ca_cert_data = settings.ca_data
    if settings.tls_server_name is not None:
        configuration.tls_server_name = settings.tls_server_name
    if settings.proxy_url is not None:
        configuration.proxy = settings.proxy_url
    if settings.token is not None:
        configuration.api_key = {"authorization": f"Bearer {settings.token}"}
    elif settings.username is not None and settings.password is not None:
        pair = f"{settings.username}:{settings.password}".encode()
        configuration.api_key = {"authorization": f"Basic {base64.b64encode(pair).decode('ascii')}"}
    if settings.client_cert_data is not None and settings.client_key_data is not None:
        configuration.cert_file = str(_private_file(private_dir / "client.crt", settings.client_cert_data))
        configuration.key_file = str(_private_file(private_dir / "client.key", settings.client_key_data))
    return configuration


def _private_file(path: Path, content: bytes) -> Path:
    """Write ``content`` to a new file only its owner can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with contextlib.closing(os.fdopen(fd, "wb")) as out:
        out.write(content)
    return path


def kube_cluster_in_pod(
    name: str,
    *,
    cache: bool = True,
    discovery_cache_dir: Path | None = None,
    namespaces: Sequence[str] | None = None,
    on_request: RequestObserver | None = None,
) -> KubeCluster:
    """A KubeCluster on the cluster this pod runs in, through its service account."""
    configuration = _fresh()
    try:
        load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except ConfigException as exc:
        raise BadRequest(f"not running in a pod with a service account: {exc}") from None
    return KubeCluster(name, api_client(configuration), cache=cache, discovery_cache_dir=discovery_cache_dir,
                       namespaces=namespaces, on_request=on_request)


def _fresh() -> Configuration:
    configuration = Configuration()
    configuration.connection_pool_maxsize = POOL_SIZE
    return configuration
