"""An HTTP Kubernetes API server over a MemoryCluster, for tests and development.

Real clients (kubectl, the kubernetes DynamicClient) talk to it as to an API server: discovery, CRUD, patches
(JSON merge, JSON, strategic merge with the built-in kinds' merge keys, apply), the status subresource and a
Deployment's scale, finalizers, watches with bookmarks and 410, ``kubectl get`` tables, ``fieldValidation``,
``dryRun=All``, OpenAPI v3 documents for ``kubectl explain`` and Events (``events``). Admission, conflicts, SSA and
the built-in kinds' types and defaults are the MemoryCluster's, so both behave alike; tests/differential compares
both with a real API server.

Simplified: legacy discovery only, one version per stored object (no conversion, but for Events), no paging
(``limit`` returns everything), built-in kinds' specs not validated (their metadata is), no authorization beyond an
optional bearer token, no protobuf.
"""

from offline.emulator.kubeconfig import write_kubeconfig
from offline.emulator.server import Emulator

__all__ = ["Emulator", "write_kubeconfig"]
