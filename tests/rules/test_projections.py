"""The paths each list input's rules read of its items (decision 0040): derived from every expression, text and
template of the kind; an item read whole (or the list handed to a template) leaves the input without a projection,
and ``engine lint`` says so."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from engine.rules.catalog import load_catalog
from engine.rules.compile import compile_kind
from engine.runtime.kinds import projections, shard_scoped_kinds
from tests.conftest import PART, WIDGET

ROOT = Path(__file__).resolve().parents[2]
USER = ("openstack.k-orc.cloud/v1alpha1", "User")
LISTED = WIDGET.swap("values:\n", "inputs:\n  others:\n    list: {apiVersion: v1, kind: ConfigMap}\n"
                                  "    where: \"item.metadata.labels.tier == 'a'\"\nvalues:\n")


def test_the_name_claims_read_five_fields_of_each_user() -> None:
    """KeystoneUser's ``nameClaims`` reads the ownership labels, the order's creation time (annotation, else the
    User's own), the management policy and the K-ORC id: a shard member caches its own Users whole, by its label,
    and every User cut to these paths."""
    kind = compile_kind(ROOT / "rules" / "keystoneuser.yaml")
    labels = [("metadata", "labels", f"c5c3.io/keystoneuser-{key}") for key in ("cluster", "name", "namespace")]
    assert kind.inputs["nameClaims"].reads == (
        ("metadata", "annotations", "c5c3.io/keystoneuser-order-created"), ("metadata", "creationTimestamp"),
        *labels, ("spec", "managementPolicy"), ("status", "id"))
    catalog = load_catalog(ROOT / "rules")
    assert USER in shard_scoped_kinds(catalog)
    assert projections(catalog)[USER] == kind.inputs["nameClaims"].reads


def test_an_expression_reading_a_path_adds_it(rules_dir: Callable[..., Path]) -> None:
    rules = rules_dir(LISTED.swap("values:\n", "values:\n  owners: \"others[].metadata.ownerReferences\"\n"))
    assert compile_kind(rules / "widget.yaml").inputs["others"].reads == (
        ("metadata", "labels", "tier"), ("metadata", "ownerReferences"))


def test_an_item_read_whole_leaves_no_projection(rules_dir: Callable[..., Path]) -> None:
    """An expression passing the list on, a text naming it, a template naming it: the whole object is read."""
    for rules in (rules_dir(LISTED.swap("values:\n", "values:\n  many: \"length(others)\"\n")),
                  rules_dir(LISTED.swap("values:\n", "values:\n  said:\n    text: \"{{ others }}\"\n")),
                  rules_dir(LISTED, template=PART + "  others: {{ others | length | string | tojson }}\n")):
        assert compile_kind(rules / "widget.yaml").inputs["others"].reads is None
        catalog = load_catalog(rules)
        assert projections(catalog) == {} and shard_scoped_kinds(catalog) == {}


def test_lint_notes_an_input_read_whole(rules_dir: Callable[..., Path]) -> None:
    """``engine lint`` says which input keeps its kind whole under --sharded (a note on stderr; the exit status is
    still 0), and says nothing for one with a projection."""
    whole = rules_dir(LISTED.swap("values:\n", "values:\n  many: \"length(others)\"\n"))
    done = subprocess.run([sys.executable, "-m", "engine.cli", "lint", str(whole)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    assert "widget.yaml:" in done.stderr and "input 'others'" in done.stderr and "read whole" in done.stderr
    projected = rules_dir(LISTED)
    done = subprocess.run([sys.executable, "-m", "engine.cli", "lint", str(projected)], capture_output=True, text=True)
    assert done.returncode == 0 and "note:" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "engine.cli", "lint", str(ROOT / "rules")], capture_output=True,
                          text=True)
    assert done.returncode == 0 and "note:" not in done.stderr, done.stderr
