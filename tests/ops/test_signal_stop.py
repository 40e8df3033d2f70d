"""A SIGTERM or Ctrl-C stops `engine run` wherever it lands: on the main thread inside ``stop.wait`` holding the
stop event's own lock (decision 0079: a handler that set the event there waited for that lock forever), or on
another thread while the main thread waits (decision 0081: the handler, which only the main thread runs, never
ran). Either way the process hung until killed."""

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


TAKEN_BY_ANOTHER_THREAD = textwrap.dedent("""
    import logging, signal, sys, threading
    from engine.operator import stop_on_signals

    logging.basicConfig(level=logging.INFO, format="%(message)s")

    stop = threading.Event()
    with stop_on_signals(stop):
        other = threading.Thread(target=stop.wait, args=(20,), name="a worker", daemon=True)
        other.start()
        signal.pthread_kill(other.ident, int(sys.argv[1]))  # as the kernel may hand a process's signal to any thread
        print("stopped" if stop.wait(10) else "not stopped", flush=True)
    print("handlers back" if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else "handler left", flush=True)
    print("wakeup fd back" if signal.set_wakeup_fd(-1) == -1 else "wakeup fd left", flush=True)
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_another_thread_takes_stops_the_main_threads_wait(signum: signal.Signals) -> None:
    done = subprocess.run([sys.executable, "-c", TAKEN_BY_ANOTHER_THREAD, str(int(signum))], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert done.stdout.splitlines() == ["stopped", "handlers back", "wakeup fd back"], done.stdout + done.stderr
    assert done.stderr.count(f"received {signum.name}; stopping") == 1, done.stderr


OTHER_SIGNALS_PASS_THROUGH = textwrap.dedent("""
    import logging, os, signal, threading
    from engine.operator import stop_on_signals

    logging.basicConfig(level=logging.INFO, format="%(message)s")

    heard = threading.Event()
    signal.signal(signal.SIGUSR1, lambda signum, frame: heard.set())
    stop = threading.Event()
    with stop_on_signals(stop):
        os.kill(os.getpid(), signal.SIGUSR1)
        print("heard" if heard.wait(5) else "not heard", flush=True)
        print("stopped" if stop.wait(1) else "running", flush=True)
""")


def test_another_signal_with_a_handler_does_not_stop_it() -> None:
    """The wakeup fd hears every signal that has a Python handler: only SIGTERM and SIGINT stop the operator."""
    done = subprocess.run([sys.executable, "-c", OTHER_SIGNALS_PASS_THROUGH], cwd=ROOT, capture_output=True,
                          text=True, timeout=30)
    assert done.stdout.splitlines() == ["heard", "running"], done.stdout + done.stderr
    assert "stopping" not in done.stderr, done.stderr
