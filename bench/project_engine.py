"""The engine a benchmark's ``--project DIR`` runs: ``DIR/.venv/bin/engine``, refused unless it runs DIR's code.

A checkout whose ``.venv`` is another checkout's (a symlink, to save an install) runs that other checkout's code:
the venv's editable install points at the checkout it was made from, whatever the current folder. A comparison of
two commits would then measure one commit twice. So each benchmark asks the venv which ``engine`` package its
``engine`` command imports, and stops with one line when it is not DIR's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# The console script's view: sys.path[0] is the script's folder, so no current folder shadows the install.
_IMPORTED_FROM = "import sys; sys.path[0] = sys.argv[1]; import engine; print(engine.__file__)"


def imported_from(project: Path) -> Path | None:
    """The folder of the ``engine`` package that ``project/.venv/bin/engine`` imports (None: no such venv)."""
    python = project / ".venv" / "bin" / "python"
    if not python.exists():
        return None
    done = subprocess.run([str(python), "-c", _IMPORTED_FROM, str(python.parent)], cwd=project,
                          capture_output=True, text=True, check=False, timeout=60)
    if done.returncode != 0:
        return None
    return Path(done.stdout.strip()).resolve().parent


def checkout(project: Path) -> Path:
    """``project`` resolved, once its ``.venv/bin/engine`` is known to run its code; else exits 2 with one line."""
    project = project.resolve()
    found = imported_from(project)
    if found is None:
        sys.exit(f"{project}: no .venv/bin/engine there that imports the engine (make one: "
                 f"python3 -m venv {project}/.venv && {project}/.venv/bin/pip install -e {project})")
    if found != project / "engine":
        sys.exit(f"{project}/.venv/bin/engine runs the code in {found}, not {project}/engine: its venv is "
                 f"another checkout's. Give {project} a venv of its own "
                 f"(python3 -m venv {project}/.venv && {project}/.venv/bin/pip install -e {project}).")
    return project
