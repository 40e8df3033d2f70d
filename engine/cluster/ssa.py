"""Server-Side Apply and managedFields bookkeeping, done the way the API server does it.

The in-memory cluster calls these pure functions on every write (no I/O, no state, no input mutated), so field
ownership, apply conflicts and ``metadata.managedFields`` behave as against a real cluster. A field set holds paths
of fieldsV1 tokens (``f:name``, ``k:{"uid":"u1"}``, ``v:"x"``), so it becomes ``fieldsV1`` with no schema. Lists
are atomic except ``metadata.finalizers`` (a set), ``metadata.ownerReferences`` (keyed by ``uid``) and what
``list_map_keys`` adds; a map is granular unless ``list_map_keys`` names it ``ATOMIC_MAP``. With
``subresource="status"`` only ``status`` is taken from the applied config, with ``None`` the applied ``status`` is
ignored; the caller picks the subresource, and keeps ``status`` out of ``new`` in a main-resource update of a kind
that has one. Simplified: one entry per (manager, operation, subresource), no version conversion; ``null`` values
in an applied config are dropped; maps and lists that pruning leaves empty stay, as the API server leaves them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.cluster.api import Cause, Conflict, Invalid, Obj

Path = tuple[str, ...]
ListKeys = Mapping[tuple[str, ...], tuple[str, ...]]
_Key = tuple[str, str, str | None]

GRANULAR_LISTS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("metadata", "finalizers"): (),  # no key fields: a set, items named by their value
    ("metadata", "ownerReferences"): ("uid",),
}
_TOP_UNOWNED = ("apiVersion", "kind")
_META_UNOWNED = ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                 "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink")
_NEVER_OWNED: frozenset[Path] = frozenset({("f:metadata",)})
_MAP, _LIST = "\0map", "\0list"  # node markers; leaves are canonical JSON, which never starts with \0
ATOMIC_MAP: tuple[str, ...] = ("\0atomic",)


class Keys(tuple[str, ...]):
    """The key fields of a list map, with the defaults its schema gives a key field an item may omit (a container
    port's ``protocol``: ``TCP``), which stand in for the missing value, as structured-merge-diff reads them."""

    defaults: dict[str, Any]

    def __new__(cls, keys: Iterable[str], defaults: Mapping[str, Any] | None = None) -> Keys:
        made = super().__new__(cls, keys)
        made.defaults = dict(defaults or {})
        return made

"""A ``list_map_keys`` value naming a map that is owned and replaced whole (``x-kubernetes-map-type: atomic``)."""
_ABSENT = object()
_NO_KEYS: ListKeys = {}


def apply_patch(live: Obj | None, applied: Obj, manager: str, *, force: bool, now: str,
                subresource: str | None = None, list_map_keys: ListKeys = _NO_KEYS) -> Obj:
    """The object after ``manager`` applies ``applied`` onto ``live`` (None: create it).

    The manager comes to own exactly what it applied. Whatever it applied last time and has
    now dropped leaves the object, unless another manager owns it too. Raises Conflict when
    ``force`` is False and the apply would change a value another manager owns; with force
    those fields move to this manager. When neither the object nor any field set changes,
    the result equals ``live``, managedFields included, so the caller can spot a no-op.
    """
    lists = {**GRANULAR_LISTS, **list_map_keys}
    config = _config(applied, subresource)
    mine: _Key = (manager, "Apply", subresource)
    entries = _read_entries(live)
    entry = entries.setdefault(mine, _Entry(*mine, "", None, frozenset()))
    last, applied_set = entry.fields, _owned_by_apply(_nodes(config, lists, empty_maps=True)) - _NEVER_OWNED

    before = _body(live)
    after = _merge(copy.deepcopy(before), config, (), lists)  # pruned in place below: before stays as it was
    if last:
        after = _pruned(after, last, applied_set.union(*(e.fields for k, e in entries.items() if k != mine)), lists)

    added, modified, removed = _compare(_nodes(before, lists), _nodes(after, lists))
    changed = added | modified
    conflicts = {k: e.fields & changed for k, e in entries.items() if k != mine and e.fields & changed}
    if conflicts and not force:
        raise _conflict_error({entries[k]: paths for k, paths in conflicts.items()})
    _release(entries, mine, changed | removed)
    entry.fields = applied_set
    entry.api_version = str(applied.get("apiVersion") or (live or {}).get("apiVersion", ""))
    # The entry is dated only when the apply changed the object (structured-merge-diff's managedFieldsUpdater):
    # an apply that only takes ownership keeps the entry's time, and a new entry of one has none.
    entry.touched = _canonical(after) != _canonical(before)

    result = _with_identity(after, live if live is not None else applied, create=live is None)
    _store(result, live, entries, now)
    return result


def record_update(old: Obj | None, new: Obj, manager: str, *, now: str | None,
                  subresource: str | None = None, list_map_keys: ListKeys = _NO_KEYS) -> Obj:
    """``new`` with managedFields brought up to date after a write that was not an apply.

    Fields the write added or changed become the manager's (operation "Update") and leave
    every other manager's set; fields it removed leave every set. managedFields written in
    ``new`` are ignored: the bookkeeping continues from ``old``'s.
    """
    lists = {**GRANULAR_LISTS, **list_map_keys}
    mine: _Key = (manager, "Update", subresource)
    entries = _read_entries(old)
    entry = entries.setdefault(mine, _Entry(*mine, "", None, frozenset()))

    before, after = _body(old), _body(new)
    added, modified, removed = _compare(_nodes(before, lists), _nodes(after, lists))
    changed = (added | modified) - _NEVER_OWNED
    _release(entries, mine, changed | removed)
    entry.fields = (entry.fields | changed) - removed
    entry.api_version = str(new.get("apiVersion", ""))
    entry.touched = _canonical(after) != _canonical(before)

    result = copy.deepcopy(new)
    _store(result, old, entries, now)
    return result


def drops_owned(live: Obj, applied: Obj, manager: str, *, subresource: str | None = None) -> bool:
    """Whether applying ``applied`` would drop a field ``manager`` owns from its last apply.

    Such an apply changes the object (SSA removes the dropped field unless another manager owns
    it too) even when the live object already holds every applied field. Paths are compared up
    to the first list item, so a list whose item keys the schema declares counts as the list.
    Runs on every converged apply: it walks the manager's fieldsV1 tree beside the applied object
    (no parsed field sets, no copies), an owned map key the applied object lacks (or holds null)
    answering at once.
    """
    if subresource == "status":
        config, skip = ({"status": applied["status"]} if "status" in applied else {}), frozenset[str]()
    elif subresource is None:
        config, skip = applied, _ROOT_SKIP
    else:
        raise ValueError(f"apply to subresource {subresource!r} is not supported")
    for row in (live.get("metadata") or {}).get("managedFields") or ():
        if (isinstance(row, dict) and row.get("operation") == "Apply" and row.get("manager") == manager
                and (row.get("subresource") or None) == subresource
                and _drops(row.get("fieldsV1") or {}, config, skip, root=True)):
            return True
    return False


_ROOT_SKIP = frozenset({*_TOP_UNOWNED, "status"})
"""Top-level keys a main-resource apply does not own (see the status contract)."""
_META_SKIP = frozenset(_META_UNOWNED)


def _drops(tree: Obj, config: Any, skip: frozenset[str], *, root: bool = False) -> bool:
    """Whether an owned path under this fieldsV1 node, cut before its first list item, is missing from
    ``config`` (the applied value at the node; ``skip``: its keys the apply does not own, or null)."""
    for token, child in tree.items():
        if token == ".":
            if root:  # the object itself owned as a path: no applied field is that path
                return True
            continue
        if not token.startswith("f:"):  # a list item: the path is cut back to the list, which is applied
            continue
        key = token[2:]
        if not isinstance(config, dict) or config.get(key) is None or key in skip:
            return True
        if child and _drops(child, config[key], _META_SKIP if root and key == "metadata" else _NO_SKIP):
            return True
    return False


_NO_SKIP: frozenset[str] = frozenset()


def _up_to_list(path: Path) -> Path:
    """``path`` cut before its first list-item token (``k:``/``v:``/``i:``)."""
    for i, token in enumerate(path):
        if not token.startswith("f:"):
            return path[:i]
    return path


def strip_managed_fields(obj: Obj) -> Obj:
    """A copy of obj without metadata.managedFields, for comparing objects by content."""
    out = copy.deepcopy(obj)
    if isinstance(out.get("metadata"), dict):
        out["metadata"].pop("managedFields", None)
    return out


def fields_of(obj: Obj, manager: str, operation: str = "Apply") -> set[tuple[str, ...]]:
    """The paths ``manager`` owns through ``operation``, over all subresources.

    Map keys appear bare (``("data", "password")``); list items keep their fieldsV1 token
    (``("metadata", "finalizers", 'v:"x"')``). A map an Update created is owned as its own path.
    """
    return {
        tuple(tok[2:] if tok.startswith("f:") else tok for tok in path)
        for entry in _read_entries(obj).values()
        if entry.manager == manager and entry.operation == operation
        for path in entry.fields
    }


# ---------------------------------------------------------------------------
# Objects: the owned body, merging, pruning, comparing.


def _body(obj: Obj | None) -> Obj:
    """A copy of obj without the fields nobody owns (identity, server-set metadata)."""
    if obj is None:
        return {}
    body = copy.deepcopy({k: v for k, v in obj.items() if k not in _TOP_UNOWNED})
    if isinstance(body.get("metadata"), dict):
        for key in _META_UNOWNED:
            body["metadata"].pop(key, None)
    return body


def _config(applied: Obj, subresource: str | None) -> Obj:
    """The part of an applied config that the apply is about (see the status contract)."""
    body: Obj = _drop_nulls(_body(applied))
    if subresource == "status":
        return {"status": body["status"]} if "status" in body else {}
    if subresource is not None:
        raise ValueError(f"apply to subresource {subresource!r} is not supported")
    body.pop("status", None)
    return body


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return {k: _drop_nulls(v) for k, v in value.items() if v is not None} if isinstance(value, dict) else value


def _with_identity(body: Obj, source: Obj, *, create: bool) -> Obj:
    """body plus the unowned fields of source (on create only apiVersion, kind, name, namespace)."""
    meta_keys = ("name", "namespace") if create else _META_UNOWNED
    out: Obj = {k: copy.deepcopy(source[k]) for k in _TOP_UNOWNED if k in source}
    src_meta = source.get("metadata") or {}
    meta: Obj = {k: copy.deepcopy(src_meta[k]) for k in meta_keys if k in src_meta and k != "managedFields"}
    meta.update(body.get("metadata") or {})
    out.update(body)
    out["metadata"] = meta
    return out


def _list_keys(path: Path, lists: ListKeys) -> tuple[str, ...] | None:
    """The key fields of the granular list at path, or None when that list is atomic."""
    return lists.get(tuple(tok[2:] for tok in path if tok.startswith("f:")))


def _item_token(item: Any, keys: tuple[str, ...], where: Path) -> str:
    if not keys:
        if isinstance(item, (dict, list)):
            raise Invalid(f"{_path_text(where)}: items of a set must be scalars")
        return "v:" + _canonical(item)
    defaults: dict[str, Any] = getattr(keys, "defaults", {})
    missing = [k for k in keys if (not isinstance(item, dict) or item.get(k) is None) and k not in defaults]
    if missing:
        raise Invalid(f"{_path_text(where)}: associative list with keys has an element that omits key field "
                      f"{json.dumps(missing[0])}")
    return "k:" + _canonical({k: item[k] if item.get(k) is not None else defaults[k] for k in keys})


def _nodes(value: Obj, lists: ListKeys, *, empty_maps: bool = False) -> dict[Path, str]:
    """Every node under value: a marker for maps and granular lists, canonical JSON for leaves. ``empty_maps``: an
    empty map is a leaf (an applied config owns the empty maps it sets, as structured-merge-diff records them)."""
    out: dict[Path, str] = {}

    def visit(path: Path, node: Any) -> None:
        keys = _list_keys(path, lists) if isinstance(node, list | dict) else None
        if isinstance(node, dict) and keys != ATOMIC_MAP and not (empty_maps and not node):
            out[path] = _MAP
            for key, child in node.items():
                visit((*path, "f:" + key), child)
        elif isinstance(node, list) and keys is not None and keys != ATOMIC_MAP:
            out[path] = _LIST
            for item in node:
                visit((*path, _item_token(item, keys, path)), item)
        else:
            out[path] = _canonical(node)

    for key, child in value.items():
        visit(("f:" + key,), child)
    return out


def _owned_by_apply(nodes: dict[Path, str]) -> frozenset[Path]:
    """What applying a config owns: its leaves, the items of its granular lists, and its empty maps (``spec: {}``
    owns spec, as the API server records it)."""
    parents = {p[:-1] for p in nodes}
    return frozenset(p for p, n in nodes.items() if n not in (_MAP, _LIST) or p[-1][:2] == "k:"
                     or (n == _MAP and p not in parents and p != ("f:metadata",)))  # metadata: its name was taken


def _compare(before: dict[Path, str], after: dict[Path, str]) -> tuple[set[Path], set[Path], set[Path]]:
    """(added, modified, removed) paths between two node maps. A map or list that became null, or null that became
    one, is itself modified only when it is empty (structured-merge-diff compares the items of a non-empty one)."""
    modified = {p for p in before.keys() & after.keys() if before[p] != after[p] and not _items_compared(
        p, before, after)}
    return set(after.keys() - before.keys()), modified, set(before.keys() - after.keys())


def _items_compared(path: Path, before: dict[Path, str], after: dict[Path, str]) -> bool:
    """Whether a node null on one side is a non-empty map or list on the other, whose items are compared instead."""
    pair = {before[path], after[path]}
    if pair not in ({_MAP, "null"}, {_LIST, "null"}):
        return False
    side = before if before[path] != "null" else after
    return any(len(q) == len(path) + 1 and q[:len(path)] == path for q in side)


def _merge(live: Any, config: Any, path: Path, lists: ListKeys) -> Any:
    """config laid over live: maps key by key, granular lists item by item, the rest replaced."""
    if isinstance(live, dict) and isinstance(config, dict) and _list_keys(path, lists) != ATOMIC_MAP:
        out = dict(live)
        for key, value in config.items():
            child = live.get(key, _ABSENT)
            out[key] = copy.deepcopy(value) if child is _ABSENT else _merge(child, value, (*path, "f:" + key), lists)
        return out
    keys = _list_keys(path, lists)
    if isinstance(live, list) and isinstance(config, list) and keys is not None and keys != ATOMIC_MAP:
        wanted = {_item_token(item, keys, path): item for item in config}
        if len(wanted) != len(config):
            raise Invalid(f"{_path_text(path)}: duplicate entries in a list merged by key")
        return _merge_items(live, config, keys, path, lists)
    return copy.deepcopy(config)


def _merge_items(live: list[Any], config: list[Any], keys: tuple[str, ...], path: Path, lists: ListKeys) -> list[Any]:
    """A keyed list's items merged in structured-merge-diff's order (``visitListItems``): the config's items in
    its order, the live items it does not name kept where they stood among them."""
    left = [_item_token(item, keys, path) for item in live]
    right = [_item_token(item, keys, path) for item in config]
    left_items, right_items = dict(zip(left, live, strict=True)), dict(zip(right, config, strict=True))
    shared = [token for token in right if token in left_items]
    next_shared = shared.pop(0) if shared else None
    out: list[Any] = []
    merged: set[str] = set()

    def both(token: str) -> Any:
        if token in left_items:
            return _merge(left_items[token], right_items[token], (*path, token), lists)
        return copy.deepcopy(right_items[token])

    at_left = at_right = 0
    while at_left < len(left) or at_right < len(right):
        if at_left < len(left) and at_right < len(right):
            token = left[at_left]
            if token == right[at_right]:
                merged.add(token)
                out.append(both(token))
                at_left += 1
                at_right += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if token in right_items and next_shared is not None and next_shared != token:
                at_left += 1
                continue
        if at_left < len(left):
            token = left[at_left]
            if token not in right_items:
                out.append(live[at_left])
                at_left += 1
                continue
            if token in merged:
                at_left += 1
        if at_right < len(right):
            token = right[at_right]
            merged.add(token)
            out.append(both(token))
            at_right += 1
            if next_shared is not None and next_shared == token:
                next_shared = shared.pop(0) if shared else None
    return out


def _pruned(merged: Obj, last: frozenset[Path], managed: frozenset[Path], lists: ListKeys) -> Obj:
    """``merged`` without what the applier applied last time and no longer does, as structured-merge-diff's
    Updater.prune has it: remove everything the last set reaches (its named parents too), add back what any
    manager owns, then take away only what the last set held. A map or list whose items it removed and that ends
    empty is left null (``extra: null``, which a schema not allowing null refuses); one no manager holds goes."""
    last_all = _with_parents(last)
    merged_all = _with_parents(_field_set(merged, lists))
    first = _removed(merged, last_all, lists)
    owned = _removed(merged, merged_all - (_with_parents(_field_set(first, lists)) | _with_parents(managed)), lists)
    return _removed(merged, (merged_all - _with_parents(_field_set(owned, lists))) & last_all, lists)


def _field_set(value: Obj, lists: ListKeys) -> frozenset[Path]:
    """structured-merge-diff's ToFieldSet: the leaves (nulls and atomic values among them), the empty maps, the
    items of granular lists."""
    nodes = _nodes(value, lists)
    parents = {path[:-1] for path in nodes}
    return frozenset(path for path, node in nodes.items() if node not in (_MAP, _LIST) or path[-1][:2] == "k:"
                     or (node == _MAP and path not in parents))


def _with_parents(paths: frozenset[Path]) -> frozenset[Path]:
    """EnsureNamedFieldsAreMembers: every field that holds a path of the set joins it (fields only, not list
    items; every field taken as one the schema names)."""
    return paths | {path[:end] for path in paths for end in range(1, len(path)) if path[end - 1].startswith("f:")}


def _removed(value: Obj, paths: frozenset[Path], lists: ListKeys) -> Obj:
    """structured-merge-diff's RemoveItems: ``value`` without ``paths``; a map or list walked into that ends empty
    is null. The metadata stays a map (its identity is not the applier's to remove)."""
    inside = {path[:end] for path in paths for end in range(1, len(path))}

    def walk(node: Any, path: Path) -> Any:
        keys = _list_keys(path, lists) if isinstance(node, list | dict) else None
        if isinstance(node, dict):
            if not node or keys == ATOMIC_MAP:
                return None
            kept: Obj = {}
            for key, child in node.items():
                at = (*path, "f:" + key)
                if at not in paths:
                    kept[key] = walk(child, at) if at in inside else child
            return kept or None
        if isinstance(node, list):
            if not node or keys is None or keys == ATOMIC_MAP:
                return None
            items = []
            for item in node:
                at = (*path, _item_token(item, keys, path))
                if at not in paths:
                    items.append(walk(item, at) if at in inside else item)
            return items or None
        return node

    out: Obj = {}
    for key, child in value.items():
        at = ("f:" + key,)
        if key == "metadata":
            out[key] = (walk(child, at) if at in inside else child) or {}
        elif at not in paths:
            out[key] = walk(child, at) if at in inside else child
    return out


def _locate(obj: Obj, path: Path, lists: ListKeys) -> Any:
    node: Any = obj
    for i, token in enumerate(path):
        if token.startswith("f:"):
            node = node.get(token[2:], _ABSENT) if isinstance(node, dict) else _ABSENT
        else:
            keys = _list_keys(path[:i], lists)
            items = node if isinstance(node, list) and keys is not None else []
            node = next((it for it in items if _item_token(it, keys or (), path[:i]) == token), _ABSENT)
        if node is _ABSENT:
            return _ABSENT
    return node


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# ---------------------------------------------------------------------------
# managedFields entries.


@dataclass(eq=False)
class _Entry:
    """One managedFields entry, as read and as being rewritten."""

    manager: str
    operation: str
    subresource: str | None
    api_version: str
    time: str | None
    fields: frozenset[Path]
    raw: Obj | None = None
    touched: bool = False
    read: frozenset[Path] = field(init=False)

    def __post_init__(self) -> None:
        self.read = self.fields  # as read, to tell whether the entry needs rewriting

    def row(self) -> Obj:
        if self.raw is not None and not self.touched and self.fields == self.read:
            return copy.deepcopy(self.raw)
        out: Obj = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version,
                    "time": self.time, "fieldsType": "FieldsV1", "fieldsV1": _fields_tree(self.fields),
                    "subresource": self.subresource}
        return {k: v for k, v in out.items() if v is not None}


