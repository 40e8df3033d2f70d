"""An HTTP Kubernetes API server over a MemoryCluster, for tests and development.

Real clients (kubectl, the kubernetes DynamicClient) talk to it as to an API server:
discovery (short names, categories), CRUD, patches (JSON merge, JSON, strategic merge with the
built-in kinds' merge keys, apply), the status subresource and a Deployment's scale, finalizers,
watches with bookmarks and 410, the API server's own tables for ``kubectl get`` of built-in kinds;
``fieldValidation`` (Strict refuses unknown fields by path, Warn, the default, answers with
``Warning`` headers, Ignore drops them); ``dryRun=All`` (the write carried out on a scratch copy:
the real answer, nothing stored); OpenAPI v3 documents with the CRDs' schemas for ``kubectl
explain``; Events in one store served as events.k8s.io/v1 and core v1 (``events``). Admission,
conflicts, SSA and the built-in kinds' types and defaults are the MemoryCluster's, so both behave
alike. tests/differential compares both with a real API server.

Simplified: legacy discovery only (no aggregated discovery), one version per stored object
(no conversion, but for Events), no paging (``limit`` returns everything), built-in kinds' specs
not validated (their metadata is), no authorization beyond an optional bearer token, no protobuf.
"""

from offline.emulator.kubeconfig import write_kubeconfig
from offline.emulator.server import Emulator

__all__ = ["Emulator", "write_kubeconfig"]
