"""What the operator reads from disk is bounded: a rule file, an include or a template over the size limit is
refused by lint (naming the file and the limit) and by a live reload (the running rules keep serving), and it is
never read whole; a CRD file beside the rules and the operator's own kubeconfig likewise."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.clock import SystemClock
from engine.cluster.api import BadRequest
from engine.cluster.kube import kube_cluster_from_kubeconfig
from engine.operator import Operator
from engine.rules.folder import RuleFolder
from engine.rules.lint import lint_paths
from engine.runtime.reload import short
from offline.cluster.memory import MemoryCluster
from tests.conftest import PART, WIDGET
from tests.ops.test_rule_reload import NO_WAIT, options, part_data, running, sample, wait_for, widget

MAX_RULE_FILE_BYTES = 256 * 1024
"""The documented limit of a rule file or template (docs/rules.md)."""
MAX_CRD_FILE_BYTES = 3 * 1024 * 1024
"""The documented limit of a CRD file read beside the rules."""


def padded(text: str, size: int) -> str:
    """``text`` followed by YAML comment lines (Jinja comments are not needed: ``#`` lines are template text
    for a template, read as plain data) up to exactly ``size`` bytes."""
    line = "# " + "x" * 77 + "\n"
    body = text + line * ((size - len(text)) // len(line))
    return body + "#" * (size - len(body) - 1) + "\n" if size - len(body) > 0 else body


def test_the_limits_are_the_documented_ones_and_generous_for_real_rule_sets() -> None:
    """The limits are those the docs give, several times the largest rule file, template and CRD shipped (a
    shipped file past a quarter of its limit fails this, long before a real rule set meets the limit)."""
    from engine.rules import limits

    assert (limits.MAX_RULE_FILE_BYTES, limits.MAX_CRD_FILE_BYTES) == (MAX_RULE_FILE_BYTES, MAX_CRD_FILE_BYTES)
    root = Path(__file__).resolve().parents[2]
    shipped = [*root.glob("rules/**/*.yaml"), *root.glob("templates/**/*.j2"),
               *root.glob("examples/*/rules/**/*.yaml"), *root.glob("examples/*/templates/**/*.j2")]
    assert shipped
    assert max(path.stat().st_size for path in shipped) * 4 <= MAX_RULE_FILE_BYTES
    crds = list(root.glob("deploy/crds/**/*.yaml"))
    assert crds and max(path.stat().st_size for path in crds) * 100 <= MAX_CRD_FILE_BYTES


def test_a_rule_file_at_the_limit_lints_and_one_byte_more_is_refused(rules_dir: Callable[..., Path]) -> None:
    """At the limit a rule file is read as any other; one byte more is one lint error naming the file and the
    limit, and nothing else is said of it."""
    rules = rules_dir(padded(WIDGET, MAX_RULE_FILE_BYTES))
    assert (rules / "widget.yaml").stat().st_size == MAX_RULE_FILE_BYTES
    assert lint_paths([rules]) == []
    (rules / "widget.yaml").write_text(padded(WIDGET, MAX_RULE_FILE_BYTES + 1))
    errors = [str(e) for e in lint_paths([rules])]
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{rules / 'widget.yaml'}:1:1: ")
    assert "262145 bytes, over the limit of 262144 bytes" in errors[0], errors


def test_an_include_and_a_template_over_the_limit_are_refused(rules_dir: Callable[..., Path]) -> None:
    """An included rule file and a template over the limit: each is a lint error naming it and the limit."""
    rule = WIDGET.add_after("kind: Widget\n", "include: [common/big.yaml]\n")
    big_include = padded("values:\n  other: \"`1`\"\n", MAX_RULE_FILE_BYTES + 1)
    rules = rules_dir(rule, padded(PART, MAX_RULE_FILE_BYTES + 10), extra={"rules/common/big.yaml": big_include})
    errors = [str(e) for e in lint_paths([rules])]
    template = rules.parent / "templates" / "widget" / "part.yaml.j2"
    assert any(e.startswith(f"{rules / 'common' / 'big.yaml'}:1:1: the rule file is 262145 bytes, over the limit")
               for e in errors), errors
    assert any(e.startswith(f"{template}:1:1: the template is 262154 bytes, over the limit") for e in errors), errors


def test_a_crd_file_over_its_limit_beside_the_rules_is_refused(rules_dir: Callable[..., Path]) -> None:
    """The CRDs lint checks paths against (``crds/`` beside the rules): one over its limit is a lint error
    naming it, and is not read."""
    rules = rules_dir(WIDGET)
    crds = rules.parent / "crds"
    crds.mkdir()
    with (crds / "huge.yaml").open("wb") as out:
        out.truncate(MAX_CRD_FILE_BYTES + 1)  # sparse: costs no disk
    errors = [str(e) for e in lint_paths([rules])]
    assert any(e.startswith(f"{crds / 'huge.yaml'}:1:1: ") and "3 MiB" in e for e in errors), errors


def test_a_read_stops_past_the_limit_whatever_the_file_claims() -> None:
    """A file whose size says nothing (a device, a pipe) is read to one byte past the limit, then refused."""
    from engine.rules.limits import FileTooLarge, read_limited

    with pytest.raises(FileTooLarge) as caught:
        read_limited(Path("/dev/zero"), 1024)
    assert caught.value.limit == 1024 and "1 KiB" in str(caught.value)


def test_the_fingerprint_of_a_set_with_a_huge_file_reads_none_of_it(tmp_path: Path) -> None:
    """A file over the limit in the rule folder is fingerprinted by its size alone: a 64 GiB (sparse) file
    is looked at in no time, and a change of its size is a change of the set."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "widget.yaml").write_text(WIDGET)
    with (rules / "huge.yaml").open("wb") as out:
        out.truncate(64 << 30)
    folder = RuleFolder(rules, tmp_path / "templates")
    first = folder.fingerprint()
    with (rules / "huge.yaml").open("wb") as out:
        out.truncate((64 << 30) + 1)
    assert folder.fingerprint() != first
    assert any("huge.yaml:1:1: " in str(e) and "GiB" in str(e) for e in folder.lint())


