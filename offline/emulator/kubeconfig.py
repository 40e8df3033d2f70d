"""Kubeconfig documents pointing clients (kubectl, the kubernetes client) at emulators."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Protocol

import yaml

from engine.cluster.api import Obj

ANY_TOKEN = "emulator"
"""The bearer token written when the emulator checks none (it accepts any)."""


class Served(Protocol):
    """Anything that can describe itself as a kubeconfig (an Emulator)."""

    def kubeconfig(self, name: str = ..., *, namespace: str | None = None) -> Obj: ...


def kubeconfig(name: str, server: str, token: str | None, *, namespace: str | None = None) -> Obj:
    """One cluster, user and context, all called ``name``, and that context current."""
    context: Obj = {"cluster": name, "user": name}
    if namespace:
        context["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": name, "user": {"token": token or ANY_TOKEN}}],
        "contexts": [{"name": name, "context": context}],
        "current-context": name,
    }


def merged(contexts: Mapping[str, Served], current: str, *, namespace: str | None = None) -> Obj:
    """One kubeconfig with a context per emulator, named by its key; ``current`` selected; every
    context defaults to ``namespace`` when given."""
    if current not in contexts:
        raise ValueError(f"the current context {current!r} is none of {sorted(contexts)}")
    doc: Obj = {"apiVersion": "v1", "kind": "Config", "preferences": {}, "clusters": [], "users": [],
                "contexts": [], "current-context": current}
    for name, emulator in contexts.items():
        one = emulator.kubeconfig(name, namespace=namespace)
        for key in ("clusters", "users", "contexts"):
            doc[key].extend(one[key])
    return doc


def write_kubeconfig(path: str | os.PathLike[str], contexts: Mapping[str, Served], current: str, *,
                     namespace: str | None = None) -> None:
    """Write a kubeconfig file (mode 0600: it holds tokens) with one context per emulator.

    kubectl sends no bearer token to an ``http://`` server, so against an emulator that checks a
    token only the kubernetes Python client gets through; leave the token unset for kubectl."""
    text = yaml.safe_dump(merged(contexts, current, namespace=namespace), sort_keys=False)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
