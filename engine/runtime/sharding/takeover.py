"""A shard member's take-over of an order: its children labelled for the member before the member's first pass.

The children of the kinds a member caches by its label carry that label; after a move they carry the previous
member's, and children written before ``--sharded`` carry none. Labelling them first puts every child of the order
in the member's caches before a pass reads them: none is created twice, none left behind (decision 0032).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from engine.cluster.api import ApiError, Cluster, Obj
from engine.cluster.registry import ClusterSet
from engine.cluster.selectors import carries_labels, fitting_selector
from engine.outcome import Request
from engine.runtime.kinds import Log
from engine.runtime.sharding.fence import Fenced
from engine.runtime.sharding.labels import FIELD_MANAGER, SHARD_LABEL, labels_of

Namespaces = Callable[[str], Sequence[str] | None]
"""A cluster's name -> the namespaces it is watched in (None: all)."""


def take_over(clusters: ClusterSet, request: Request, kinds: Sequence[tuple[str, str]],
              ownership: tuple[str, str, str], member: str, *, anywhere: bool,
              on_targets: Collection[tuple[str, str]], namespaces_of: Namespaces, holds: Callable[[], bool],
              log: Log) -> int | None:
    """Label the order's children of ``kinds`` for member ``member``; how many were labelled, or None when the
    management cluster or the order's cluster could not be read (the order waits for its next try).

    Listed from the API server by the order's name and namespace labels (``ownership``: the name, namespace and
    cluster label keys; the cluster label, when a child has one, must be the order's; one without it must be on the
    order's cluster), on the management cluster and the order's own, and on every other cluster only when the
    order kind's rules write to a cluster they name (``anywhere``): elsewhere no child of it can be. On a target
    cluster only the kinds watched there (``on_targets``) are listed: a kind watched on the management cluster
    alone has no cache there to hold children in (and the target cluster's RBAC, ``engine rbac --target``, grants
    no list of it). Another cluster that cannot be read is said in a warning. Once ``holds`` says the member's
    tenure has lapsed, no further label is written (``Fenced``, an ApiError as any refusal)."""
    name_label, namespace_label, cluster_label = ownership
    owner = {name_label: request.name, namespace_label: request.namespace}
    selector = fitting_selector(owner)  # a name no label holds is only required to be there; take_one compares
    taken = 0
    for cluster_name, cluster in clusters:
        if not anywhere and cluster_name not in ("", request.cluster):
            continue
        try:
            refused: ApiError | None = None
            for api_version, child_kind in kinds:
                if cluster_name != "" and (api_version, child_kind) not in on_targets:
                    continue
                if not cluster.serves(api_version, child_kind):
                    continue
                for namespace in namespaces_of(cluster_name) or (None,):
                    for child in cluster.list(api_version, child_kind, namespace, labels=selector, live=True).items:
                        try:
                            taken += take_one(cluster_name, cluster, request, child, owner, cluster_label, member,
                                              holds)
                        except Fenced:
                            raise
                        except ApiError as exc:  # changed meanwhile, or refused: the others still get theirs
                            refused = exc
            if refused is not None:
                raise refused  # the order waits for its next try, which labels what is left
        except ApiError as exc:  # a lapsed tenure's Fenced too: the management cluster's says retry
            if cluster_name in ("", request.cluster):
                log.info("%s: could not label its children for this member yet: %s", request, exc,
                         extra={"request": str(request)})
                return None
            log.warning("%s: could not label its children on cluster %r for this member: %s", request, cluster_name,
                        exc, extra={"request": str(request)})
    return taken


def take_one(cluster_name: str, cluster: Cluster, request: Request, child: Obj, owner: Mapping[str, str],
             cluster_label: str, member: str, holds: Callable[[], bool]) -> int:
    """Label one listed object for member ``member`` when it is the order's (it carries the ``owner`` labels, and
    the order's cluster label or none) and not labelled so (a conditional merge patch); 1 when written."""
    if not carries_labels(child, owner):
        return 0
    found = labels_of(child)
    where = found.get(cluster_label)
    if (where is None and cluster_name != request.cluster) or (where is not None and where != request.cluster):
        return 0  # a same-named order's of another cluster
    if found.get(SHARD_LABEL) == member:
        return 0
    if not holds():
        raise Fenced(f"member {member}'s shard tenure has lapsed: no request is sent any more")
    meta = child.get("metadata") or {}
    cluster.patch(str(child.get("apiVersion")), str(child.get("kind")), meta.get("namespace") or None,
                  str(meta.get("name")), {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                                                       "labels": {SHARD_LABEL: member}}},
                  field_manager=FIELD_MANAGER)
    return 1
