"""Real Kubernetes API servers for tests and development: etcd, kube-apiserver and (optionally) the garbage
collector and namespace controllers of kube-controller-manager, on 127.0.0.1, as controller-runtime's envtest
starts them.

The binaries come from ``scripts/kube-binaries`` (pinned Go modules, built once into a cache folder). A
``KubeServer`` is a throwaway cluster: free ports, a temporary data folder, certificates and tokens made at
start, every process stopped (and the folder removed) on ``stop``, on interpreter exit, and when the process
that started it dies. It describes itself as a kubeconfig like the emulator, so ``write_kubeconfig`` takes both.
"""

from offline.realkube.binaries import BinariesMissing, KubeBinaries, find_binaries
from offline.realkube.server import ADMIN, KubeServer, ServerFailed, User

__all__ = ["ADMIN", "BinariesMissing", "KubeBinaries", "KubeServer", "ServerFailed", "User", "find_binaries"]