def _read_entries(obj: Obj | None) -> dict[_Key, _Entry]:
    entries: dict[_Key, _Entry] = {}
    for raw in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
        key: _Key = (str(raw.get("manager", "")), str(raw.get("operation", "")), raw.get("subresource") or None)
        fields = frozenset(_parse_fields(raw.get("fieldsV1") or {}, ()))
        if key in entries:  # a duplicate: fold it in and rewrite the entry
            entries[key].fields |= fields
            entries[key].raw = None
        else:
            entries[key] = _Entry(*key, str(raw.get("apiVersion", "")), raw.get("time"), fields, raw)
    return entries


def _release(entries: dict[_Key, _Entry], mine: _Key, paths: set[Path]) -> None:
    """Take paths out of every entry but mine: they were changed or removed by this write."""
    for key, other in entries.items():
        other.fields = other.fields if key == mine else other.fields - paths


def _parse_fields(tree: Obj, path: Path) -> set[Path]:
    out: set[Path] = set()
    for token, child in tree.items():
        if token == ".":
            out.add(path)
        elif child:
            out |= _parse_fields(child, (*path, token))
        else:
            out.add((*path, token))
    return out


def _fields_tree(fields: frozenset[Path]) -> Obj:
    """A field set as fieldsV1: nested tokens, ``"."`` where a member also has members under it."""
    children: dict[Path, set[str]] = {}
    for path in fields:
        for i in range(len(path)):
            children.setdefault(path[:i], set()).add(path[i])

    def build(path: Path) -> Obj:
        kids = sorted(children.get(path, ()))
        node: Obj = {".": {}} if kids and path in fields else {}
        for kid in kids:
            node[kid] = build((*path, kid))
        return node

    return build(())


