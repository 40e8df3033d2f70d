"""A SIGTERM or Ctrl-C stops `engine run` wherever it lands on the main thread, even inside ``stop.wait`` holding
the stop event's own lock (decision 0079: a handler that set the event there waited for that lock forever, and the
process hung until killed)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LANDS_INSIDE_THE_EVENTS_LOCK = textwrap.dedent("""
    import logging, os, signal, sys, threading
    from engine.operator import stop_on_signals

    logging.basicConfig(level=logging.INFO, format="%(message)s")

    stop = threading.Event()
    with stop_on_signals(stop):
        with stop._cond:  # where Event.wait holds it between its checks
            os.kill(os.getpid(), int(sys.argv[1]))
            for _ in range(10_000):  # the handler runs on this thread, between these bytecodes
                pass
        print("stopped" if stop.wait(10) else "not stopped", flush=True)
    print("handlers back" if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else "handler left", flush=True)
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_landing_while_the_stop_events_lock_is_held_still_stops(signum: signal.Signals) -> None:
    done = subprocess.run([sys.executable, "-c", LANDS_INSIDE_THE_EVENTS_LOCK, str(int(signum))], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert done.stdout.splitlines() == ["stopped", "handlers back"], done.stdout + done.stderr
    assert f"received {signum.name}; stopping" in done.stderr
