"""Every thread of the operator on one CPU of those it may use, moved to an idler one when others crowd it.

Under the interpreter lock one thread runs Python at a time, but each lets the lock go at every system call. With
more than one CPU a thread waiting on another CPU takes it then, and the thread back from its call waits to have
it again: the lock travels between CPUs several times per request, and the kernel's wake-ups cost a third of the
operator's CPU (decisions 0070, 0073). On one CPU the same threads hand the lock on without those crossings.

A CPU chosen once could be crowded later by other processes, so every ``interval`` the operator compares how much
of each allowed CPU others used (``/proc/stat`` less its own use) and moves when another is idler by ``margin``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

LOG = logging.getLogger("engine.runtime.cpu_pinning")

INTERVAL = 5.0
"""Seconds between looks at how busy the allowed CPUs are."""

MARGIN = 0.3
"""How much more of its CPU (a share of one CPU) others must use than of another allowed one before a move:
less and two operators on one machine could chase each other."""

FIRST_SAMPLE = 0.1
"""Seconds of the first look, taken before the first choice."""

EVEN = 0.1
"""CPUs others use within this share of the idlest are as idle as it: one of them is drawn at random, so that
operators started together on one machine do not all choose the same one."""


@dataclass(frozen=True)
class CpuTimes:
    """One CPU's time counters from ``/proc/stat``, in clock ticks."""

    busy: int
    total: int


def read_cpu_times(text: str) -> dict[int, CpuTimes]:
    """Each CPU's counters from the text of ``/proc/stat`` (its ``cpuN`` lines; idle and iowait are not busy)."""
    times: dict[int, CpuTimes] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or not name[3:].isdigit():
            continue
        counters = [int(field) for field in rest.split()[:8]]
        idle = sum(counters[3:5])
        times[int(name[3:])] = CpuTimes(busy=sum(counters) - idle, total=sum(counters))
    return times


def others_share(before: dict[int, CpuTimes], after: dict[int, CpuTimes], *, pinned: int | None,
                 own_share: float) -> dict[int, float]:
    """How much of each CPU (0 to 1) others used between two readings: all of its busy time, less the process's
    own share on the CPU it was pinned to."""
    shares: dict[int, float] = {}
    for cpu, later in after.items():
        earlier = before.get(cpu)
        if earlier is None or later.total <= earlier.total:
            continue
        share = (later.busy - earlier.busy) / (later.total - earlier.total)
        if cpu == pinned:
            share -= own_share
        shares[cpu] = min(max(share, 0.0), 1.0)
    return shares


def choose(shares: dict[int, float], allowed: Iterable[int], *, current: int | None, margin: float,
           draw: Callable[[list[int]], int] = random.choice) -> int | None:
    """The CPU to be on: one of the allowed others use least (``draw`` picks among those within ``EVEN`` of the
    idlest), unless the current one is within ``margin`` of the idlest (None: no allowed CPU was measured)."""
    measured = sorted(cpu for cpu in allowed if cpu in shares)
    if not measured:
        return current
    least = min(shares[cpu] for cpu in measured)
    if current in shares and shares[current] - least <= margin:
        return current
    return draw([cpu for cpu in measured if shares[cpu] <= least + EVEN])


def _proc_stat() -> dict[int, CpuTimes]:
    with open("/proc/stat", encoding="ascii") as stat:
        return read_cpu_times(stat.read())


def _own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def _thread_ids() -> list[int]:
    return [int(name) for name in os.listdir("/proc/self/task") if name.isdigit()]


class CpuPinning:
    """Keeps the process's threads on one allowed CPU, chosen and re-chosen by how much others use each."""

    def __init__(self, allowed: set[int], *, interval: float = INTERVAL, margin: float = MARGIN,
                 read_times: Callable[[], dict[int, CpuTimes]] = _proc_stat,
                 own_seconds: Callable[[], float] = _own_cpu_seconds,
                 thread_ids: Callable[[], list[int]] = _thread_ids,
                 set_affinity: Callable[[int, set[int]], None] = os.sched_setaffinity,
                 get_affinity: Callable[[int], set[int]] = os.sched_getaffinity,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.allowed = set(allowed)
        self.interval = interval
        self.margin = margin
        self.cpu: int | None = None
        """The CPU the threads are kept on (None: not pinned)."""
        self._read_times = read_times
        self._own_seconds = own_seconds
        self._thread_ids = thread_ids
        self._set_affinity = set_affinity
        self._get_affinity = get_affinity
        self._clock = clock
        self._reading: tuple[float, float, dict[int, CpuTimes]] | None = None
        self._failed = False

    def look(self) -> None:
        """Read the CPUs' counters, choose a CPU from what others used since the last look, and keep every thread
        on it (threads started since, on the CPU they were started on, are brought over too)."""
        if self._failed:
            return
        try:
            now, own, times = self._clock(), self._own_seconds(), self._read_times()
        except (OSError, ValueError) as exc:
            self._give_up(f"cannot read how busy the CPUs are ({type(exc).__name__}: {exc})")
            return
        previous, self._reading = self._reading, (now, own, times)
        if previous is None:
            return
        elapsed = now - previous[0]
        own_share = (own - previous[1]) / elapsed if elapsed > 0 else 0.0
        shares = others_share(previous[2], times, pinned=self.cpu, own_share=own_share)
        chosen = choose(shares, self.allowed, current=self.cpu, margin=self.margin)
        if chosen is None:
            return
        if self.cpu is None:
            LOG.info("keeping the operator's threads on CPU %d of the %d it may use (--cpu-pinning off runs them on "
                     "all)", chosen, len(self.allowed))
        elif chosen != self.cpu:
            LOG.info("moving the operator's threads from CPU %d to CPU %d: other processes used %.0f%% of CPU %d "
                     "and %.0f%% of CPU %d", self.cpu, chosen, 100 * shares[self.cpu], self.cpu,
                     100 * shares[chosen], chosen)
        self.cpu = chosen
        self._keep_threads_on(chosen)

    def start(self, stop: threading.Event) -> None:
        """The first choice, from a short look (``FIRST_SAMPLE``), made before the caller starts its threads."""
        self.look()
        stop.wait(FIRST_SAMPLE)
        self.look()

    def run(self, stop: threading.Event) -> None:
        """Look again every ``interval`` (give or take a quarter, so that operators started together do not move
        together) until ``stop`` is set."""
        while not self._failed and not stop.wait(self.interval * random.uniform(0.75, 1.25)):
            self.look()

    def _keep_threads_on(self, cpu: int) -> None:
        wanted = {cpu}
        try:
            for tid in self._thread_ids():
                with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
                    if self._get_affinity(tid) != wanted:
                        self._set_affinity(tid, wanted)
        except OSError as exc:
            self._give_up(f"cannot keep its threads on CPU {cpu} ({type(exc).__name__}: {exc})")

    def _give_up(self, why: str) -> None:
        """Pinning stops for the rest of the run, its threads allowed on every CPU again, said in one line."""
        self._failed = True
        LOG.warning("the operator %s; it runs on every allowed CPU from now on", why)
        with contextlib.suppress(OSError):
            for tid in self._thread_ids():
                with contextlib.suppress(OSError):
                    self._set_affinity(tid, self.allowed)
        self.cpu = None


def pinning_for_this_process() -> CpuPinning | None:
    """The pinning of this process's threads, or None where there is nothing to choose (one allowed CPU) or no
    way to (a system without ``sched_setaffinity`` or ``/proc``)."""
    if not hasattr(os, "sched_getaffinity") or not os.path.isdir("/proc/self/task"):
        return None
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        return None
    return CpuPinning(allowed)
