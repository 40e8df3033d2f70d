"""``engine run`` killed with SIGKILL at random moments (seeded: the same moments each run), while it provisions
orders and while it tears them down; each time a new one starts in its place. The invariants (``fault_kit``) hold
once it has converged, and after teardown nothing is left."""

from __future__ import annotations

import random
import time

import pytest
from fault_kit import Invariants, all_ready, wait_gone
from integration_kit import API, TENANT, OperatorProcess, World, order, wait_for

pytestmark = pytest.mark.only_on("emulator", reason="kill -9 runs once, over the emulator, to keep CI bounded; "
                                 "a real server stores what the emulator stores for these requests")

SEED = 32
PATIENCE = 60.0


def started(world: World, name: str) -> OperatorProcess:
    process = OperatorProcess(world, name=name)
    process.wait_ready()
    return process


def test_kill_9_at_random_moments_keeps_the_invariants(world: World) -> None:
    rand = random.Random(SEED)
    invariants = Invariants(world)
    first, second = ["chaos-a", "chaos-b", "chaos-c"], ["chaos-d", "chaos-e"]
    killed = []

    operator = started(world, "killed-0")
    for name in first:
        world.management.create(order("KeystoneUser", name))
    time.sleep(rand.uniform(0.05, 0.6))  # somewhere in the first passes (the orders take about a second)
    operator.kill()
    killed.append(operator)

    operator = started(world, "killed-1")
    for name in second:
        world.management.create(order("KeystoneUser", name))
    time.sleep(rand.uniform(0.05, 0.6))  # some orders half provisioned, others not begun
    operator.kill()
    killed.append(operator)

    operator = started(world, "restarted-2")
    names = first + second
    wait_for(lambda: all_ready(world, names), timeout=PATIENCE, message="every order Ready after two kills")
    invariants.check(names)
    for name in names:
        world.management.delete(API, "KeystoneUser", TENANT, name)
    time.sleep(rand.uniform(0.0, 0.1))  # in the middle of the teardown (about 0.2 s for five orders)
    operator.kill()
    killed.append(operator)

    operator = started(world, "restarted-3")
    wait_gone(invariants, names, timeout=PATIENCE)
    assert operator.stop() == 0, operator.logs()[-3000:]
    assert all(process.process.returncode == -9 for process in killed)
