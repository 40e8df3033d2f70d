"""The `engine` command line: one entry point, subcommands added per concern."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engine import __version__

LAB_ENTRY_POINTS = "c5c3_order_engine.lab"
"""The entry-point group of the lab: `embedded` (the clusters of `engine run` without one) and `demo`."""
OFFLINE_ENTRY_POINTS = "c5c3_order_engine.offline"
"""The entry-point group of the offline world (package offline): the commands `test` and `render`."""


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
        "files or folders. A rule file that does not compile is reported and counted as failed; the other kinds' "
        "scenarios still run. Exit status: 0 all passed, 1 any failed, 2 a scenario file is invalid or a rule file "
        "does not compile.",
    )
    test.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="scenario files or folders (recursive)")
    test.add_argument("--rules", type=Path, help="rule files folder (default: rules/, else the installed rules)")
    test.add_argument("--crds", type=Path, action="append", help="CRD folder or file installed in every cluster, "
                      "every *.yaml below it (repeatable; default: deploy/crds/, else the installed CRDs)")
    test.add_argument("--templates", type=Path, help="templates folder (default: found beside the rules)")
    test.set_defaults(handler=_test)

    lint = subparsers.add_parser(
        "lint",
        help="check rule files and their templates",
        description="Compile every rule file and template; print each error as file:line:col: message (stdout), "
        "then one line saying what was checked and how many errors (stderr). Exit status: 0 clean, 1 errors.",
    )
    lint.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                      help="rule files or folders (default: rules/, else the installed rules)")
    lint.add_argument("--templates", type=Path, help="templates folder (default: templates/ beside the rules folder)")
    lint.add_argument("--crds", type=Path, action="append",
                      help="CRD folder or file to check paths read from the order and inputs against (repeatable; "
                           "default: crds/ beside the rules folder, else deploy/crds/ beside it)")
    lint.set_defaults(handler=_lint)

    rbac = subparsers.add_parser(
        "rbac",
        help="print the RBAC the rule files need (ServiceAccount, ClusterRole, the Lease's Role)",
        description="Derive, verb by verb, the rights the rule files need (what inputs read, what actions and "
        "teardown write, the orders, their status and finalizers) plus the runtime's own (the Lease, Events, "
        "registration Secrets) and print them as manifests, each verb commented with what needs it; with --target, "
        "what it needs on a registered target cluster. "
        "Exit status: 0 printed, 1 the rules do not compile or name a kind whose resource is unknown.",
    )
    rbac.add_argument("--rules", type=Path, help="rule files folder (default: rules/, else the installed rules)")
    rbac.add_argument("--templates", type=Path, help="templates folder (default: templates/ beside the rules)")
    rbac.add_argument("--crds", type=Path, action="append",
                      help="CRD folder or file naming the plurals of the kinds the rules use (repeatable; "
                           "default: deploy/crds/, else the installed CRDs)")
    rbac.add_argument("--namespace", default="c5c3-system", help="the operator's namespace: its ServiceAccount "
                      "and Lease (default: c5c3-system)")
    rbac.add_argument("--clusters-namespace", default="c5c3-clusters", metavar="NAMESPACE",
                      help="namespace of the registration Secrets (default: c5c3-clusters; empty: no Role)")
    rbac.add_argument("--name", default="c5c3-operator", help="ServiceAccount and role name (default: c5c3-operator)")
    rbac.add_argument("--target", action="store_true",
                      help="print what the operator needs on a registered target cluster instead (its orders, and "
                      "what the rules read and write on the order's cluster or a cluster they name)")
    rbac.set_defaults(handler=_rbac)

    _add_render(subparsers)

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

    _add_run(subparsers)
    return parser


def _add_render(subparsers: Any) -> None:
    render = subparsers.add_parser(
        "render",
        help="print what a pass over an order would write, and why it stopped, without a cluster",
        description="Run the rules over one order, offline, against the objects given (the scenario fixture "
        "format: YAML documents), and print as YAML documents the order with its status, every object the pass "
        "wrote, and a Result naming the gate, step and action that ended the pass with its condition's reason "
        "and message. A pass that only installs the finalizer is followed by the next one. Secret values are "
        "redacted. Exit status: 0 rendered, 1 an input file or the rules are invalid (file:line:col).",
    )
    render.add_argument("order", type=Path, metavar="ORDER",
                        help="YAML file holding the order (its other documents join the world, on its cluster)")
    render.add_argument("world", nargs="*", type=Path, metavar="WORLD",
                        help="YAML files of the objects the pass may read (on the management cluster)")
    render.add_argument("--rules", type=Path, help="rule files folder (default: rules/, else the installed rules)")
    render.add_argument("--templates", type=Path, help="templates folder (default: found beside the rules)")
    render.add_argument("--crds", type=Path, action="append", help="CRD folder or file installed in the clusters "
                        "(repeatable; default: deploy/crds/, else the installed CRDs)")
    render.add_argument("--cluster", metavar="NAME", help="the order (and its file's other objects) live on this "
                        "registered target cluster (default: the management cluster)")
    render.add_argument("--now", type=_moment, metavar="TIME",
                        help="the clock during the passes, RFC 3339 (default: now)")
    render.add_argument("--passes", type=_positive, metavar="N",
                        help="run exactly N passes, one after the other (default: one, and the next after a pass "
                        "that only installed the finalizer)")
    render.add_argument("--show-secrets", action="store_true",
                        help="print Secret data and generated values as they are (never in the log)")
    render.add_argument("--log", action="store_true", help="print the passes' log lines on stderr (secrets masked)")
    render.set_defaults(handler=_render)


def _moment(text: str) -> Any:
    from engine.clock import parse_time

    try:
        return parse_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an RFC 3339 time (2026-01-01T00:00:00Z)") from None


def _add_run(subparsers: Any) -> None:
    run = subparsers.add_parser(
        "run",
        help="run the operator (on an embedded pair of clusters when there is no cluster to run against)",
        description="Run the operator. With --kubeconfig, or in a pod (in-cluster configuration), it serves the "
        "orders of that cluster and of the target clusters registered there. With neither, it starts an embedded "
        "management cluster and one target cluster (edge-1) on local API emulators with simulated external "
        "controllers, writes a kubeconfig for kubectl and runs against them. Stops gracefully on SIGTERM or "
        "SIGINT. Exit status: 0 after a graceful stop, 1 when the rule files do not lint clean or the cluster "
        "cannot be used.",
    )
    run.add_argument("--kubeconfig", type=Path, help="kubeconfig of the management cluster (default: in-cluster "
                     "configuration in a pod, else the embedded clusters)")
    run.add_argument("--context", help="kubeconfig context (default: the current one)")
    run.add_argument("--rules", type=Path, help="rule files folder (default: rules/, else the installed rules)")
    run.add_argument("--templates", type=Path, help="templates folder (default: templates/ beside the rules)")
    run.add_argument("--crds", type=Path,
                     help="CRDs installed in the embedded clusters (default: deploy/crds/, else the installed CRDs; "
                     "and its external/)")
    run.add_argument("--rules-reload-interval", type=_seconds_or_off, default=5.0, metavar="DURATION",
                     help="how often the rule folder is checked for a changed set, which is linted and swapped in "
                     "between passes, or refused (default: 5s; 0 turns reloading off); with --sharded every replica "
                     "does so on its own and the leader gives an order only to a member whose rules have its kind")
    run.add_argument("--max-concurrent-reconciles", type=_positive, default=8, metavar="N",
                     help="passes run at once (default: 8, enough to keep the API server busy while passes wait "
                     "on it); one order never has two")
    run.add_argument("--cpu-pinning", choices=("one", "off"), default="one",
                     help="one: keep the operator's threads on one of the CPUs it may use, moved to an idler one when "
                     "other processes crowd it, which spares the interpreter lock's moves between CPUs, about a "
                     "third of the CPU a busy operator uses (default; with --kubeconfig or in a pod); off: run on "
                     "every allowed CPU")
    run.add_argument("--clusters-namespace", default="c5c3-clusters", metavar="NAMESPACE",
                     help="namespace of the target clusters' registration Secrets (default: c5c3-clusters; "
                     "an empty value turns target clusters off)")
    run.add_argument("--leader-elect", action="store_true", help="elect a leader on a Lease before reconciling")
    run.add_argument("--leader-election-namespace", default="c5c3-system", metavar="NAMESPACE",
                     help="namespace of the Lease (default: c5c3-system)")
    run.add_argument("--leader-election-id", default="c5c3-operator", metavar="NAME",
                     help="name of the Lease (default: c5c3-operator)")
    run.add_argument("--leader-elect-lease-duration", type=_seconds, default=15.0, metavar="DURATION",
                     help="how long a Lease that stopped being renewed keeps followers away (default: 15s)")
    run.add_argument("--leader-elect-renew-deadline", type=_seconds, default=10.0, metavar="DURATION",
                     help="how long a leader keeps reconciling without renewing its Lease (default: 10s)")
    run.add_argument("--leader-elect-retry-period", type=_seconds, default=2.0, metavar="DURATION",
                     help="how often candidates try to acquire or renew the Lease (default: 2s)")
    run.add_argument("--sharded", action="store_true",
                     help="spread the orders over every replica run with --sharded: each holds a membership Lease "
                     "and reconciles only the orders the leader labels with its name (implies --leader-elect)")
    run.add_argument("--metrics-bind-address", default=":8080", metavar="ADDRESS",
                     help="address of /metrics (default: :8080; 0 turns it off; on the embedded clusters an "
                     "address without a host listens on 127.0.0.1 only)")
    run.add_argument("--health-probe-bind-address", default=":8081", metavar="ADDRESS",
                     help="address of /healthz and /readyz (default: :8081; 0 turns it off; on the embedded "
                     "clusters an address without a host listens on 127.0.0.1 only)")
    run.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"),
                     help="least severe level logged (default: info)")
    run.add_argument("--kubeconfig-out", type=Path, metavar="PATH",
                     help="embedded clusters only: where to write their kubeconfig, kept after the stop (default: a "
                     "temporary engine-run-* folder, removed at the stop)")
    run.set_defaults(handler=_run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    from engine.operator import seconds

    try:
        value = seconds(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (15s, 500ms, 1m)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive duration")
    return value


def _seconds_or_off(text: str) -> float:
    return 0.0 if text.strip() in ("0", "0s") else _seconds(text)


def _missing(command: str, flags: Sequence[tuple[str, Path]]) -> bool:
    """Whether a folder a flag names (or its default) is missing: said in one line naming the path and the flag."""
    for flag, path in flags:
        if not path.exists():
            print(f"engine {command}: {path}: no such file or folder (set {flag})", file=sys.stderr)
            return True
    return False


def _run(args: argparse.Namespace) -> int:
    import os

    from engine.operator import Options, run
    from engine.rules.bundle import default_folder

    args.rules = args.rules or default_folder("rules")
    args.crds = args.crds or default_folder("crds")
    embedded_run = args.kubeconfig is None and not os.environ.get("KUBERNETES_SERVICE_HOST")
    if _missing("run", [("--rules", args.rules), *([("--crds", args.crds)] if embedded_run else [])]):
        return 1

    options = Options(
        rules=args.rules, templates=args.templates, kubeconfig=args.kubeconfig, context=args.context,
        max_concurrent_reconciles=args.max_concurrent_reconciles, clusters_namespace=args.clusters_namespace,
        leader_elect=args.leader_elect, leader_election_namespace=args.leader_election_namespace,
        leader_election_id=args.leader_election_id, lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline, retry_period=args.leader_elect_retry_period,
        metrics_bind_address=args.metrics_bind_address, health_probe_bind_address=args.health_probe_bind_address,
        log_level=args.log_level, sharded=args.sharded, rules_reload_interval=args.rules_reload_interval,
        cpu_pinning=args.cpu_pinning == "one",
    )
    if args.kubeconfig is not None or os.environ.get("KUBERNETES_SERVICE_HOST"):
        return run(options, own_process=True)
    embedded = _lab("embedded", "engine run without --kubeconfig (the embedded clusters)")
    if embedded is None:
        return 2
    return int(embedded(options, crds=args.crds, kubeconfig_out=args.kubeconfig_out))


def _lint(args: argparse.Namespace) -> int:
    from engine.rules.bundle import default_folder
    from engine.rules.crd_lint import crd_check
    from engine.rules.lint import Checked, lint_paths
    from engine.rules.projections import whole_reads

    paths = list(args.paths) or [default_folder("rules")]
    if _missing("lint", [*(("PATH", p) for p in paths), *(("--crds", c) for c in args.crds or ())]):
        return 1
    check_crds = crd_check() is not None  # the operator image leaves the CRD check (package offline) out
    if args.crds and not check_crds:
        print("engine lint --crds needs the CRD check of the test harness (package offline), which this install leaves "
              "out (the operator image holds the operator only): use a full install, `pip install c5c3-order-engine`, "
              "or a checkout", file=sys.stderr)
        return 2
    compiled: dict[Path, Any] = {}
    checked = Checked()
    errors = lint_paths(paths, templates_root=args.templates, crds=args.crds, compiled=compiled, check_crds=check_crds,
                        checked=checked)
    for error in sorted(errors, key=lambda e: (e.position.file, e.position.line, e.position.col, e.message)):
        print(error)
    for kind in compiled.values():  # what is not wrong but costs memory a reader should know of (decision 0040)
        for spec, note in whole_reads(kind):
            print(f"{spec.origin}: {note}", file=sys.stderr)
    sys.stdout.flush()  # the summary comes last, also where stdout and stderr are one stream
    print(checked.summary(errors), file=sys.stderr)  # stdout stays the error lines: none when clean
    return 1 if errors else 0


def _rbac(args: argparse.Namespace) -> int:
    from engine.rules.bundle import default_folder
    from engine.rules.catalog import load_catalog
    from engine.rules.errors import RuleErrors
    from engine.rules.rbac import RbacError, crd_plurals, kind_rights
    from engine.rules.rbac_manifest import Identity, render, render_target

    args.rules = args.rules or default_folder("rules")
    crds = list(args.crds or [default_folder("crds")])
    if _missing("rbac", [("--rules", args.rules), *(("--crds", c) for c in crds)]):
        return 1
    try:
        catalog = load_catalog(args.rules, templates_dir=args.templates)
        rights = kind_rights(catalog.values(), crd_plurals(crds), target=args.target)
    except RuleErrors as err:
        for error in err.errors:
            print(error, file=sys.stderr)
        return 1
    except RbacError as err:
        print(f"engine rbac: {err}", file=sys.stderr)
        return 1
    who = Identity(name=args.name, namespace=args.namespace, clusters_namespace=args.clusters_namespace)
    manifest = render_target if args.target else render
    print(manifest(rights, who, _rules_source(args.rules)), end="")
    return 0


def _rules_source(rules: Path) -> str:
    """How a generated file names its rules: the folder as given, or the package for the installed rules (an
    absolute site-packages path would differ on every machine)."""
    from engine.rules.bundle import BUNDLE_PACKAGE, installed

    bundled = installed("rules")
    if bundled is not None and rules == bundled:  # default_folder chose the install: no rules/ here
        return f"the installed rules (package {BUNDLE_PACKAGE})"
    return f"{rules.as_posix().rstrip('/')}/"


def _render(args: argparse.Namespace) -> int:
    command = _harness("render")
    if command is None:
        return 1
    from engine.rules.bundle import default_folder

    args.rules = args.rules or default_folder("rules")
    args.crds = tuple(args.crds or [default_folder("crds")])  # hashable: a Setup may be cached by its folders
    if _missing("render", [("--rules", args.rules), *(("--crds", c) for c in args.crds)]):
        return 1
    return command(args)


def _schema(args: argparse.Namespace) -> int:
    from engine.rules.lint import schema_document

    print(schema_document())
    return 0


def _demo(args: argparse.Namespace) -> int:
    demo = _lab("demo", "engine demo")
    if demo is None:
        return 2
    return int(demo())


def _lab(name: str, needed_by: str) -> Callable[..., Any] | None:
    """The lab's entry point ``name`` (simulators: it names the kinds the engine must not), or None, said."""
    from importlib.metadata import entry_points

    found = entry_points(group=LAB_ENTRY_POINTS, name=name)
    try:
        loaded: Callable[..., Any] | None = next(iter(found)).load() if found else None
    except ImportError:  # the operator image's wheel leaves the lab out; its entry points stay in the metadata
        loaded = None
    if loaded is None:
        print(f"{needed_by} needs the lab (package simulators), which this install leaves out (the operator image "
              f"holds the operator only; entry point {name!r} of group {LAB_ENTRY_POINTS}): use a full install, "
              "`pip install c5c3-order-engine`, or a checkout", file=sys.stderr)
    return loaded


