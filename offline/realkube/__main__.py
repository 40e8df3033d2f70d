"""``python -m offline.realkube``: real API servers on this machine until Ctrl-C (``scripts/kube-cluster``).

Starts one cluster per ``--cluster`` (default: ``management`` and ``edge-1``, as ``engine run``'s embedded
clusters), writes one kubeconfig with a context per cluster, prints how to use it, and stops everything on
SIGINT or SIGTERM. With ``--world`` the clusters get what ``engine run``'s embedded clusters have (the CRDs, the
world the orders need, the registration of each further cluster, the simulated external controllers: the lab's
entry point ``real-world``, which also says what it made), so ``engine run --kubeconfig`` and the Getting started
walkthrough run against real servers; the kubeconfig is written once the world is ready.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.operator import stop_on_signals
from engine.rules.bundle import default_folder
from offline.emulator import write_kubeconfig
from offline.realkube.binaries import BinariesMissing
from offline.realkube.server import KubeServer, ServerFailed

LAB_ENTRY_POINTS = "c5c3_order_engine.lab"
WORLD_ENTRY_POINT = "real-world"
"""The lab's context manager that installs and runs the world on running servers (``simulators.real_world``)."""


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(
        prog="scripts/kube-cluster",
        description="Real API servers (etcd, kube-apiserver, kube-controller-manager) on 127.0.0.1 until Ctrl-C, "
                    "one kubeconfig context per cluster.")
    parse.add_argument("--cluster", action="append", metavar="NAME",
                       help="a cluster to start, its kubeconfig context's name (repeatable; default: management "
                            "and edge-1)")
    parse.add_argument("--kubeconfig", type=Path, metavar="PATH",
                       help="where to write the kubeconfig (default: a new temporary folder's kubeconfig)")
    parse.add_argument("--no-controllers", action="store_true",
                       help="leave out kube-controller-manager (no garbage collection, namespaces never finish "
                            "terminating), as envtest does")
    parse.add_argument("--world", action="store_true",
                       help="install the CRDs and the embedded world (the first cluster is the management cluster, "
                            "each other one a registered target cluster) and run the simulated external "
                            "controllers, so that `engine run --kubeconfig` serves orders on these servers")
    parse.add_argument("--crds", type=Path, metavar="DIR",
                       help="with --world: the CRDs to install, and DIR/external (default: deploy/crds/, else the "
                            "installed CRDs)")
    return parse


def lab_world() -> Callable[..., Any] | None:
    """The lab's ``real-world`` entry point, or None when this install leaves the lab out."""
    from importlib.metadata import entry_points

    found = entry_points(group=LAB_ENTRY_POINTS, name=WORLD_ENTRY_POINT)
    try:
        loaded: Callable[..., Any] | None = next(iter(found)).load() if found else None
    except ImportError:
        loaded = None
    return loaded


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    names: list[str] = args.cluster or ["management", "edge-1"]
    if len(set(names)) != len(names):
        print("kube-cluster: each --cluster name once", file=sys.stderr)
        return 2
    world_of = lab_world() if args.world else None
    if args.world and world_of is None:
        print(f"kube-cluster: --world needs the lab (package simulators, entry point {WORLD_ENTRY_POINT!r} of group "
              f"{LAB_ENTRY_POINTS}): use a checkout or a full install", file=sys.stderr)
        return 2
    crds: Path = args.crds or default_folder("crds")
    if args.world and not (crds / "external").is_dir():
        print(f"kube-cluster: {crds}: no CRD folder with external/ (set --crds)", file=sys.stderr)
        return 2
    kubeconfig = args.kubeconfig or Path(tempfile.mkdtemp(prefix="kube-cluster-")) / "kubeconfig"
    halt = threading.Event()
    with stop_on_signals(halt):  # whichever thread takes the signal, and wherever the main thread is
        return _serve(args, names, crds, kubeconfig, world_of, halt)


def _serve(args: argparse.Namespace, names: list[str], crds: Path, kubeconfig: Path,
           world_of: Callable[..., Any] | None, halt: threading.Event) -> int:
    """Start the servers (and the world), print the banner, hold until ``halt``; stop them all on the way out."""
    servers: dict[str, KubeServer] = {}
    try:
        for name in names:
            print(f"kube-cluster: starting {name} (etcd, kube-apiserver, kube-controller-manager) ...",
                  file=sys.stderr)
            servers[name] = KubeServer(name, controllers=not args.no_controllers).start()
            if halt.is_set():
                return 130
        with contextlib.ExitStack() as world:
            described: str | None = None
            if world_of is not None:
                print(f"kube-cluster: installing the CRDs of {crds} and the embedded world ...", file=sys.stderr)
                described = str(getattr(world.enter_context(world_of(servers, crds)), "description", ""))
            write_kubeconfig(kubeconfig, servers, names[0])
            print(banner(servers, kubeconfig, world=described), flush=True)
            halt.wait()
        return 0
    except (BinariesMissing, ServerFailed, TimeoutError) as error:
        print(f"kube-cluster: {error}", file=sys.stderr)
        return 1
    finally:
        for server in servers.values():
            server.stop()


def banner(servers: dict[str, KubeServer], kubeconfig: Path, *, world: str | None) -> str:
    """What is running and how to use it; ``world``: what the lab's world says of itself, when there is one."""
    binaries = next(iter(servers.values())).binaries
    lines = [f"\nReal API servers ({', '.join(f'{n} at {s.url}' for n, s in servers.items())}).", "In another shell:",
             "", f"  export KUBECONFIG={kubeconfig}",
             f"  export PATH={binaries.folder}:$PATH      # kubectl {binaries.folder.name.split('_')[0]}"]
    if world is not None:
        lines[1:1] = [world] if world else []
        lines += ["  ./scripts/engine run --kubeconfig $KUBECONFIG    # the operator, on these servers", "",
                  "and in a third, the walkthrough of docs/getting-started.md (its kubectl commands)."]
    else:
        lines += ["  kubectl get namespaces"]
    lines += ["", "Ctrl-C stops them and removes their data."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
