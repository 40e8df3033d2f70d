"""The `engine` command line: one entry point, subcommands added per concern."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from engine import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="engine",
        description="A declarative rule engine that serves c5c3.io credential orders.",
    )
    parser.add_argument("--version", action="version", version=f"engine {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")

    test = subparsers.add_parser(
        "test",
        help="run scenario files against the rules, without a cluster",
        description="Run every scenario file (*.yaml with a top-level `scenario:` key) under the given "
        "files or folders. Exit status: 0 all passed, 1 any failed, 2 a scenario file is invalid.",
    )
    test.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="scenario files or folders (recursive)")
    test.add_argument("--rules", type=Path, help="rule files folder (default: rules/)")
    test.add_argument("--crds", type=Path, help="CRDs installed in every cluster (default: deploy/crds/)")
    test.add_argument("--templates", type=Path, help="templates folder (default: found beside the rules)")
    test.set_defaults(handler=_test)

    lint = subparsers.add_parser(
        "lint",
        help="check rule files and their templates",
        description="Compile every rule file and template; print each error as file:line:col: message. "
        "Exit status: 0 clean, 1 errors.",
    )
    lint.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="rule files or folders (default: rules/)")
    lint.add_argument("--templates", type=Path, help="templates folder (default: templates/ beside the rules folder)")
    lint.set_defaults(handler=_lint)

    schema = subparsers.add_parser("schema", help="print the rule-file JSON Schema (for editors)")
    schema.set_defaults(handler=_schema)

    demo = subparsers.add_parser(
        "demo",
        help="run one sample order end to end on an in-memory cluster and print its timeline",
        description="Create a sample order on an in-memory cluster with simulated external controllers and a "
        "simulated clock, and print a timeline of its provisioning, delivery, rotation and teardown. Needs no "
        "cluster and no network. Exit status: 0 the story went as expected, 1 a step did not.",
    )
    demo.set_defaults(handler=_demo)
    return parser


def _lint(args: argparse.Namespace) -> int:
    from engine.rules.lint import lint_paths

    errors = lint_paths(list(args.paths) or [Path("rules")], templates_root=args.templates)
    for error in errors:
        print(error)
    if errors:
        print(f"{len(errors)} error(s)", file=sys.stderr)
        return 1
    return 0


def _schema(args: argparse.Namespace) -> int:
    from engine.rules.lint import schema_document

    print(schema_document())
    return 0


def _demo(args: argparse.Namespace) -> int:
    from simulators.demo import main as demo  # outside the engine: it names the kinds the engine must not

    return demo()


def _test(args: argparse.Namespace) -> int:
    from engine.testing.scenario.runner import command  # loaded only when scenarios run

    return command(args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    handler = getattr(args, "handler", None)
    return int(handler(args)) if handler is not None else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
