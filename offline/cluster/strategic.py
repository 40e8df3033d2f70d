"""Strategic merge patch (``application/strategic-merge-patch+json``), as the API server applies it to built-in
kinds: apimachinery's ``strategicpatch.StrategicMergeMapPatch`` ported step for step.

Maps merge key by key and ``null`` removes a key. A list merges only where the schema says
``x-kubernetes-patch-strategy: merge``: items of maps by their ``x-kubernetes-patch-merge-key`` (``name`` for
containers and volumes), scalars as a union; any other list is replaced. Directives: ``$patch: replace`` and
``$patch: delete`` in a map or as a list item, ``$setElementOrder/<list>`` (the order kubectl wants),
``$deleteFromPrimitiveList/<list>``, ``$retainKeys``. List order follows the server's rules (the patch's order
first, items only the server has placed by their old neighbours), down to Go's stable sort.

Custom resources have no patch metadata: the API server refuses this patch type for them (415), so callers only
use it for kinds with a schema from ``offline.cluster.builtin``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.cluster.api import ApiError, BadRequest
from engine.cluster.patches import Unexplained, Unprocessable, go_json_type, json_copy
from offline.cluster.builtin.schema import Schema

DIRECTIVE = "$patch"
REPLACE = "replace"
DELETE = "delete"
MERGE = "merge"
RETAIN_KEYS = "$retainKeys"
SET_ELEMENT_ORDER = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"

BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"


class PatchFailed(Exception):
    """A patch the merge cannot apply, worded as apimachinery words it; ``error`` is the API answer."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


def strategic_merge(original: dict[str, Any], patch: Any, schema: Schema | None) -> dict[str, Any]:
    """The object after the patch; raises an ApiError as the API server answers a patch it cannot apply."""
    if patch is None:
        return json_copy(original)
    if not isinstance(patch, dict):
        raise BadRequest(f"json: cannot unmarshal {go_json_type(patch)} into Go value of type "
                         "map[string]interface {}")
    try:
        return _merge_map(json_copy(original), json_copy(patch), schema)
    except _Failure as failure:
        raise _answer(str(failure)) from None


class _Failure(Exception):
    """An error of the merge, by its apimachinery message."""


def _answer(message: str) -> ApiError:
    """The API server's answer to a failed merge (``interpretStrategicMergePatchError``): a few known errors are
    400 or 422, the rest 500 with the message and no reason."""
    if message in (BAD_SET_ELEMENT_ORDER, BAD_RETAIN_KEYS, BAD_PRIMITIVE_LIST, "invalid JSON document"):
        return BadRequest(message)
    if message in ("lists of lists are not supported", "patch content doesn't match retainKeys list"):
        return Unprocessable()
    return Unexplained(message)


# ---------------------------------------------------------------------------------------------------------------
# Maps.


def _merge_map(original: dict[str, Any] | None, patch: dict[str, Any], schema: Schema | None) -> dict[str, Any]:
    if DIRECTIVE in patch:
        return _map_directive(patch[DIRECTIVE], patch)
    if original is None:
        original = {}
    _apply_retain_keys(original, patch)
    _merge_ordered_lists(original, patch, schema)
    for key, value in list(patch.items()):
        is_delete_list = False
        if key.startswith(DELETE_FROM_PRIMITIVE_LIST):
            key = _extract_key(key, DELETE_FROM_PRIMITIVE_LIST)
            is_delete_list = True
        if value is None:
            original.pop(key, None)
            continue
        if key not in original:
            if not is_delete_list:
                _discard_nulls(value)
                kept, keep = _remove_directives(value)
                if keep:
                    original[key] = kept
                else:
                    original.pop(key, None)
            continue
        if _kind(original[key]) != _kind(value) or _type_name(original[key]) != _type_name(value):
            if not is_delete_list:
                _discard_nulls(value)
                kept, keep = _remove_directives(value)
                if keep:
                    original[key] = kept
                else:
                    original.pop(key, None)
            continue
        if isinstance(value, dict):
            sub, strategy = _lookup(schema, key)
            if strategy == REPLACE:
                original[key] = value
            else:
                original[key] = _merge_map(original[key], value, sub)
        elif isinstance(value, list):
            sub, strategy = _lookup(schema, key)
            items = sub.items if sub is not None else None
            merge_key = sub.merge_key if sub is not None else ""
            if strategy == MERGE or is_delete_list:
                original[key] = _merge_list(original[key], value, items, merge_key, is_delete_list)
            else:
                original[key] = value
        else:
            kept, keep = _remove_directives(value)
            if keep:
                original[key] = kept
            else:
                original.pop(key, None)
    return original


