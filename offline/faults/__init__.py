"""A fault-injecting HTTP(S) proxy for tests: between a client (``engine run``) and an API server (the HTTP
emulator, a real kube-apiserver), on 127.0.0.1 only, with fault windows switched on and off at run time.

    from offline.faults import FaultProxy, FAULTS, latency, status

    with FaultProxy(emulator.url) as proxy:          # upstream http://... or https://... (upstream_ca: its CA)
        kubeconfig points at proxy.url                # https too: certificate=(cert, key) the client trusts
        with proxy.window(FAULTS["cut"]) as tally:    # or status(500), status(429, retry_after=1), latency(3.0),
            ...                                       # conflict(0.7), reset(), gone(), cut()
        tally.counts["watch"], tally.per_second("watch"), tally.seconds, tally.paths[("watch", path)]
        proxy.counts()                                # every request seen since the start, by kind
        proxied(kubeconfig, proxy, ca=...)            # a kubeconfig's clusters at the upstream reached through it

- ``FaultProxy(upstream, *, certificate=None, upstream_ca=None, seed=0)``: ``start()`` / ``stop()`` (or a
  ``with`` block), ``url``, ``inject(fault | None)`` (None heals), ``window(fault)`` (injects, yields a live
  ``Tally`` of the requests seen in it, heals on exit), ``tally()`` (a ``Tally`` without a fault), ``counts()``.
- ``proxied(kubeconfig, proxy, ca=None)``: the kubeconfig with its clusters at the upstream reached through the
  proxy (``ca``: the CA of a TLS proxy's certificate).
- Request kinds (``KINDS``): ``watch``, ``list``, ``get``, ``write`` (POST, PUT, PATCH, DELETE), ``other``
  (discovery, OpenAPI). A ``Fault`` hits the kinds it names (``kinds=``), a ``share`` of them at random.
- Faults: ``status(code)`` answers a Status document (429 with ``Retry-After``); ``latency(s)`` holds each
  request that long first (``target=``: only those whose path or query contains it); ``conflict(share)`` answers
  409 to that share of writes; ``reset()`` resets the connection; ``gone()`` answers watches with a 410 ERROR
  event; ``cut()`` answers watches 200 with ``Transfer-Encoding: chunked`` and closes with no chunk. A window whose
  fault hits watches (all but latency and conflict) first ends the watch streams open through the proxy, so every
  watch meets it.
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
