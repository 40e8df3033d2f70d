"""A rule set on disk as a mounted ConfigMap lays it out (keys are links into ``..data``, swapped at once),
and the reloader's refusal to take a set that changed while it was read."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from prometheus_client import CollectorRegistry

from engine.metrics import Metrics
from engine.rules.folder import RuleFolder
from engine.runtime.kinds import Catalog
from engine.runtime.reload import Reload, RuleReloader
from tests.conftest import PART, WIDGET


def configmap_volume(mount: Path, version: str, files: dict[str, str]) -> None:
    """Lay out ``files`` as kubelet's atomic writer does: a timestamped folder, ``..data`` pointing at it
    (replaced by a rename), and one link per top-level entry into ``..data``."""
    mount.mkdir(exist_ok=True)
    payload = mount / f"..{version}"
    for name, text in files.items():
        (payload / name).parent.mkdir(parents=True, exist_ok=True)
        (payload / name).write_text(text)
    staged = mount / "..data_tmp"
    os.symlink(payload.name, staged)
    os.replace(staged, mount / "..data")
    for top in {name.split("/")[0] for name in files}:
        if not (mount / top).is_symlink():
            os.symlink(f"..data/{top}", mount / top)


def test_a_configmap_volume_is_read_through_its_links_and_a_swap_changes_the_fingerprint(tmp_path: Path) -> None:
    mount = tmp_path / "c5c3"
    files = {"rules/widget.yaml": WIDGET, "templates/widget/part.yaml.j2": PART}
    configmap_volume(mount, "2026_12_01_1", files)
    folder = RuleFolder(mount / "rules", mount / "templates")
    assert folder.lint() == []
    assert list(folder.load()) == ["example.io/v1/Widget"]
    before = folder.fingerprint()
    edited = {**files, "templates/widget/part.yaml.j2": PART + "# edited\n"}
    configmap_volume(mount, "2026_12_01_2", edited)  # the old payload stays until kubelet removes it
    assert folder.fingerprint() != before
    plain = tmp_path / "plain"
    for name, text in edited.items():
        (plain / name).parent.mkdir(parents=True, exist_ok=True)
        (plain / name).write_text(text)
    assert folder.fingerprint() == RuleFolder(plain / "rules", plain / "templates").fingerprint()  # ..* not read


class Shifting:
    """A rule source whose contents change while it is linted (a ConfigMap swap in the middle of a read)."""

    def __init__(self, prints: Sequence[str]) -> None:
        self.prints = list(prints)
        self.loads = 0

    def fingerprint(self) -> str:
        return self.prints.pop(0) if len(self.prints) > 1 else self.prints[0]

    def lint(self) -> list[object]:
        return []

    def load(self) -> Catalog:
        self.loads += 1
        return {}


def reloader(source: Shifting, swapped: list[Catalog]) -> tuple[RuleReloader, Metrics]:
    metrics = Metrics(CollectorRegistry())
    swap: Callable[[Catalog], None] = swapped.append
    return RuleReloader(source, swap, loaded="a" * 64, metrics=metrics, log=logging.getLogger("test")), metrics


def test_a_set_that_changes_while_read_is_not_taken_until_it_settles() -> None:
    swapped: list[Catalog] = []
    source = Shifting(["b" * 64, "c" * 64])
    watcher, metrics = reloader(source, swapped)
    assert watcher.poll() is Reload.UNSETTLED
    assert swapped == []
    assert watcher.poll() is Reload.LOADED  # the next look finds it settled at "c"
    assert len(swapped) == 1
    assert watcher.loaded == "c" * 64
    assert metrics.registry.get_sample_value("c5c3_operator_rules_info", {"hash": "c" * 16}) == 1
