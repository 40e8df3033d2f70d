"""The operators the tests start as subprocesses check their reads as the test process does (decision 37):
one whose reader changes an object a cluster read handed out exits at once with status 70, naming it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from integration_kit import ROOT, OperatorProcess, World, order, wait_for

from engine.cluster import readonly

CHANGED = "changed-by-its-reader"

A_READER_THAT_CHANGES_WHAT_IT_READ = textwrap.dedent(f"""\
    import sys

    from engine.cli import main
    from engine.cluster.kube.cluster import KubeCluster

    read = KubeCluster.get

    def get_and_change(self, *args, **kwargs):
        answer = read(self, *args, **kwargs)
        if answer.get("kind") == "KeystoneUser" and answer["metadata"]["name"] == "{CHANGED}":
            answer["metadata"].setdefault("labels", {{}})["example.io/changed"] = "by-its-reader"
        return answer

    KubeCluster.get = get_and_change
    sys.exit(main(sys.argv[1:]))
    """)
"""``engine run`` with a KubeCluster whose get changes the order it answered: the bug the check exists for."""


def test_an_operator_whose_reader_changes_a_read_object_exits_naming_it(world: World) -> None:
    operator = OperatorProcess(world, name="changes-what-it-reads", program=("-c", A_READER_THAT_CHANGES_WHAT_IT_READ))
    try:
        operator.wait_ready()
        world.management.create(order("KeystoneUser", CHANGED))
        wait_for(lambda: operator.process.poll() is not None, message="the checked operator to exit")
        logs = operator.logs()
        assert operator.process.returncode == readonly.EXIT_READS_CHANGED, logs[-3000:]
        violation = next(line for line in logs.splitlines() if readonly.VIOLATION in line)
        assert f"KeystoneUser tenant-a/{CHANGED}" in violation
    finally:
        operator.kill()
        world.processes.remove(operator)  # its violation is this test's subject, not a failure of the module


def test_engine_run_checks_no_read_unless_started_with_the_variable() -> None:
    """Production never pays for the check: without ENGINE_CHECK_READS=1 the process records no read."""
    env = {k: v for k, v in os.environ.items() if k != readonly.ENVIRONMENT}
    probe = "from engine.cluster import readonly; print(readonly.CHECKING, readonly.SELF_CHECKING)"
    unset = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=60)
    assert unset.stdout.split() == ["False", "False"], unset.stderr
    started_with = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env={**env, readonly.ENVIRONMENT: "1"},
                                  capture_output=True, text=True, timeout=60)
    assert started_with.stdout.split() == ["True", "True"], started_with.stderr
