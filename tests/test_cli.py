"""The console script answers --help and --version."""

import subprocess
import sys

from engine import __version__


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, check=False)


def test_version_prints_the_package_version() -> None:
    """`engine --version` names the installed version."""
    done = run("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"engine {__version__}"


def test_help_describes_the_engine() -> None:
    """`engine --help` exits 0 and says what the tool is."""
    done = run("--help")
    assert done.returncode == 0
    assert "rule engine" in done.stdout
