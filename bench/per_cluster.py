"""What one operator process spends per cluster: its open watch streams and its watch threads' CPU.

Used by ``sharding_memory.py --targets K``. The emulated API servers run in the bench's process, so a watch stream
is attributed to a replica and a cluster from both ends of its TCP connection: the emulator notes the client port of
every stream it serves (``track_streams``, a wrapper around its handler), and a replica's own sockets
(``/proc/PID/fd`` and ``/proc/net/tcp``) give, per emulator port, the client ports that are its. A watch thread is
attributed by its name (``informer edge-0 Kind.v1``, ``informer Kind.v1 ... on edge-0``: py-spy's dump maps the
names to thread ids), its CPU from ``/proc/PID/task/TID/stat``. Linux only; the threads' CPU needs py-spy.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from offline.emulator import server as emulator_server

_streams: dict[int, set[int]] = {}
"""Emulator port -> the client ports of the watch streams it serves now."""
_lock = threading.Lock()


def track_streams() -> None:
    """Wrap the emulator's stream handler so that every open watch stream is noted by (server port, client port)."""
    handler = emulator_server._Handler
    if getattr(handler, "_per_cluster_tracked", False):
        return
    stream = handler._stream

    def tracked(self: Any, *args: Any, **kwargs: Any) -> Any:
        key, client = self.server.server_address[1], self.client_address[1]
        with _lock:
            _streams.setdefault(key, set()).add(client)
        try:
            return stream(self, *args, **kwargs)
        finally:
            with _lock:
                _streams[key].discard(client)

    handler._stream = tracked  # type: ignore[method-assign]
    handler._per_cluster_tracked = True  # type: ignore[attr-defined]


def _inodes(pid: int) -> set[str]:
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().as_posix()
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(target[8:-1])
    return found


def client_ports(pid: int) -> dict[int, set[int]]:
    """Server port -> the local ports of this process's established TCP connections to it."""
    mine, found = _inodes(pid), {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if fields[3] != "01" or fields[9] not in mine:  # ESTABLISHED, and this process's
                    continue
                local, remote = int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16)
                found.setdefault(remote, set()).add(local)
    return found


def open_watches(pid: int, ports: dict[str, int]) -> dict[str, int]:
    """Cluster -> the watch streams this process has open on its emulator (``ports``: cluster -> server port)."""
    connected = client_ports(pid)
    with _lock:
        return {cluster: len(connected.get(port, set()) & _streams.get(port, set())) for cluster, port in ports.items()}


def connections(pid: int, ports: dict[str, int]) -> dict[str, int]:
    """Cluster -> this process's established connections to its emulator (watch streams and pooled ones)."""
    connected = client_ports(pid)
    return {cluster: len(connected.get(port, set())) for cluster, port in ports.items()}


def thread_cpu(pid: int, ticks: int) -> dict[int, float]:
    """Thread id -> its user plus system CPU seconds so far."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(task.name)] = (int(fields[11]) + int(fields[12])) / ticks
    return found


def thread_names(pid: int, py_spy: str | None) -> dict[int, str]:
    """Thread id -> its Python name, from py-spy's dump (empty without py-spy)."""
    if py_spy is None:
        return {}
    dump = subprocess.run([py_spy, "dump", "--nonblocking", "--pid", str(pid)], capture_output=True, text=True,
                          timeout=60, check=False).stdout
    return {int(tid): name for tid, name in re.findall(r'^Thread (\d+) \([^)]*\): "([^"]*)"', dump, re.M)}


def py_spy_path(root: Path) -> str | None:
    local = root / ".venv" / "bin" / "py-spy"
    return str(local) if local.exists() else shutil.which("py-spy")


def cluster_of(thread: str, clusters: Iterable[str]) -> str | None:
    """The cluster a watch thread serves, from its name; None for any other thread."""
    if not thread.startswith("informer "):
        return None
    if thread.startswith("informer (management) ") or thread.endswith(" on the management cluster"):
        return ""
    for cluster in clusters:
        if cluster and (thread.startswith(f"informer {cluster} ") or thread.endswith(f" on {cluster}")):
            return cluster
    return None


def cpu_by_cluster(before: dict[int, float], after: dict[int, float], names: dict[int, str],
                   clusters: Iterable[str]) -> dict[str, float]:
    """Cluster -> CPU seconds its watch threads used between two readings ("other": every other thread)."""
    clusters = list(clusters)
    spent: dict[str, float] = {cluster: 0.0 for cluster in clusters}
    spent["other"] = 0.0
    for tid, cpu in after.items():
        cluster = cluster_of(names.get(tid, ""), clusters)
        key = cluster if cluster is not None else "other"
        spent[key] = spent.get(key, 0.0) + cpu - before.get(tid, 0.0)
    return {cluster: round(seconds, 2) for cluster, seconds in spent.items()}