def _store(result: Obj, before: Obj | None, entries: dict[_Key, _Entry], now: str | None) -> None:
    """Write the entries into result; untouched, they stay exactly as they were in ``before``."""
    rows_before = ((before or {}).get("metadata") or {}).get("managedFields") or []
    kept = [e for e in entries.values() if e.fields]
    unchanged = len(kept) == len(rows_before) and all(
        e.raw is not None and not e.touched and e.fields == e.read for e in kept)
    for e in kept:
        e.time = now if e.touched else e.time
    rows = copy.deepcopy(rows_before) if unchanged else [e.row() for e in sorted(kept, key=_order)]
    meta = result.setdefault("metadata", {})
    if rows:
        meta["managedFields"] = rows
    else:
        meta.pop("managedFields", None)


def _order(e: _Entry) -> tuple[str, str, str, str, str]:
    """The API server's order of entries: Apply first, then by time, manager, version, subresource."""
    return e.operation, e.time or "", e.manager, e.api_version, e.subresource or ""


def _path_text(path: Path) -> str:
    """A path as the API server prints it: ``.metadata.ownerReferences[uid="u1"].name``."""
    parts = []
    for token in path:
        kind, text = token[:2], token[2:]
        if kind == "f:":
            parts.append("." + text)
        elif kind == "k:":
            parts.append("[" + ",".join(f"{k}={_canonical(v)}" for k, v in sorted(json.loads(text).items())) + "]")
        else:
            parts.append(f"[={text}]")
    return "".join(parts)


