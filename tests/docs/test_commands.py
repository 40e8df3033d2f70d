"""Every shell command in the docs and the README is checked, so a renamed flag, a moved file or a command that
no longer works fails the test suite: `engine` commands are parsed by the real argument parser and the cheap ones
(lint, test, render, schema, rbac) run against the repository's files; a script, a program or a file a command
names must exist."""

from __future__ import annotations

import contextlib
import io
import itertools
import os

import pytest

from engine.cli import build_parser, main
from tests.docs.blocks import ROOT, Block, blocks, commands, pages

SHELL = ("sh", "console")
ENGINES = {"engine", "./scripts/engine", "scripts/engine", ".venv/bin/engine"}
CHEAP = {"lint", "test", "render", "schema", "rbac"}
"""Subcommands that run in seconds on the repository's files and need no cluster: run, not only parsed."""
TOOLS = {"kubectl", "podman", "export", "cd", "pip", "python3", "git", "curl", "ls", "cat", "mkdir", "cp", "diff",
         "head"}
"""Programs from outside the project: only their file arguments are checked."""
OUTSIDE: dict[str, str] = {}
"""Commands naming a program outside the repository, each with why it is allowed (none may be added lightly)."""
ELSEWHERE = ("docs/tutorial/",)
"""Pages whose commands run in their own folder, by their own test (tests/docs/test_tutorial.py): parsed here only."""

ALL = [(block, words) for page in pages() for block in blocks(page, *SHELL) for words in commands(block)]


def test_the_docs_hold_shell_commands() -> None:
    assert len(ALL) > 20


@pytest.mark.parametrize(("block", "words"), ALL, ids=[f"{b}:{' '.join(w)[:60]}" for b, w in ALL])
def test_a_documented_command_works(block: Block, words: list[str], capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    check(block, words, capsys, monkeypatch)


def check(block: Block, words: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """One command: what it runs must exist, parse, and (for the cheap engine commands) succeed."""
    program, args = words[0], words[1:]
    if program in OUTSIDE:
        return
    if program in ENGINES:
        parse(block, args)
        elsewhere = str(block).startswith(ELSEWHERE)
        if args and args[0] in CHEAP and not elsewhere:
            monkeypatch.chdir(ROOT)
            with contextlib.redirect_stdout(io.StringIO()):
                code = main(args)
            assert code == 0, f"{block}: `engine {' '.join(args)}` exited {code}: {capsys.readouterr().err[-2000:]}"
        return
    if program in TOOLS:
        if program == "kubectl":
            for flag, value in itertools.pairwise(args):
                if flag in ("-f", "-k") and "..." not in value and "://" not in value:
                    assert (ROOT / value).exists(), f"{block}: kubectl {flag} {value}: no such file in the repository"
        return
    if "/" in program:
        path = ROOT / program
        assert path.is_file() and os.access(path, os.X_OK), f"{block}: {program} is not an executable of the repo"
        if program.endswith("/python") and args and args[0].endswith(".py"):
            assert (ROOT / args[0]).is_file(), f"{block}: {args[0]}: no such file"
        if program.endswith("/pytest"):
            assert main_pytest_markers_known(args), f"{block}: pytest {' '.join(args)}: unknown marker"
        return
    pytest.fail(f"{block}: `{program}` is neither engine, a known tool nor a file of the repository")


def parse(block: Block, args: list[str]) -> None:
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            build_parser().parse_args(args)
    except SystemExit as exit:
        assert exit.code == 0, f"{block}: `engine {' '.join(args)}` does not parse: {stderr.getvalue().strip()}"


def main_pytest_markers_known(args: list[str]) -> bool:
    markers = (ROOT / "pyproject.toml").read_text()
    return all(f'"{marker}:' in markers for flag, marker in itertools.pairwise(args) if flag == "-m")


def test_a_command_that_does_not_parse_fails() -> None:
    """The check is real: a flag `engine` does not have fails the parse."""
    with pytest.raises(AssertionError, match="does not parse"):
        parse(Block(ROOT / "README.md", 1, "sh", ""), ["lint", "--no-such-flag"])
