"""The `engine` command line: one entry point, subcommands added per concern."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from engine import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="engine",
        description="A declarative rule engine that serves c5c3.io credential orders.",
    )
    parser.add_argument("--version", action="version", version=f"engine {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
