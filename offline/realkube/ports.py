"""Free ports on 127.0.0.1 for processes that bind them later.

A port the kernel hands out for a bind to port 0 is from its ephemeral range, which it also uses for the source
ports of new connections: between our check and the server's bind it may be taken. Ports below that range,
picked at random and never twice in this process, are not handed out by the kernel at all. Every part of a
process that starts servers (the launcher, the tests' operators) takes its ports here, from any thread.
"""

from __future__ import annotations

import random
import socket
import threading
from pathlib import Path

LOWEST = 20000
"""The lowest port handed out (below it, well-known services' ports)."""

_handed_out: set[int] = set()
_lock = threading.Lock()


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now, below the kernel's ephemeral range."""
    highest = _first_ephemeral_port()
    for _ in range(1000):
        port = random.randrange(LOWEST, highest)
        with _lock:
            if port in _handed_out:
                continue
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free port on 127.0.0.1 between {LOWEST} and {highest}")


def _first_ephemeral_port() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768
