"""The Cluster interface on a real API server through the official ``kubernetes`` client.

This package is the only importer of ``kubernetes``; nothing it raises is a kubernetes type. It imports only the
parts of the library it uses (``library.py``, decision 0036), so ``install`` runs before anything else here.
"""

from engine.cluster.kube.library import install

install()

# isort: split
from engine.cluster.kube.cluster import KubeCluster  # noqa: E402
from engine.cluster.kube.config import (  # noqa: E402
    api_client_from_kubeconfig,
    kube_cluster_from_kubeconfig,
    kube_cluster_from_registration,
    kube_cluster_in_pod,
    sweep_discovery_dirs,
    sweep_private_dirs,
)

__all__ = ["KubeCluster", "api_client_from_kubeconfig", "kube_cluster_from_kubeconfig",
           "kube_cluster_from_registration", "kube_cluster_in_pod", "sweep_discovery_dirs",
           "sweep_private_dirs"]
