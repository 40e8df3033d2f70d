"""`engine run`'s info line per order transition: a condition whose status or reason changes (Ready, or a
sub-condition: a rotation shows as one) and the finalizer's release on deletion; nothing on a converged pass."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.rules.catalog import load_catalog
from tests.reconcile.test_run import GATED, World, part_is_ready


def transitions(caplog: pytest.LogCaptureFixture) -> list[tuple[str, ...]]:
    found = [(r.kind, r.order, r.cluster, r.condition, getattr(r, "status", ""), r.reason)  # type: ignore[attr-defined]
             for r in caplog.records if r.levelno == logging.INFO and hasattr(r, "condition")]
    caplog.clear()
    return sorted(found)  # the order the conditions are in on the order


def test_one_info_line_per_transition_and_none_when_converged(rules_dir: Callable[..., Path],
                                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="engine.reconcile")
    w = World(next(iter(load_catalog(rules_dir(GATED)).values())))
    w.order(size=2)
    w.run()  # the finalizer
    w.run()  # the part is applied; the step waits for it
    assert transitions(caplog) == [("Widget", "ns/w", "", "BuiltReady", "False", "Waiting"),
                                   ("Widget", "ns/w", "", "Ready", "False", "NotAllReady")]
    w.run()  # still waiting: no transition
    assert transitions(caplog) == []
    part_is_ready(w)
    w.run()
    assert transitions(caplog) == [("Widget", "ns/w", "", "BuiltReady", "True", "Built"),
                                   ("Widget", "ns/w", "", "Ready", "True", "AllReady")]
    w.run()  # converged
    assert transitions(caplog) == []
    w.cluster.delete("example.io/v1", "Widget", "ns", "w")
    for _ in range(3):
        w.run()
    assert transitions(caplog) == [("Widget", "ns/w", "", "Finalizer", "", "Released")]
    messages = [r.getMessage() for r in caplog.records]
    assert not any("parts" in m for m in messages)  # a condition's message (rendered from data) is not logged


def test_a_line_says_what_happened_in_words(rules_dir: Callable[..., Path], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="engine.reconcile")
    w = World(next(iter(load_catalog(rules_dir(GATED)).values())))
    w.order(size=2)
    w.run()
    w.run()
    part_is_ready(w)
    w.run()
    assert "Widget ns/w: Ready is True (AllReady)" in [r.getMessage() for r in caplog.records]


def test_the_demos_rotation_reads_as_transitions(caplog: pytest.LogCaptureFixture) -> None:
    """`engine demo`'s KeystoneUser (real rules, simulated clock): Ready, then the scheduled rotation as the
    sub-conditions leaving and regaining their ready reasons with Ready, then the deletion's release."""
    import io

    from simulators import demo as story

    with caplog.at_level(logging.INFO, logger="engine"):
        assert story.main(out=io.StringIO()) == 0
    lines = [r.getMessage().removeprefix("KeystoneUser tenant-a/workflow: ") for r in caplog.records
             if hasattr(r, "condition")]
    first_ready = lines.index("Ready is True (AllReady)")
    rotation = lines[first_ready + 1:]
    assert rotation[:3] == ["UserReady is False (WaitingForServiceAccounts)",
                            "DeliveryReady is False (WaitingForServiceAccounts)", "Ready is False (NotAllReady)"]
    assert rotation[-2:] == ["Ready is True (AllReady)", "deleted, finalizer c5c3.io/keystoneuser-teardown released"]
