"""An HTTP Kubernetes API server over a MemoryCluster, for tests and development.

Real clients (kubectl, the kubernetes DynamicClient) talk to it as to an API server:
discovery, CRUD, patches (merge, JSON, strategic treated as merge, apply), the status
subresource, finalizers, watches with bookmarks and 410, tables for ``kubectl get``.
Admission, conflicts and SSA are the MemoryCluster's, so both behave alike.

Simplified: legacy discovery only (no aggregated discovery), one version per stored object
(no conversion), no paging (``limit`` returns everything), ``dryRun`` refused rather than
ignored, no authorization beyond an optional bearer token, no protobuf.
"""

from engine.testing.emulator.kubeconfig import write_kubeconfig
from engine.testing.emulator.server import Emulator

__all__ = ["Emulator", "write_kubeconfig"]
