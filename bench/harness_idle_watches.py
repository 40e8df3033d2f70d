"""Benchmark: what one idle watch connection costs the external harness's API emulator per event (decision 0045).

    .venv/bin/python bench/harness_idle_watches.py [--events N] --harness DIR 0 4 9 13

The external harness (its folder given by ``--harness DIR`` or ``C5C3_BENCH_HARNESS``, read-only) runs its counting
emulator, the simulated K-ORC and ESO and
its monitor in one Python process. Every open watch is a thread of that process waiting on the emulator's one
condition variable, which ``emit`` notifies for every event of every kind: each watch wakes once per event,
whether or not the event is of its kind. For each count of idle watches given (watches of ConfigMaps, which get
no event), this opens them over HTTP on 127.0.0.1, creates N Secrets through the emulator's in-process helper
(no HTTP, not counted), and prints the emulator process's CPU per event. The difference between two counts,
divided by the difference in watches, is the cost of one idle watch per event on this machine now (compare in
one sitting: it moves with the load). Bounded: N events per count, sockets closed and the server stopped at the end.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from typing import Any

import harness_location  # bench/, beside this script


def per_event(emulator: Any, idle: int, events: int) -> float:
    """Emulator CPU (process time) per event, in microseconds, with ``idle`` idle watches open."""
    server, _ = emulator.serve()
    port = server.server_address[1]
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(idle)]
    try:
        for sock in sockets:
            sock.sendall(b"GET /api/v1/configmaps?watch=true&timeoutSeconds=600 HTTP/1.1\r\nHost: bench\r\n\r\n")
        time.sleep(0.5)  # every watch thread is waiting
        began = time.process_time()
        for n in range(events):
            server.emu.local_create("", "v1", "secrets", "default",
                                    {"metadata": {"name": f"s{n}"}, "data": {"a": "Yg=="}})
            if n % 10 == 9:
                time.sleep(0.001)  # a burst, as a busy harness sees it: the woken threads run
        time.sleep(0.5)
        return (time.process_time() - began) * 1e6 / events
    finally:
        for sock in sockets:
            sock.close()
        emulator.stop(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("idle", nargs="+", type=int, help="idle watch counts to measure, in this order")
    parser.add_argument("--events", type=int, default=5000, help="events per count (default 5000)")
    harness_location.add_argument(parser)
    args = parser.parse_args()
    sys.path.insert(0, str(harness_location.resolve(args.harness, "emu_counting.py")))
    import emu_counting  # the harness's emulator, imported from its folder

    for idle in args.idle:
        print(f"{idle:3d} idle watches: {per_event(emu_counting, idle, args.events):7.1f} us of emulator CPU per event",
              flush=True)


if __name__ == "__main__":
    main()
