"""The tutorial's sessions: each step folder of docs/tutorial/files/ has a session.console, the commands the page
shows with their output. `python -m tests.docs.tutorial` rewrites every session from what the commands print now;
tests/docs/test_tutorial.py checks that each still prints what its session shows."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = ROOT / "docs/tutorial/files"
STEPS = sorted((p for p in FILES.glob("step-*") if p.is_dir()), key=lambda p: int(p.name.split("-")[1]))
TIMING = re.compile(r"\(\d+\.\d+s\)")


def commands(session: Path) -> list[str]:
    return [line[2:] for line in session.read_text().splitlines() if line.startswith("$ ")]


def run(step: Path, command: str) -> str:
    """What `command` prints in the step's folder: stdout, then stderr (each command's own order), an `engine`
    command run by this interpreter; `> FILE` compares nothing and writes nothing: FILE must hold the output."""
    words = shlex.split(command)
    target = None
    if ">" in words:
        words, target = words[:words.index(">")], words[words.index(">") + 1]
    assert words[0] == "engine", f"{step.name}: only engine commands run in a session: {command}"
    done = subprocess.run([sys.executable, "-m", "engine.cli", *words[1:]], cwd=step, capture_output=True,
                          text=True, timeout=120, check=False)
    if target is not None:
        assert (step / target).read_text() == done.stdout, f"{step.name}/{target} is not what `{command}` prints"
        return done.stderr
    return done.stdout + done.stderr


def session(step: Path) -> str:
    """The session text for the step: each command after `$ `, then what it printed."""
    out = []
    for command in commands(step / "session.console"):
        out += [f"$ {command}\n", run(step, command)]
    return "".join(out)


def normal(text: str) -> str:
    """Timings differ from run to run: every `(0.05s)` reads the same."""
    return TIMING.sub("(0.00s)", text)


if __name__ == "__main__":
    for step in STEPS:
        (step / "session.console").write_text(session(step))
