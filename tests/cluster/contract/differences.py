"""Why the emulators (the memory cluster and the HTTP emulator over it) keep the differences from a real API server
that the conftest's docstring lists. Each is asserted by the contract tests that name it, through the conftest's
``differs`` and ``settled`` fixtures, so the list stays true (test_differences.py checks every entry is named by a
test).
"""
from __future__ import annotations

from dataclasses import dataclass

EMULATORS = frozenset({"memory", "kube", "kube-cached"})
IN_THE_WRITE = frozenset({"memory", "kube"})
"""Where the server's own follow-up work (garbage collection) is visible as soon as the write returns."""


@dataclass(frozen=True)
class Difference:
    """Where implementations differ from the real server on purpose: which ones, and why."""

    kept_by: frozenset[str]
    reason: str


KEPT_DIFFERENCES: dict[str, Difference] = {
    "namespace-lifecycle": Difference(EMULATORS, (
        "The emulators keep no namespace lifecycle: an object may be written into a namespace no Namespace"
        " stands for, and deleting a Namespace removes it at once without emptying it. A real server refuses the"
        " write (NamespaceLifecycle: 404 namespaces \"x\" not found) and its namespace controller empties a deleted"
        " namespace before removing it (seconds). Scenarios, `engine test` and `engine run`'s embedded clusters"
        " write into namespaces nobody created; the engine itself creates none.")),
    "asynchronous-garbage-collection": Difference(IN_THE_WRITE, (
        "The memory cluster collects the dependents of a removed owner in the write that removes it, so they are"
        " gone (or marked, or unlinked) when the delete returns. On a real server kube-controller-manager's"
        " garbage collector does it moments later; a cache sees it when the watch delivers it. Collecting at once"
        " keeps scenarios deterministic, and code that copes with later collection copes with immediate.")),
    "asynchronous-crd": Difference(EMULATORS, (
        "The emulators serve a CRD's kind, its changes and its removal in the write itself. A real server"
        " establishes names and updates discovery moments later. Code that waits for a CRD to be served works"
        " with both.")),
}
"""The differences from the real server the emulators keep on purpose; each is asserted by the tests that name it
(``differs``, ``settled``), so the list stays true (test_differences.py)."""
