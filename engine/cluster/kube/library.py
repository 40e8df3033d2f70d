"""The parts of the ``kubernetes`` package the engine uses, imported without the rest (decision 0036).

``import kubernetes.client`` first runs the package's ``__init__``, which imports every part of the library (the
websocket streams, the leader election, the informers, ``kubernetes.utils``, the kubeconfig loader with its OIDC
refresh): about 8 MiB of modules in every replica that an operator's request path never uses.

``install`` puts in ``sys.modules`` the package objects of ``kubernetes``, ``kubernetes.config`` and
``kubernetes.utils`` without running their ``__init__``; importing a submodule works as always. A name only an
``__init__`` defines runs that ``__init__`` when first asked for, so any other user of the library in the process
sees the whole package. ``kube_config`` defers the kubeconfig loader's OIDC refresh client until a refresh needs
it. When the package was imported before, nothing changes.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

LEAN_PACKAGES = ("kubernetes", "kubernetes.config", "kubernetes.utils")
"""Packages whose ``__init__`` is run only when a name it defines is asked for."""

DEFERRED_BY_KUBE_CONFIG = ("requests_oauthlib", "oauthlib", "oauthlib.oauth2")
"""What the kubeconfig loader imports for OIDC token refresh only (``requests`` comes with them)."""

_lock = threading.RLock()


class LeanPackage(ModuleType):
    """A package whose ``__init__`` runs at the first name it alone defines; submodules import as usual."""

    _lean_initialised = False

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("__"):
            full = f"{self.__name__}.{name}"
            if full in sys.modules or importlib.util.find_spec(full) is not None:
                return importlib.import_module(full)
        with _lock:
            if not self._lean_initialised:
                self._lean_initialised = True
                spec = self.__spec__
                assert spec is not None and spec.loader is not None
                spec.loader.exec_module(self)
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


def install() -> None:
    """Register the lean package objects, unless the library is imported already."""
    with _lock:
        for name in LEAN_PACKAGES:
            if name in sys.modules:
                continue
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None:
                return  # not installed: the imports that need it will say so
            module: Any = importlib.util.module_from_spec(spec)
            module.__class__ = LeanPackage
            if name == "kubernetes":
                module.__version__ = _version()  # what discovery sends as its user agent
            sys.modules[name] = module
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, module)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kubernetes")
    except PackageNotFoundError:
        return "unknown"


def kube_config() -> Any:
    """The library's kubeconfig loader (``kubernetes.config.kube_config``), its OIDC refresh client imported
    only when a token is refreshed."""
    with _lock:
        loaded = sys.modules.get("kubernetes.config.kube_config")
        if loaded is not None:
            return loaded
        placeholders: dict[str, Any] = {
            name: ModuleType(name) for name in DEFERRED_BY_KUBE_CONFIG if name not in sys.modules}
        if "requests_oauthlib" in placeholders:
            placeholders["requests_oauthlib"].OAuth2Session = _oauth2_session
        sys.modules.update(placeholders)
        try:
            module: Any = importlib.import_module("kubernetes.config.kube_config")
        finally:
            for name, placeholder in placeholders.items():
                if sys.modules.get(name) is placeholder:
                    del sys.modules[name]
        if "oauthlib" in placeholders:
            module.oauthlib = _DeferredModule("oauthlib", "oauthlib.oauth2")
        if "requests_oauthlib" in placeholders:
            module.OAuth2Session = _oauth2_session
        return module


def _oauth2_session(*args: Any, **kwargs: Any) -> Any:
    """``requests_oauthlib.OAuth2Session(...)``, imported at the first OIDC refresh."""
    return importlib.import_module("requests_oauthlib").OAuth2Session(*args, **kwargs)


class _DeferredModule:
    """Stands for a module; imports it (and ``also``) at the first attribute read."""

    def __init__(self, name: str, *also: str) -> None:
        self._name, self._also = name, also

    def __getattr__(self, attribute: str) -> Any:
        for name in self._also:
            importlib.import_module(name)
        return getattr(importlib.import_module(self._name), attribute)
