"""Build a KubeCluster from a kubeconfig (a file, or a dict as registration Secrets carry it) or
from a pod's service account, each with its own Configuration: the library's global default
is never read or written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kubernetes import config
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException

from engine.cluster.api import BadRequest
from engine.cluster.kube.cluster import POOL_SIZE, KubeCluster
from engine.cluster.kube.requests import RequestObserver


def api_client_from_kubeconfig(kubeconfig: Mapping[str, Any] | str | Path, *, context: str | None = None) -> ApiClient:
    """An ApiClient for one context of a kubeconfig; BadRequest when the kubeconfig is unusable."""
    configuration = _fresh()
    try:
        if isinstance(kubeconfig, Mapping):
            config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
                dict(kubeconfig), context=context, client_configuration=configuration, persist_config=False)
        else:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=str(kubeconfig), context=context, client_configuration=configuration, persist_config=False)
    except (ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        raise BadRequest(f"unusable kubeconfig: {exc}") from None
    return ApiClient(configuration)


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
    """A KubeCluster named ``name`` for one context (default: the current one) of a kubeconfig."""
    return KubeCluster(name, api_client_from_kubeconfig(kubeconfig, context=context), cache=cache,
                       discovery_cache_dir=discovery_cache_dir, namespaces=namespaces, on_request=on_request)


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
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except ConfigException as exc:
        raise BadRequest(f"not running in a pod with a service account: {exc}") from None
    return KubeCluster(name, ApiClient(configuration), cache=cache, discovery_cache_dir=discovery_cache_dir,
                       namespaces=namespaces, on_request=on_request)


def _fresh() -> Configuration:
    configuration = Configuration()
    configuration.connection_pool_maxsize = POOL_SIZE
    return configuration
