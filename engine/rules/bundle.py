"""Where the rule files, templates and CRDs are when no flag names them: the working directory's, else the install's.

The install carries them in the package ``c5c3_rules`` (package data: ``rules/``, ``templates/``,
``crds/``, and the example ``orders/`` the embedded run's banner names), so an installed `engine`
works from any directory. In a checkout that package's folders are links to the checkout's own, so
both read the same files.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

BUNDLE_PACKAGE = "c5c3_rules"
"""The package holding the installed rule files (found by name, never imported: it holds no code)."""

LOCAL = {"rules": Path("rules"), "crds": Path("deploy/crds"), "orders": Path("examples/orders")}
"""The working directory's folders, used when present (a checkout, or a platform team's own repository)."""


def installed(name: str) -> Path | None:
    """The install's folder ``name`` (``rules``, ``templates``, ``crds`` or ``orders``), or None without one."""
    spec = importlib.util.find_spec(BUNDLE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / name
        if folder.is_dir():
            return folder
    return None


def default_folder(name: str) -> Path:
    """``rules/``, ``deploy/crds/`` or ``examples/orders/`` of the working directory when it has one, else the
    install's.

    Without either, the working directory's path, so the error names what was looked for."""
    local = LOCAL[name]
    if local.is_dir():
        return local
    return installed(name) or local
