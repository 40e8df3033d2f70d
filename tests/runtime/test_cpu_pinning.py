"""The operator's threads kept on one allowed CPU, moved when other processes crowd it, never fleeing its own work."""

from __future__ import annotations

import logging
import os
import threading

import pytest

from engine.runtime.cpu_pinning import CpuPinning, CpuTimes, choose, others_share, read_cpu_times

PROC_STAT = """cpu  5000 0 3000 90000 200 0 100 0 0 0
cpu0 2500 0 1500 45000 100 0 50 0 0 0
cpu1 2500 0 1500 45000 100 0 50 0 0 0
intr 123456 0 0
ctxt 987654
cpu_not_a_cpu 1 2 3
"""


def test_each_cpu_line_of_proc_stat_is_read_and_idle_and_iowait_are_not_busy() -> None:
    assert read_cpu_times(PROC_STAT) == {0: CpuTimes(busy=4050, total=49150), 1: CpuTimes(busy=4050, total=49150)}


def test_this_machines_proc_stat_names_every_cpu_the_process_may_use() -> None:
    with open("/proc/stat", encoding="ascii") as stat:
        assert os.sched_getaffinity(0) <= set(read_cpu_times(stat.read()))


class Machine:
    """Two or more CPUs whose counters a test advances, the threads' affinities, and the process's own CPU time."""

    def __init__(self, cpus: int = 2) -> None:
        self.clock = 0.0
        self.own = 0.0
        self.times = {cpu: CpuTimes(busy=0, total=0) for cpu in range(cpus)}
        self.affinity: dict[int, set[int]] = {1001: set(self.times), 1002: set(self.times)}
        self.refuse = False

    def second(self, busy: dict[int, float], own: float = 0.0) -> None:
        """One second passes: each CPU busy for that share of it (100 ticks a second), the process using ``own``."""
        self.clock += 1.0
        self.own += own
        for cpu, share in busy.items():
            before = self.times[cpu]
            self.times[cpu] = CpuTimes(busy=before.busy + round(100 * share), total=before.total + 100)

    def set_affinity(self, tid: int, cpus: set[int]) -> None:
        if self.refuse:
            raise PermissionError(1, "Operation not permitted")
        self.affinity[tid] = set(cpus)

    def pinning(self) -> CpuPinning:
        return CpuPinning(set(self.times), read_times=lambda: dict(self.times), own_seconds=lambda: self.own,
                          thread_ids=lambda: list(self.affinity), set_affinity=self.set_affinity,
                          get_affinity=lambda tid: set(self.affinity[tid]), clock=lambda: self.clock)


def test_the_threads_go_to_the_cpu_others_use_least() -> None:
    machine = Machine()
    pinning = machine.pinning()
    pinning.look()
    machine.second({0: 0.9, 1: 0.1})
    pinning.look()
    assert pinning.cpu == 1
    assert machine.affinity == {1001: {1}, 1002: {1}}


def test_the_process_does_not_flee_the_cpu_its_own_work_keeps_busy() -> None:
    machine = Machine()
    pinning = machine.pinning()
    pinning.look()
    machine.second({0: 0.0, 1: 0.3})
    pinning.look()
    assert pinning.cpu == 0
    for _ in range(3):  # its own work fills CPU 0; others use a little of CPU 1
        machine.second({0: 0.95, 1: 0.2}, own=0.9)
        pinning.look()
        assert pinning.cpu == 0


def test_it_moves_when_others_crowd_its_cpu_by_more_than_the_margin_and_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    machine = Machine()
    pinning = machine.pinning()
    with caplog.at_level(logging.INFO, logger="engine.runtime.cpu_pinning"):
        pinning.look()
        machine.second({0: 0.0, 1: 0.5})
        pinning.look()
        assert pinning.cpu == 0
        machine.second({0: 0.8, 1: 0.55}, own=0.5)  # others: 0.3 of CPU 0 against 0.55 of CPU 1
        pinning.look()
        assert pinning.cpu == 0
        machine.second({0: 1.0, 1: 0.1}, own=0.2)  # others: 0.8 of CPU 0 against 0.1 of CPU 1
        pinning.look()
    assert pinning.cpu == 1
    assert machine.affinity == {1001: {1}, 1002: {1}}
    assert [r.getMessage() for r in caplog.records] == [
        "keeping the operator's threads on CPU 0 of the 2 it may use (--cpu-pinning off runs them on all)",
        "moving the operator's threads from CPU 0 to CPU 1: other processes used 80% of CPU 0 and 10% of CPU 1"]


def test_a_thread_started_after_the_choice_is_brought_to_the_cpu_at_the_next_look() -> None:
    machine = Machine()
    pinning = machine.pinning()
    pinning.look()
    machine.second({0: 0.5, 1: 0.0})
    pinning.look()
    machine.affinity[1003] = {0, 1}
    machine.second({0: 0.5, 1: 0.0})
    pinning.look()
    assert machine.affinity[1003] == {1}


def test_cpus_about_as_idle_as_the_idlest_are_drawn_from_so_operators_started_together_spread() -> None:
    drawn: list[list[int]] = []

    def draw(cpus: list[int]) -> int:
        drawn.append(cpus)
        return cpus[-1]

    assert choose({0: 0.02, 1: 0.5, 2: 0.08, 3: 0.0}, {0, 1, 2, 3}, current=None, margin=0.3, draw=draw) == 3
    assert drawn == [[0, 2, 3]]


def test_only_allowed_cpus_are_chosen() -> None:
    assert choose({0: 0.0, 1: 0.5, 2: 0.8}, {1, 2}, current=None, margin=0.3) == 1
    assert choose({0: 0.0}, {1, 2}, current=None, margin=0.3) is None
    assert others_share({0: CpuTimes(10, 100)}, {0: CpuTimes(60, 200)}, pinned=0, own_share=0.7) == {0: 0.0}


def test_a_refused_pinning_is_one_warning_and_the_threads_run_everywhere_again(
        caplog: pytest.LogCaptureFixture) -> None:
    machine = Machine()
    pinning = machine.pinning()
    pinning.look()
    machine.second({0: 0.5, 1: 0.0})
    pinning.look()
    machine.refuse = True
    machine.affinity[1003] = {0, 1}
    machine.second({0: 0.5, 1: 0.0})
    with caplog.at_level(logging.WARNING, logger="engine.runtime.cpu_pinning"):
        pinning.look()
        pinning.look()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "the operator cannot keep its threads on CPU 1 (PermissionError: [Errno 1] Operation not permitted); it runs "
        "on every allowed CPU from now on"]
    assert all(r.exc_info is None for r in caplog.records)
    assert pinning.cpu is None
    stop = threading.Event()
    pinning.run(stop)  # returns at once: it has given up


def test_unreadable_counters_are_one_warning_and_no_pinning(caplog: pytest.LogCaptureFixture) -> None:
    def unreadable() -> dict[int, CpuTimes]:
        raise FileNotFoundError(2, "No such file or directory", "/proc/stat")

    pinning = CpuPinning({0, 1}, read_times=unreadable, thread_ids=lambda: [], set_affinity=lambda tid, cpus: None)
    with caplog.at_level(logging.WARNING, logger="engine.runtime.cpu_pinning"):
        pinning.look()
        pinning.look()
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "cannot read how busy the CPUs are (FileNotFoundError" in warning
    assert pinning.cpu is None
