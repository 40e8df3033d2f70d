"""``engine run`` keeps its threads on one CPU of those it may use (``--cpu-pinning one``, the default), or on all."""

from __future__ import annotations

import contextlib
import os

import pytest
from integration_kit import OperatorProcess, World

pytestmark = pytest.mark.only_on("emulator", reason="where a process's threads run is the process's own affair, "
                                 "whichever API server it talks to")


def thread_cpus(pid: int) -> dict[int, set[int]]:
    """The CPUs each thread of a process may run on (a thread that ended between the listing and its read is left
    out: a start-up thread may end at any time)."""
    found: dict[int, set[int]] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):
            found[int(tid)] = os.sched_getaffinity(int(tid))
    return found


def test_every_thread_of_the_operator_runs_on_one_cpu_of_those_it_may_use(world: World) -> None:
    allowed = os.sched_getaffinity(0)  # the operator's, inherited from this process
    operator = OperatorProcess(world, name="pinned")
    operator.wait_ready()
    threads = thread_cpus(operator.process.pid)
    assert operator.stop() == 0
    assert len(threads) > 5  # the main thread, the workers, the informers, the endpoints
    cpus = set().union(*threads.values())
    if len(allowed) > 1:
        assert len(cpus) == 1 and cpus <= allowed, threads
        assert f"keeping the operator's threads on CPU {min(cpus)} of the {len(allowed)} it may use" in operator.logs()
    else:  # nothing to choose: left as it is
        assert cpus == allowed, threads


def test_with_pinning_off_every_thread_may_run_on_every_allowed_cpu(world: World) -> None:
    allowed = os.sched_getaffinity(0)
    operator = OperatorProcess(world, "--cpu-pinning", "off", name="unpinned")
    operator.wait_ready()
    threads = thread_cpus(operator.process.pid)
    assert operator.stop() == 0
    assert all(cpus == allowed for cpus in threads.values()), threads
