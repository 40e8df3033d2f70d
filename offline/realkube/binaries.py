"""Where the real-server tier's binaries are: the folder ``scripts/kube-binaries`` built for the checkout's pins.

``KUBE_BINARIES_FOLDER`` names a folder holding the four binaries directly (a machine that built them some other
way); otherwise the checkout's script says whether its build for today's pins is complete, and where.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "kube-binaries"
FOLDER_VARIABLE = "KUBE_BINARIES_FOLDER"
NAMES = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")


class BinariesMissing(Exception):
    """The binaries are not built; the message says how to build them."""


@dataclass(frozen=True)
class KubeBinaries:
    """The four programs of one pinned release."""

    folder: Path

    @property
    def etcd(self) -> Path:
        return self.folder / "etcd"

    @property
    def kube_apiserver(self) -> Path:
        return self.folder / "kube-apiserver"

    @property
    def kube_controller_manager(self) -> Path:
        return self.folder / "kube-controller-manager"

    @property
    def kubectl(self) -> Path:
        return self.folder / "kubectl"


def find_binaries() -> KubeBinaries:
    """The built binaries, or ``BinariesMissing`` saying what to run."""
    named = os.environ.get(FOLDER_VARIABLE)
    if named:
        return _checked(Path(named), f"{FOLDER_VARIABLE}={named}")
    if not SCRIPT.is_file():
        raise BinariesMissing(f"no checkout with scripts/kube-binaries here: set {FOLDER_VARIABLE} to a folder "
                              f"holding {', '.join(NAMES)}")
    answer = subprocess.run([str(SCRIPT), "--check"], capture_output=True, text=True, check=False)
    if answer.returncode != 0:
        raise BinariesMissing("kube-apiserver, kube-controller-manager, kubectl and etcd are not built for the "
                              "pinned release: run scripts/kube-binaries (about 5 minutes; needs Go)")
    return _checked(Path(answer.stdout.strip()), "scripts/kube-binaries")


def _checked(folder: Path, source: str) -> KubeBinaries:
    missing = [name for name in NAMES if not os.access(folder / name, os.X_OK)]
    if missing:
        raise BinariesMissing(f"{source}: {folder} lacks {', '.join(missing)}")
    return KubeBinaries(folder)
