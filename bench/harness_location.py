"""Where the external KeystoneUser harness lives: given by --harness DIR or the C5C3_BENCH_HARNESS variable.

The harness (a counting API emulator with simulated K-ORC and ESO, driven by its ``run-engine.sh N``) is not
part of this repository, so there is no default: a bench script that needs it says so in one line and exits 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

VARIABLE = "C5C3_BENCH_HARNESS"


def add_argument(parser: argparse.ArgumentParser) -> None:
    """The --harness option (its old spelling --bench-dir kept as an alias)."""
    parser.add_argument("--harness", "--bench-dir", dest="harness", type=Path, default=None,
                        help=f"the external KeystoneUser harness folder (holds run-engine.sh; default: ${VARIABLE})")


def resolve(given: Path | None, needs: str = "run-engine.sh") -> Path:
    """The harness folder, from the option or the variable; exit 2 with one line when neither names one."""
    folder = given if given is not None else (Path(os.environ[VARIABLE]) if os.environ.get(VARIABLE) else None)
    if folder is None:
        sys.exit(f"this benchmark needs the external KeystoneUser harness: pass --harness DIR or set {VARIABLE}")
    if not (folder / needs).exists():
        sys.exit(f"{folder}: no {needs} there (the harness folder is given by --harness DIR or {VARIABLE})")
    return folder.resolve()  # the benchmarks run it from the --project folder, not from here
