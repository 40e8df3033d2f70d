"""scripts/engine and scripts/test on a fresh clone: the first-run install of ``.venv``.

The scripts run for real (bash, flock, mv); ``python3`` is a stand-in on PATH that makes a venv
whose ``pip install`` is slow and not atomic, like pip's, and that breaks the venv when two pips
write into it at once, as happened for real. So the tests need no network and take seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 60.0
LOCK = "-r operator.lock"
"""How the stand-in pip records the install of the image's lock, which comes first."""

FAKE_PYTHON = r'''#!{python}
"""A stand-in python3: `-m venv DIR`, and inside a venv `-m pip install ...` and `-c "import X"`."""
import json, os, sys, time
from pathlib import Path

args = sys.argv[1:]
if args[:2] == ["-m", "venv"]:
    venv = Path(args[2])
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    (venv / "bin" / "python").write_text(Path(__file__).read_text())
    (venv / "bin" / "python").chmod(0o755)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    sys.exit(0)

venv = Path(sys.argv[0]).resolve().parent.parent
state = venv / "installed.json"
installed = json.loads(state.read_text()) if state.exists() else {{"modules": [], "pips": []}}
if args[:1] == ["-c"]:
    module = args[1].split()[-1]
    sys.exit(0 if module in installed["modules"] and not (venv / "corrupt").exists() else 1)
if args[:3] == ["-m", "pip", "install"] and "--upgrade" not in args:
    spec = args[args.index("-e") + 1] if "-e" in args else "-r " + Path(args[args.index("-r") + 1]).name
    print(f"Collecting {{spec}}", file=sys.stderr)
    try:
        busy = os.open(venv / ".pip-busy", os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        (venv / "corrupt").write_text("two pips wrote here at once")
        sys.exit(1)
    time.sleep(1.0)
    modules = ["engine"] + (["pytest_timeout"] if spec.endswith("[test]") else [])
    installed = {{"modules": sorted(set(installed["modules"]) | set(modules)), "pips": installed["pips"] + [spec]}}
    state.write_text(json.dumps(installed))
    tools = ["engine"] + (["ruff", "mypy", "lint-imports", "pytest"] if spec.endswith("[test]") else [])
    for tool in tools:
        # Like a console script, it names its interpreter by absolute path.
        script = venv / "bin" / tool
        script.write_text(
            f"#!/bin/sh\n[ -x {{venv}}/bin/python ] || {{{{ echo bad interpreter >&2; exit 126; }}}}\n"
            f"[ -e {{venv}}/corrupt ] && {{{{ echo ImportError >&2; exit 1; }}}}\necho {{tool}} ok\n"
        )
        script.chmod(0o755)
    os.close(busy)
    os.unlink(venv / ".pip-busy")
    print("Successfully installed", file=sys.stderr)
sys.exit(0)
'''


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A fresh clone's worth: the scripts, pyproject.toml and the lock, no .venv."""
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "scripts", clone / "scripts")
    shutil.copytree(ROOT / "requirements", clone / "requirements")
    shutil.copy(ROOT / "pyproject.toml", clone / "pyproject.toml")
    fakebin = tmp_path / "fakebin"
    fakebin.mkdir()
    (fakebin / "python3").write_text(FAKE_PYTHON.format(python=sys.executable))
    (fakebin / "python3").chmod(0o755)
    return clone


def start(clone: Path, *command: str) -> subprocess.Popen[str]:
    # The clone has no tools/kube-binaries: what is under test is the install, not the real-server tier's build.
    env = {**os.environ, "PATH": f"{clone.parent / 'fakebin'}:{os.environ['PATH']}", "C5C3_REAL_SERVER": "skip"}
    return subprocess.Popen(
        [str(clone / command[0]), *command[1:]], cwd=clone, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=LIMIT)
    return process.returncode, out, err


def installed(clone: Path) -> dict[str, list[str]]:
    return dict(json.loads((clone / ".venv" / "installed.json").read_text()))


def test_two_first_runs_at_once_leave_a_working_venv(checkout: Path) -> None:
    engine = start(checkout, "scripts/engine", "--version")
    suite = start(checkout, "scripts/test")
    engine_rc, engine_out, engine_err = finish(engine)
    suite_rc, suite_out, suite_err = finish(suite)
    assert (engine_rc, suite_rc) == (0, 0), engine_err + suite_err
    assert "engine ok" in engine_out and "pytest ok" in suite_out
    assert not (checkout / ".venv" / "corrupt").exists()
    assert "pytest_timeout" in installed(checkout)["modules"]
    assert "waiting" in engine_err + suite_err  # the second run said why it was quiet
    # And later runs find it complete: no pip again.
    pips = installed(checkout)["pips"]
    assert finish(start(checkout, "scripts/engine", "--version"))[0] == 0
    assert installed(checkout)["pips"] == pips


def test_scripts_engine_installs_the_runtime_only_and_says_so(checkout: Path) -> None:
    rc, _out, err = finish(start(checkout, "scripts/engine", "--version"))
    assert rc == 0, err
    assert installed(checkout)["pips"] == [LOCK, str(checkout)]
    assert "pytest_timeout" not in installed(checkout)["modules"]
    assert "installing the locked dependencies" in err
    assert "installing the project (runtime)" in err and "Collecting" in err
    rc, _out, err = finish(start(checkout, "scripts/test"))
    assert rc == 0, err
    assert installed(checkout)["pips"] == [LOCK, str(checkout), LOCK, f"{checkout}[test]"]


def test_an_interrupted_first_install_is_not_taken_for_a_working_one(checkout: Path) -> None:
    # What a killed pip leaves: the interpreter, its packages importable, a console script that fails.
    venv = checkout / ".venv"
    subprocess.run([str(checkout.parent / "fakebin" / "python3"), "-m", "venv", str(venv)], check=True, timeout=LIMIT)
    (venv / "installed.json").write_text(json.dumps({"modules": ["engine", "pytest_timeout"], "pips": []}))
    (venv / "bin" / "engine").write_text("#!/bin/sh\necho ImportError >&2; exit 1\n")
    (venv / "bin" / "engine").chmod(0o755)
    (checkout / ".venv.staging").mkdir()  # and a half-built staging venv of a killed first run
    rc, out, err = finish(start(checkout, "scripts/engine", "--version"))
    assert rc == 0, err
    assert "engine ok" in out
