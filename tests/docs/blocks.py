"""The fenced code blocks of the documentation: every shell command and YAML example, with where it stands."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    body: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path, *langs: str) -> Iterator[Block]:
    text = path.read_text()
    for match in FENCE.finditer(text):
        if match["lang"] in langs:
            indent = len(match["indent"])
            body = "".join(line[indent:] for line in match["body"].splitlines(keepends=True))
            yield Block(path, text.count("\n", 0, match.start()) + 1, match["lang"], body)


def commands(block: Block) -> Iterator[list[str]]:
    """Each command of a sh or console block as words (console: the lines after `$ `), continuations joined,
    comments dropped, leading VAR=value assignments dropped."""
    lines = block.body.splitlines()
    if block.lang == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    joined = "\n".join(lines).replace("\\\n", " ")
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
            words.pop(0)
        if words:
            yield words