def _harness(command: str) -> Callable[..., int] | None:
    """The offline world's command ``command`` (scenarios, render), found by entry point; said in one line when not."""
    from importlib.metadata import entry_points

    found = entry_points(group=OFFLINE_ENTRY_POINTS, name=command)
    try:
        loaded: Callable[..., int] | None = next(iter(found)).load() if found else None
    except ImportError:  # the operator image's wheel leaves the offline world out; its entry points remain
        loaded = None
    if loaded is None:
        print(f"engine {command} needs the test harness (package offline), which this install leaves out (the operator "
              "image holds the operator only): use a full install, `pip install c5c3-order-engine`, or a checkout",
              file=sys.stderr)
    return loaded


def _test(args: argparse.Namespace) -> int:
    command = _harness("test")
    if command is None:
        return 2
    from engine.rules.bundle import default_folder

    args.rules = args.rules or default_folder("rules")
    args.crds = tuple(args.crds or [default_folder("crds")])  # hashable: a Setup may be cached by its folders
    if _missing("test", [("--rules", args.rules), *(("--crds", c) for c in args.crds)]):  # a PATH: per path
        return 2
    return command(args)


CLOSED_PIPE_STATUS = 128 + 13
"""The exit status when the reader of stdout went away (``engine schema | head -c 100``): a tool ended by
SIGPIPE's, as the shell reports it."""

INTERRUPTED_STATUS = 128 + 2
"""The exit status after a Ctrl-C outside ``engine run`` (a long ``engine lint`` or ``engine test``): SIGINT's, as
the shell reports it."""


def main(argv: Sequence[str] | None = None) -> int:
    """Every subcommand; a closed stdout (its reader stopped reading) or a Ctrl-C ends it quietly, without a
    traceback (``engine run`` handles SIGINT itself and stops gracefully)."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # what is still buffered meets the closed pipe here, not at interpreter exit
    except BrokenPipeError:
        _quiet_stdout()
        return CLOSED_PIPE_STATUS
    except KeyboardInterrupt:
        print("engine: interrupted", file=sys.stderr)
        return INTERRUPTED_STATUS
    return status


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: Python flushes it once more at exit, which would fail again and say so."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a descriptor (a test's StringIO): nothing flushes at exit
        pass
    finally:
        os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    handler = getattr(args, "handler", None)
    return int(handler(args)) if handler is not None else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
