"""The kinds a memory cluster serves: the built-in kinds it types, what a served kind carries, and the errors
about one of its objects, worded as the API server words them.

A served kind is its discovery record, the admission of its CRD version (none for a built-in kind) and the
lists Server-Side Apply merges by key; built-in kinds differ from custom resources only in which carry a
generation and which refuse an update without a resourceVersion, as the API server's strategies do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.cluster.api import Cause, Conflict, Invalid, NotFound, Obj, ResourceInfo
from offline.cluster import admission

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"
BUILTIN_KINDS: tuple[ResourceInfo, ...] = (
    ResourceInfo("v1", "Secret", "secrets", True, False, "secret"),
    ResourceInfo("v1", "ConfigMap", "configmaps", True, False, "configmap", ("cm",)),
    ResourceInfo("v1", "Namespace", "namespaces", False, True, "namespace", ("ns",)),
    ResourceInfo("coordination.k8s.io/v1", "Lease", "leases", True, False, "lease"),
    # Events: the emulator serves core v1 ones as a view of the events.k8s.io/v1 store, as the API server does.
    ResourceInfo("v1", "Event", "events", True, False, "event", ("ev",)),
    ResourceInfo("events.k8s.io/v1", "Event", "events", True, False, "event", ("ev",)),
    # What installing the operator creates (deploy/), typed by offline/cluster/builtin/.
    ResourceInfo("v1", "ServiceAccount", "serviceaccounts", True, False, "serviceaccount", ("sa",)),
    ResourceInfo("v1", "Service", "services", True, True, "service", ("svc",)),
    # What a tenant's namespace holds and is limited by (the TenantSpace example's children and its teardown's hold).
    ResourceInfo("v1", "Pod", "pods", True, True, "pod", ("po",)),
    ResourceInfo("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, True, "persistentvolumeclaim",
                 ("pvc",)),
    ResourceInfo("v1", "ResourceQuota", "resourcequotas", True, True, "resourcequota", ("quota",)),
    ResourceInfo("v1", "LimitRange", "limitranges", True, False, "limitrange", ("limits",)),
    ResourceInfo("apps/v1", "Deployment", "deployments", True, True, "deployment", ("deploy",)),
    ResourceInfo("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True, True, "poddisruptionbudget",
                 ("pdb",)),
    ResourceInfo("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", True, False, "networkpolicy",
                 ("netpol",)),
    ResourceInfo("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False, False, "clusterrole"),
    ResourceInfo("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False, False,
                 "clusterrolebinding"),
    ResourceInfo("rbac.authorization.k8s.io/v1", "Role", "roles", True, False, "role"),
    ResourceInfo("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True, False, "rolebinding"),
    ResourceInfo(CRD_API_VERSION, CRD_KIND, "customresourcedefinitions", False, True,
                 "customresourcedefinition", ("crd", "crds")),
)

GENERATION_BUILTINS = frozenset({("apps", "Deployment"), ("policy", "PodDisruptionBudget"),
                                  ("networking.k8s.io", "NetworkPolicy"), ("apiextensions.k8s.io", CRD_KIND)})
"""Built-in kinds (group, kind) whose objects carry metadata.generation; Secrets, ConfigMaps and the other
built-ins served here have none. Every custom resource has one."""
CONDITIONAL_UPDATE_BUILTINS = frozenset({("coordination.k8s.io", "Lease"), ("policy", "PodDisruptionBudget"),
                                          ("apiextensions.k8s.io", CRD_KIND)})
"""Built-in kinds (group, kind) an update must name a resourceVersion for, as every custom resource."""

@dataclass(frozen=True)
class ServedKind:
    """A served kind: discovery info, the CRD admission for its version, its SSA list keys."""

    info: ResourceInfo
    admission: admission.CrdAdmission | None = None
    list_keys: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    custom: bool = False
    """A custom resource (served for a CRD, or permissively), not a built-in kind."""

    @property
    def store(self) -> tuple[str, str]:
        """Where its objects live: every version of a group's kind shares one store."""
        return (self.info.group, self.info.kind)

    @property
    def has_generation(self) -> bool:
        return self.custom or self.store in GENERATION_BUILTINS

    @property
    def needs_resource_version(self) -> bool:
        """Whether an update must name the resourceVersion it read (no unconditional update)."""
        return self.custom or self.store in CONDITIONAL_UPDATE_BUILTINS

    @property
    def is_namespace(self) -> bool:
        return self.store == ("", "Namespace")


def invalid(info: ResourceInfo, name: str, causes: list[Cause]) -> Invalid:
    """An Invalid error worded as the API server words it: ``Kind.group "name" is invalid: ...``."""
    qualified = f"{info.kind}.{info.group}" if info.group else info.kind
    parts = list(dict.fromkeys(f"{c.field}: {c.message}" for c in causes))  # each once, as Go's ToAggregate
    text = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return Invalid(f'{qualified} "{name}" is invalid: {text}', causes=causes,
                   details={"name": name, "group": info.group, "kind": info.kind})


def error_details(k: ServedKind, name: str) -> Obj:
    """The ``details`` of an API error about one object of the kind."""
    return {"name": name, "group": k.info.group, "kind": k.info.plural}


def not_found(k: ServedKind, name: str) -> NotFound:
    return NotFound(f'{k.info.resource} "{name}" not found', details=error_details(k, name))


def unconditional(k: ServedKind, name: str) -> Invalid:
    """An update of a kind that needs a resourceVersion, without one."""
    cause = Cause("metadata.resourceVersion", "Invalid value: 0: must be specified for an update")
    return Invalid(f'{k.info.resource} "{name}" is invalid: {cause.field}: {cause.message}', causes=[cause],
                   details=error_details(k, name))


def conflict(k: ServedKind, name: str) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {k.info.resource} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        details=error_details(k, name),
    )
