"""An HTTP Kubernetes API server over a MemoryCluster, for tests and development.

Real clients (kubectl, the kubernetes DynamicClient) talk to it as to an API server:
discovery (short names, categories), CRUD, patches (merge, JSON, strategic treated as merge,
apply), the status subresource, finalizers, watches with bookmarks and 410, tables for
``kubectl get``; ``fieldValidation`` (Strict refuses unknown fields by path, Warn, the default,
answers with ``Warning`` headers, Ignore drops them); ``dryRun=All`` (the write carried out on a
scratch copy: the real answer, nothing stored); OpenAPI v3 documents with the CRDs' schemas for
``kubectl explain``; Events in one store served as events.k8s.io/v1 and core v1 (``events``).
Admission, conflicts and SSA are the MemoryCluster's, so both behave alike.

Simplified: legacy discovery only (no aggregated discovery), one version per stored object
(no conversion, but for Events), no paging (``limit`` returns everything), built-in kinds
(Deployment, RBAC, ...) stored without a schema, no authorization beyond an optional bearer
token, no protobuf.
"""

from engine.testing.emulator.kubeconfig import write_kubeconfig
from engine.testing.emulator.server import Emulator

__all__ = ["Emulator", "write_kubeconfig"]
