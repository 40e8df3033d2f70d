"""The list of kept differences stays true: every entry is asserted by a contract test, and names only
implementations the suite runs."""

from __future__ import annotations

from pathlib import Path

from differences import KEPT_DIFFERENCES

HERE = Path(__file__).parent
IMPLEMENTATIONS = {"memory", "kube", "kube-cached", "real", "real-cached"}


def test_every_kept_difference_is_asserted_by_a_test() -> None:
    """Each difference's name appears in a test module (where ``differs`` or ``settled`` asserts it)."""
    sources = "".join(path.read_text() for path in HERE.glob("test_*.py") if path.name != Path(__file__).name)
    assert [name for name in KEPT_DIFFERENCES if f'"{name}"' not in sources] == []


def test_differences_are_kept_by_emulators_only() -> None:
    """The real server is the reference: no difference is kept by it."""
    for name, difference in KEPT_DIFFERENCES.items():
        assert difference.kept_by <= IMPLEMENTATIONS - {"real", "real-cached"}, name
        assert difference.kept_by and difference.reason, name