def _map_directive(directive: Any, patch: dict[str, Any]) -> dict[str, Any]:
    if directive == REPLACE:
        del patch[DIRECTIVE]
        return patch
    if directive == DELETE:
        return {}
    raise _Failure(f"unknown patch type: {_go(directive)} in map: {_go(patch)}")


def _lookup(schema: Schema | None, key: str) -> tuple[Schema | None, str]:
    """The field's schema and its patch strategy other than retainKeys ('' when none)."""
    sub = schema.field(key) if schema is not None else None
    if sub is None and schema is not None:
        sub = schema.values
    if sub is None:
        return None, ""
    strategies = [s for s in sub.patch_strategies if s != "retainKeys"]
    if len(strategies) > 1:
        raise _Failure(f"unexpected patch strategy: {_go(list(sub.patch_strategies))}")
    return sub, strategies[0] if strategies else ""


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if RETAIN_KEYS not in patch:
        return
    retained = patch.pop(RETAIN_KEYS)
    if not isinstance(retained, list):
        raise _Failure(BAD_RETAIN_KEYS)
    for key, value in patch.items():
        if value is None or key.startswith(DELETE_FROM_PRIMITIVE_LIST) or key.startswith(SET_ELEMENT_ORDER):
            continue
        if not any(_same(key, kept) for kept in retained):
            raise _Failure(BAD_RETAIN_KEYS)
    for key in list(original):
        if not any(_same(key, kept) for kept in retained):
            del original[key]


def _merge_ordered_lists(original: dict[str, Any], patch: dict[str, Any], schema: Schema | None) -> None:
    """``$setElementOrder/<list>`` directives: merge each list with its patch and put it in the wanted order."""
    for key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(key)
        if not isinstance(order, list):
            raise _Failure(f"expected a []interface {{}}, but received a {_go_type(order)}")
        field = _extract_key(key, SET_ELEMENT_ORDER)
        found_original, found_patch = field in original, field in patch
        original_list: list[Any] = original.get(field) or []
        patch_list: list[Any] = patch.get(field) or []
        for found, listed in ((found_original, original.get(field)), (found_patch, patch.get(field))):
            if found and listed is not None and not isinstance(listed, list):
                raise _Failure(f"expected a []interface {{}}, but received a {_go_type(listed)}")
        sub, strategy = _lookup(schema, field)
        merge_key = sub.merge_key if sub is not None else ""
        _check_order(patch_list, order, merge_key)
        if found_original and not found_patch:
            merged = original_list
        elif not found_original and found_patch:
            merged, _ = _remove_directives(patch_list)
        elif found_original and found_patch:
            if strategy == MERGE:
                merged = _merge_list(original_list, patch_list, sub.items if sub is not None else None, merge_key,
                                     False)
            else:
                merged = patch_list
        else:
            continue
        assert isinstance(merged, list)
        if merge_key:
            in_patch, server_only = _partition_maps(merged, order, merge_key)
        else:
            in_patch, server_only = _partition_scalars(merged, order)
        kind = _element_kind([original_list, patch_list])
        original[field] = _normalize_order(in_patch, server_only, order, original_list, merge_key, kind)
        patch.pop(field, None)


def _check_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch's items must come in the order of the ``$setElementOrder`` list."""
    if not order or not patch_list:
        return
    items = _split_deletions(patch_list)[0] if merge_key else patch_list
    at_patch = at_order = 0
    while at_patch < len(items) and at_order < len(order):
        if isinstance(items[at_patch], dict) and DIRECTIVE in items[at_patch]:
            at_patch += 1
            continue
        if _merge_key_equal(items[at_patch], order[at_order], merge_key):
            at_patch += 1
        at_order += 1
    if at_patch < len(items) and at_order >= len(order):
        raise _Failure(f"The order in patch list:\n{_go(patch_list)}\n doesn't match $setElementOrder list:\n"
                       f"{_go(order)}\n")


def _extract_key(key: str, prefix: str) -> str:
    head, slash, rest = key.partition("/")
    if not slash or head != prefix:
        raise _Failure(BAD_PRIMITIVE_LIST if prefix == DELETE_FROM_PRIMITIVE_LIST else BAD_SET_ELEMENT_ORDER)
    return rest


# ---------------------------------------------------------------------------------------------------------------
# Lists.


def _merge_list(original: list[Any], patch: list[Any], items: Schema | None, merge_key: str,
                is_delete_list: bool) -> list[Any]:
    if not original and not patch:
        return original
    kind = _element_kind([original, patch])
    if kind != "map":
        if is_delete_list:
            return [v for v in original if not any(_same(v, d) for d in patch)]
        merged = _deduplicate([*original, *patch])
    else:
        if not merge_key:
            raise _Failure(f"cannot merge lists without merge key for {'struct' if items is not None else 'map'}")
        original, patch = _special_items(original, patch, merge_key)
        merged = _merge_items(original, patch, merge_key, items)
    if merge_key:
        in_patch, server_only = _partition_maps(merged, patch, merge_key)
    else:
        in_patch, server_only = _partition_scalars(merged, patch)
    return _normalize_order(in_patch, server_only, patch, original, merge_key, kind)


