"""Every difference kept on purpose still happens, and is the one its entry names: when the emulators come to
agree with the real server, the entry must leave ``kept.KEPT``."""

from __future__ import annotations

import pytest

from tests.differential.harness import Kept, Runner, differences
from tests.differential.kept import KEPT

SHARED = [k for k in KEPT if k.where == "shared"]


@pytest.mark.parametrize("kept", SHARED, ids=[k.name for k in SHARED])
def test_the_kept_difference_still_happens(bare_runner: Runner, kept: Kept) -> None:
    still_happens(bare_runner, kept)


def still_happens(runner: Runner, kept: Kept) -> None:
    """The kept difference shows on the runner, and everything that differs is covered by the entry."""
    found = runner.run(kept.case)
    assert found, f"{kept.name}: the real server and the emulators now agree; remove the entry"
    for divergence in found:
        names = list(divergence.answers)
        for other in names[1:]:
            for path, _, _ in differences(divergence.answers[names[0]], divergence.answers[other]):
                assert kept.covers(divergence.request, path), f"{kept.name} does not cover:\n{divergence}"