def test_a_reload_over_the_limit_is_refused_and_the_running_rules_keep_serving(
        rules_dir: Callable[..., Path], caplog: pytest.LogCaptureFixture) -> None:
    """A rule file grown past the limit on a running operator: refused as a broken set is (its lint line at
    error naming the file and the limit, the refusal metric, still serving the rules it had)."""
    cluster = MemoryCluster("", clock=SystemClock(), permissive=True)
    rules = rules_dir(NO_WAIT)
    operator = Operator(options(rules), cluster)
    served = operator.reloader.loaded
    caplog.set_level(logging.INFO, logger="engine.rules")
    with running(operator):
        assert wait_for(operator.ready)
        (rules.parent / "grown.yaml").write_text(padded(NO_WAIT, 20 << 20))
        os.replace(rules.parent / "grown.yaml", rules / "widget.yaml")  # at once, as kubelet swaps a ConfigMap
        assert wait_for(lambda: sample(operator, "c5c3_operator_rules_reload_total", result="refused") == 1)
        assert operator.ready()
        cluster.create(widget("w2"))
        assert wait_for(lambda: part_data(cluster, "w2") == {"size": "2"})
    assert operator.reloader.loaded == served
    assert sample(operator, "c5c3_operator_rules_reload_total", result="loaded") == 0
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR and r.name == "engine.rules"]
    assert any(line.startswith(f"{rules / 'widget.yaml'}:1:1: ") and "20 MiB" in line and "256 KiB" in line
               for line in errors), errors
    assert any(f"still serving rules {short(served)}" in line for line in errors), errors


def test_an_operator_kubeconfig_over_its_limit_is_refused_unread(tmp_path: Path) -> None:
    """``engine run --kubeconfig FILE`` with a file over the limit: unusable, saying so, and not parsed."""
    path = tmp_path / "kubeconfig"
    with path.open("wb") as out:
        out.truncate(64 << 20)
    with pytest.raises(BadRequest) as caught:
        kube_cluster_from_kubeconfig("", path)
    assert "64 MiB" in str(caught.value) and "limit" in str(caught.value)
    os.unlink(path)