def _special_items(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """Items carrying ``$patch``: delete removes the matching items, replace makes the rest of the patch the list."""
    plain = []
    replace = False
    for item in patch:
        directive = item.get(DIRECTIVE, _NONE) if isinstance(item, dict) else _NONE
        if directive is _NONE:
            plain.append(item)
        elif directive == DELETE:
            if merge_key not in item:
                raise _Failure(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
            original = [o for o in original if not (isinstance(o, dict) and merge_key in o
                                                     and _same(o[merge_key], item[merge_key]))]
        elif directive == REPLACE:
            replace = True
        elif directive == MERGE:
            raise _Failure("merging lists cannot yet be specified in the patch")
        else:
            raise _Failure(f"unknown patch type: {_go(directive)} in map: {_go(item)}")
    if replace:
        return plain, []
    return original, plain


def _merge_items(original: list[Any], patch: list[Any], merge_key: str, items: Schema | None) -> list[Any]:
    original = list(original)
    for item in patch:
        if merge_key not in item:
            raise _Failure(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
        at = _find(original, merge_key, item[merge_key])
        if at is None:
            original.append(item)
        else:
            original[at] = _merge_map(original[at], item, items)
    return original


def _find(items: list[Any], merge_key: str, value: Any) -> int | None:
    for at, item in enumerate(items):
        if not isinstance(item, dict):
            raise _Failure(f"value for key {at} is not a map")
        if merge_key in item and _same(item[merge_key], value):
            return at
    return None


def _partition_maps(merged: list[Any], wanted: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    in_patch, server_only = [], []
    for item in merged:
        if not isinstance(item, dict):
            raise _Failure(f"expected a map[string]interface {{}}, but received a {_go_type(item)}")
        if merge_key not in item:
            raise _Failure(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
        if _find(wanted, merge_key, item[merge_key]) is None:
            server_only.append(item)
        else:
            in_patch.append(item)
    return in_patch, server_only


def _partition_scalars(merged: list[Any], wanted: list[Any]) -> tuple[list[Any], list[Any]]:
    in_patch = [v for v in merged if any(_same(v, w) for w in wanted)]
    return in_patch, [v for v in merged if not any(_same(v, w) for w in wanted)]


def _normalize_order(patch: list[Any], server_only: list[Any], patch_order: list[Any], server_order: list[Any],
                     merge_key: str, kind: str) -> list[Any]:
    patch = _sort_by(patch, patch_order, merge_key, kind)
    server_only = _sort_by(server_only, server_order, merge_key, kind)
    return _merge_sorted(server_only, patch, server_order, merge_key, kind)


def _sort_by(items: list[Any], order: list[Any], merge_key: str, kind: str) -> list[Any]:
    """``normalizeSliceOrder``: deletions last, the rest stably sorted by their place in order (Go's stable sort
    with apimachinery's comparison, which calls an item missing from order smaller than anything)."""
    deletions: list[Any] = []
    if kind == "map":
        for listed in (items, order):
            for item in listed:
                if not isinstance(item, dict) or merge_key not in item:
                    raise _Failure(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
        items, deletions = _split_deletions(items)
    items = list(items)

    def less(i: int, j: int) -> bool:
        at_i = _index(order, items[i], merge_key, kind)
        if at_i >= 0:
            at_j = _index(order, items[j], merge_key, kind)
            if at_j >= 0:
                return at_i < at_j
        return True

    _stable_sort(items, less)
    return items + deletions


def _merge_sorted(left: list[Any], right: list[Any], server_order: list[Any], merge_key: str,
                  kind: str) -> list[Any]:
    """Server-only items (left) placed among the patch's (right) by their order on the server."""
    out = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            at_left = _index(server_order, left[i], merge_key, kind)
            at_right = _index(server_order, right[j], merge_key, kind)
            if at_left >= 0 and at_right >= 0 and at_left < at_right:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _index(items: list[Any], wanted: Any, merge_key: str, kind: str) -> int:
    def value(item: Any) -> Any:
        if kind == "map":
            return item.get(merge_key) if isinstance(item, dict) else None
        return item

    target = value(wanted)
    for at, item in enumerate(items):
        if _same(value(item), target):
            return at
    return -1


def _split_deletions(items: list[Any]) -> tuple[list[Any], list[Any]]:
    kept: list[Any] = []
    deleted: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise _Failure(f"expected a map[string]interface {{}}, but received a {_go_type(item)}")
        (deleted if item.get(DIRECTIVE) == DELETE else kept).append(item)
    return kept, deleted


def _deduplicate(values: list[Any]) -> list[Any]:
    """apimachinery's in-place deduplication (a duplicate is overwritten by the last item), order and all."""
    values = list(values)
    length = len(values) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if _same(values[i], values[j]):
                values[j] = values[length]
                values = values[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return values


def _element_kind(lists: list[list[Any]]) -> str:
    """The one kind of every item ("map", "string", "number", "bool"); mixed kinds and lists of lists fail."""
    found = None
    for listed in lists:
        for item in listed:
            kind = _type_name(item)
            if found is None:
                if kind == "list":
                    raise _Failure("lists of lists are not supported")
                found = kind
            elif kind != found:
                raise _Failure(f"list element types are not identical: {_go(lists)}")
    if found is None:
        raise _Failure("no elements in any of the given slices")
    return found


# ---------------------------------------------------------------------------------------------------------------
# Directives and values.


_NONE = object()


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """The value without directive maps (a map holding ``$patch`` is dropped whole); False: drop the value."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        out = {}
        for key, item in value.items():
            kept, keep = _remove_directives(item)
            if keep:
                out[key] = kept
        return out, True
    if isinstance(value, list):
        return [kept for kept, keep in (_remove_directives(v) for v in value) if keep], True
    return value, True


def _discard_nulls(value: Any) -> None:
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for item in value.values():
            _discard_nulls(item)
    elif isinstance(value, list):
        for item in value:
            _discard_nulls(item)


def _merge_key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _same(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise _Failure(f"expected a map[string]interface {{}}, but received a {_go_type(item)}")
        if merge_key not in item:
            raise _Failure(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
    return _same(left[merge_key], right[merge_key])


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    return "string"


def _kind(value: Any) -> str:
    return _type_name(value)


def _same(left: Any, right: Any) -> bool:
    """Go's ``==`` on decoded JSON scalars: equal values of the same JSON type."""
    return _type_name(left) == _type_name(right) and left == right


def _go_type(value: Any) -> str:
    return {"map": "map[string]interface {}", "list": "[]interface {}", "bool": "bool", "number": "float64",
            "string": "string", "null": "<nil>"}[_type_name(value)]


def _go(value: Any) -> str:
    """A value as Go's ``%v`` prints decoded JSON."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# ---------------------------------------------------------------------------------------------------------------
# Go's sort.SliceStable, for lists ordered by a comparison that is not a strict order.


def _stable_sort(items: list[Any], less: Callable[[int, int], bool]) -> None:
    n = len(items)

    def swap(i: int, j: int) -> None:
        items[i], items[j] = items[j], items[i]

    def insertion(a: int, b: int) -> None:
        for i in range(a + 1, b):
            j = i
            while j > a and less(j, j - 1):
                swap(j, j - 1)
                j -= 1

    def rotate(a: int, m: int, b: int) -> None:
        i, j = m - a, b - m
        while i != j:
            if i > j:
                for k in range(j):
                    swap(m - i + k, m + k)
                i -= j
            else:
                for k in range(i):
                    swap(m - i + k, m + j - i + k)
                j -= i
        for k in range(i):
            swap(m - i + k, m + k)

    def sym_merge(a: int, m: int, b: int) -> None:
        if m - a == 1:
            i, j = m, b
            while i < j:
                h = (i + j) >> 1
                if less(h, a):
                    i = h + 1
                else:
                    j = h
            for k in range(a, i - 1):
                swap(k, k + 1)
            return
        if b - m == 1:
            i, j = a, m
            while i < j:
                h = (i + j) >> 1
                if not less(m, h):
                    i = h + 1
                else:
                    j = h
            for k in range(m, i, -1):
                swap(k, k - 1)
            return
        mid = (a + b) >> 1
        n_ = mid + m
        if m > mid:
            start, r = n_ - b, mid
        else:
            start, r = a, m
        p = n_ - 1
        while start < r:
            c = (start + r) >> 1
            if not less(p - c, c):
                start = c + 1
            else:
                r = c
        end = n_ - start
        if start < m < end:
            rotate(start, m, end)
        if a < start < mid:
            sym_merge(a, start, mid)
        if mid < end < b:
            sym_merge(mid, end, b)

    block = 20
    a, b = 0, block
    while b <= n:
        insertion(a, b)
        a, b = b, b + block
    insertion(a, n)
    while block < n:
        a, b = 0, 2 * block
        while b <= n:
            sym_merge(a, a + block, b)
            a, b = b, b + 2 * block
        if a + block < n:
            sym_merge(a, a + block, n)
        block *= 2
