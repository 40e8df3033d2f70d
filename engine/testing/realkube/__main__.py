"""``python -m engine.testing.realkube``: real API servers on this machine until Ctrl-C (``scripts/kube-cluster``).

Starts one cluster per ``--cluster`` (default: ``management`` and ``edge-1``, as ``engine run``'s embedded
clusters), writes one kubeconfig with a context per cluster, prints how to use it, and stops everything on
SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType

from engine.testing.emulator import write_kubeconfig
from engine.testing.realkube.binaries import BinariesMissing
from engine.testing.realkube.server import KubeServer, ServerFailed


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
    return parse


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    names: list[str] = args.cluster or ["management", "edge-1"]
    if len(set(names)) != len(names):
        print("kube-cluster: each --cluster name once", file=sys.stderr)
        return 2
    kubeconfig = args.kubeconfig or Path(tempfile.mkdtemp(prefix="kube-cluster-")) / "kubeconfig"
    halt = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        halt.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    servers: dict[str, KubeServer] = {}
    try:
        for name in names:
            print(f"kube-cluster: starting {name} (etcd, kube-apiserver, kube-controller-manager) ...",
                  file=sys.stderr)
            servers[name] = KubeServer(name, controllers=not args.no_controllers).start()
            if halt.is_set():
                return 130
        write_kubeconfig(kubeconfig, servers, names[0])
        binaries = next(iter(servers.values())).binaries
        print(f"\nReal API servers ({', '.join(f'{n} at {s.url}' for n, s in servers.items())}).\n"
              f"In another shell:\n\n"
              f"  export KUBECONFIG={kubeconfig}\n"
              f"  export PATH={binaries.folder}:$PATH      # kubectl {binaries.folder.name.split('_')[0]}\n"
              f"  kubectl get namespaces\n\n"
              f"Ctrl-C stops them and removes their data.", flush=True)
        halt.wait()
        return 0
    except (BinariesMissing, ServerFailed) as error:
        print(f"kube-cluster: {error}", file=sys.stderr)
        return 1
    finally:
        for server in servers.values():
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
