"""The kinds one memory cluster serves: the built-in kinds, the served versions of installed CRDs, and, in a
permissive cluster, a custom resource guessed for any other kind.

Kept apart from the store because the API server keeps it apart too: discovery and every request first find
the kind (NotFound for one it does not serve), and a CRD's install or delete changes only this table (the
store drops the objects of a deleted CRD's kinds).
"""

from __future__ import annotations

from collections.abc import Iterator

from engine.cluster.api import NoSuchResource, Obj, ResourceInfo
from offline.cluster import builtin
from offline.cluster.crd_check import compile_crd
from offline.cluster.served_kinds import BUILTIN_KINDS, ServedKind

Key = tuple[str, str]
"""(apiVersion, kind)."""


class KindTable:
    """Served kinds by (apiVersion, kind); not thread-safe on its own (the cluster's lock guards it)."""

    def __init__(self, *, permissive: bool) -> None:
        self.permissive = permissive
        self._kinds: dict[Key, ServedKind] = {
            (i.api_version, i.kind): ServedKind(i, None, builtin.list_keys(i.api_version, i.kind))
            for i in BUILTIN_KINDS}
        self._crds: dict[str, list[Key]] = {}
        self.unserved: set[Key] = set()
        """Kinds that answer NotFound for now (their objects stay stored)."""

    def copy(self) -> KindTable:
        """An independent table with the same kinds (the served kinds themselves are immutable and shared)."""
        other = KindTable(permissive=self.permissive)
        other._kinds = dict(self._kinds)
        other._crds = {name: list(keys) for name, keys in self._crds.items()}
        other.unserved = set(self.unserved)
        return other

    def served(self) -> Iterator[tuple[Key, ServedKind]]:
        """Every built-in kind and installed CRD version, unserved ones included."""
        return iter(list(self._kinds.items()))

    def lookup(self, api_version: str, kind: str, *, namespaced: bool) -> ServedKind:
        """The served kind, or NotFound as the API server answers for an unknown resource."""
        if (api_version, kind) in self.unserved:
            raise NoSuchResource()
        found = self._kinds.get((api_version, kind))
        if found is not None:
            return found
        group = api_version.rpartition("/")[0]
        if not self.permissive or any(k.store == (group, kind) for k in self._kinds.values()):
            raise NoSuchResource()
        lower = kind.lower()
        return ServedKind(ResourceInfo(api_version, kind, lower + "s", namespaced, True, lower), custom=True)

    def of_stored(self, store: tuple[str, str], obj: Obj) -> ServedKind:
        """The kind entry for a stored object, for writes the server makes on its own (GC)."""
        found = self._kinds.get((obj["apiVersion"], obj["kind"]))
        if found is not None:
            return found
        lower = store[1].lower()
        return ServedKind(ResourceInfo(obj["apiVersion"], obj["kind"], lower + "s",
                                       bool(obj["metadata"].get("namespace")), True, lower), custom=True)

    def install(self, crd: Obj) -> None:
        """Serve the versions of an admitted CRD (in place of what a CRD of its name served)."""
        name = crd["metadata"]["name"]
        self.uninstall(name)
        kinds = compile_crd(crd)
        for k in kinds:
            self._kinds[(k.info.api_version, k.info.kind)] = k
        self._crds[name] = [(k.info.api_version, k.info.kind) for k in kinds]

    def uninstall(self, name: str) -> set[tuple[str, str]]:
        """Stop serving a CRD's kinds; returns their stores."""
        stores = set()
        for key in self._crds.pop(name, []):
            k = self._kinds.pop(key, None)
            if k is not None:
                stores.add(k.store)
        return stores
