"""`engine render`: what the rules would write for one order, and why the pass stopped, offline.

Modules: ``inputs`` (the order and world files -> seeds, errors as file:line:col), ``passes`` (the
order's passes in a scenario world), ``verdict`` (which gate, step and action wrote a condition),
``document`` (the YAML stream, secrets redacted).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import TextIO

from offline.render.document import documents
from offline.render.inputs import load_inputs
from offline.render.passes import run_passes
from offline.scenario.model import ScenarioError, ScenarioErrors
from offline.scenario.runner import SetupError, load_setup

__all__ = ["command"]


def command(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """The ``engine render`` subcommand (arguments from ``engine.cli``). Exit 0 rendered, 1 bad input."""
    stdout, stderr = out or sys.stdout, err or sys.stderr
    now = args.now or dt.datetime.now(dt.UTC).replace(microsecond=0)
    try:
        setup = load_setup(args.rules, args.crds, args.templates)
    except SetupError as exc:
        print(f"engine render: {exc}", file=stderr)
        return 1
    clusters = (args.cluster,) if args.cluster else ()
    try:
        inputs = load_inputs(args.order, args.world, setup.catalog, cluster=args.cluster or "", crds=setup.crds,
                             now=now)
        rendered = run_passes(inputs, setup, now=now, clusters=clusters, passes=args.passes)
    except ScenarioErrors as exc:
        for error in exc.errors:
            print(error, file=stderr)
        return 1
    except ScenarioError as exc:
        print(exc, file=stderr)
        return 1
    if args.log:  # never with secret values, --show-secrets or not
        for line in rendered.logs:
            print(rendered.redact(line), file=stderr)
    print(documents(rendered, show_secrets=args.show_secrets), end="", file=stdout)
    return 0
