"""What a CEL rule can see of ``self`` and ``oldSelf``, so its verdicts can be remembered by that alone.

A rule of ``x-kubernetes-validations`` is a pure function of its variables: Kubernetes' CEL has no clock,
no randomness and no other input (no ``now()``; durations, timestamps, quantities and regular expressions
are computed from their arguments). When a rule reaches its variable only through field selections
(``self.metadata.name``, ``has(self.spec.userName)``), its verdict depends on nothing but the values at
those paths, and their presence. ``reads`` finds those paths in the parsed program; ``project`` cuts a
value down to them. A use of the variable that is anything else (an argument, a comparison, a macro's
target, an index, a parenthesis) reads the subtree at that point whole, so a path is never missed:
what ``project`` keeps is always at least what the rule can see.
"""

from __future__ import annotations

import functools
from typing import Any

from offline.cluster.admission import celnames

Tree = Any
"""A node of celpy's parse tree (lark's ``Tree``: ``data``, the rule's name, and ``children``, trees and tokens;
a token is a ``str``). Typed loosely so the engine does not import lark, celpy's own dependency."""

Trie = dict[str, "Trie | None"]
"""The paths read below a node: each name maps to the paths read below it, or None when read whole."""

VARIABLES = ("self", "oldSelf")


def reads(*programs: Tree) -> dict[str, Trie | None]:
    """For each variable the programs name, the paths they read of it (None: the whole value).

    A variable missing from the answer is not named by any of the programs."""
    paths: dict[str, set[tuple[str, ...]]] = {}
    for program in programs:
        _collect(program, [], paths)
    return {variable: _trie(found) for variable, found in paths.items()}


def project(value: Any, trie: Trie | None) -> Any:
    """``value`` cut to the paths of ``trie``: what is read is kept (the same objects), the rest is dropped.

    A map key is kept when it is the name read or escapes to it (``namespace`` for ``__namespace__``), as
    the CEL value of a schema's property does; a value that is not a map where a path goes on is kept
    whole (the rule meets it as it is, and fails or not on it)."""
    if trie is None or not isinstance(value, dict):
        return value
    kept: dict[Any, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            kept[key] = item
            continue
        found = trie.get(key, _ABSENT)
        escaped = _escaped(key)
        if escaped is not None and escaped != key and escaped in trie:
            found = None if found is not _ABSENT else trie[escaped]
        if found is not _ABSENT:
            kept[key] = project(item, found)
    return kept


_ABSENT: Any = object()


@functools.lru_cache(maxsize=4096)
def _escaped(key: str) -> str | None:
    return celnames.escape(key)


def _collect(node: Tree, ancestors: list[Tree], paths: dict[str, set[tuple[str, ...]]]) -> None:
    """Every use of a variable below ``node``, with its field selections."""
    if node.data in ("ident", "dot_ident"):
        name = _name(node)
        if name in VARIABLES:
            found = paths.setdefault(name, set())
            found.add(_selections(ancestors) if node.data == "ident" else ())
        return
    ancestors.append(node)
    for child in node.children:
        if not isinstance(child, str):
            _collect(child, ancestors, paths)
    ancestors.pop()


def _selections(ancestors: list[Tree]) -> tuple[str, ...]:
    """The field names selected, one after the other, from an identifier whose enclosing trees are ``ancestors``
    (innermost last): ``member(primary(ident))``, then ``member(member_dot(member, NAME))`` for each selection."""
    if len(ancestors) < 2 or ancestors[-1].data != "primary" or ancestors[-2].data != "member":
        return ()
    path: list[str] = []
    index = len(ancestors) - 2  # the member holding the identifier
    while index >= 2:
        selection, outer = ancestors[index - 1], ancestors[index - 2]
        if selection.data != "member_dot" or selection.children[0] is not ancestors[index] or outer.data != "member":
            break
        path.append(_name(selection))
        index -= 2
    return tuple(path)


def _name(node: Tree) -> str:
    """The identifier a node carries (its last token)."""
    tokens = [child for child in node.children if isinstance(child, str)]
    return str(tokens[-1]) if tokens else ""


def _trie(paths: set[tuple[str, ...]]) -> Trie | None:
    if () in paths:
        return None
    trie: Trie = {}
    for path in sorted(paths, key=len):
        node = trie
        for step in path[:-1]:
            below = node.setdefault(step, {})
            if below is None:
                break
            node = below
        else:
            node[path[-1]] = None
    return trie
