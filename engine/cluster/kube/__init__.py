"""The Cluster interface on a real API server through the official ``kubernetes`` client.

This package is the only importer of ``kubernetes``; nothing it raises is a kubernetes type.
"""

from engine.cluster.kube.cluster import KubeCluster
from engine.cluster.kube.config import (
    api_client_from_kubeconfig,
    kube_cluster_from_kubeconfig,
    kube_cluster_from_registration,
    kube_cluster_in_pod,
    sweep_private_dirs,
)

__all__ = ["KubeCluster", "api_client_from_kubeconfig", "kube_cluster_from_kubeconfig",
           "kube_cluster_from_registration", "kube_cluster_in_pod", "sweep_private_dirs"]
