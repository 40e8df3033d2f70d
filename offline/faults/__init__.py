"""A fault-injecting HTTP(S) proxy for tests: between a client (``engine run``) and an API server (the HTTP
emulator, a real kube-apiserver), on 127.0.0.1 only, with fault windows switched on and off at run time.

    with FaultProxy(emulator.url) as proxy:          # upstream http or https (upstream_ca: its CA)
        kubeconfig points at proxy.url                # or proxied(kubeconfig, proxy, ca=...)
        with proxy.window(FAULTS["cut"]) as tally:    # or status(500), status(429, retry_after=1), latency(3.0),
            ...                                       # conflict(0.7), reset(), gone(), cut()
        tally.counts["watch"], tally.per_second("watch"), proxy.counts()

A ``Fault`` hits the request kinds it names (``KINDS``: watch, list, get, write, other), a ``share`` of them at
random. A window whose fault hits watches first ends the watch streams open through the proxy, so every watch
meets it. ``FaultProxy`` lists its calls and every fault.
"""

from offline.faults.proxy import FaultProxy, proxied
from offline.faults.windows import (
    FAULTS,
    KINDS,
    Fault,
    Tally,
    conflict,
    cut,
    gone,
    kind_of,
    latency,
    reset,
    status,
)

__all__ = ["FAULTS", "KINDS", "Fault", "FaultProxy", "Tally", "conflict", "cut", "gone", "kind_of", "latency",
           "proxied", "reset", "status"]