def _manager_text(entry: _Entry) -> str:
    text = json.dumps(entry.manager)
    if entry.subresource:
        text += f" with subresource {json.dumps(entry.subresource)}"
    return text + (f" using {entry.api_version}" if entry.operation == "Update" else "")


def _set_order(path: Path) -> tuple[tuple[int, str], ...]:
    """The order structured-merge-diff iterates a field set in: at each level the fields that end there (sorted),
    then those that go deeper (sorted)."""
    return tuple((0 if at == len(path) - 1 else 1, token) for at, token in enumerate(path))


def _conflict_error(conflicts: Mapping[_Entry, frozenset[Path]]) -> Conflict:
    """A 409 worded like the API server's: one cause per field, grouped by manager."""
    causes: list[Cause] = []
    lines: list[str] = []
    for entry in sorted(conflicts, key=lambda e: (e.manager, e.operation, e.api_version, e.subresource or "")):
        who = _manager_text(entry)
        paths = [_path_text(p) for p in sorted(conflicts[entry], key=_set_order)]
        causes += [Cause(field=p, message=f"conflict with {who}", reason="FieldManagerConflict") for p in paths]
        lines += [f"conflicts with {who}:", *(f"- {p}" for p in paths)]
    if len(causes) == 1:
        message = f"Apply failed with 1 conflict: {causes[0].message}: {causes[0].field}"
    else:
        message = f"Apply failed with {len(causes)} conflicts: " + "\n".join(lines)
    return Conflict(message, causes=causes)
