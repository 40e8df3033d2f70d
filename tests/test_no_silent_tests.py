"""No test passes without testing: every way a test can end without its assertions is listed and reviewed.

A skip, an xfail, an ``importorskip`` or a ``return`` inside a test function lets a test report
success (or nothing) while checking nothing. Each one in tests/ is listed below with the reason it
is right; a new one fails this test until it is reviewed and listed, and a listed one that is gone
fails too, so the list stays the truth.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SILENCERS = {"skip", "skipif", "xfail", "importorskip"}

REVIEWED: dict[tuple[str, str, str], str] = {
    ("integration/test_embedded.py", "test_kubectl_wait_and_delete_as_the_readme_says", "skipif"):
        "drives the real kubectl binary; CI installs it, a laptop without it cannot run the test",
    ("test_monitoring.py", "test_the_component_renders_with_kustomize", "skipif"):
        "drives the real kubectl binary (kustomize); CI installs it, a laptop without it cannot run the test",
    ("testing/test_emulator_kubectl.py", "<module>", "skipif"):
        "drives the real kubectl binary; CI installs it, a laptop without it cannot run the test",
    ("testing/test_emulator_kubectl_server.py", "<module>", "skipif"):
        "drives the real kubectl binary; CI installs it, a laptop without it cannot run the test",
    ("test_deploy_kustomize.py", "<module>", "skipif"):
        "drives the real kubectl binary (kustomize and apply -k); CI installs it, a laptop without it cannot run it",
    ("test_deploy_rules_configmap.py", "<module>", "skipif"):
        "drives the real kubectl binary (kustomize and apply -k); CI installs it, a laptop without it cannot run it",
    ("docs/test_tutorial.py", "test_the_last_step_ships_the_kind_through_the_rules_configmap", "skipif"):
        "drives the real kubectl binary (kustomize); CI installs it, a laptop without it cannot run the test",
    ("conftest.py", "<module>", "skip"):
        "the real-server tier needs the binaries of scripts/kube-binaries (Go); scripts/test builds them when Go is"
        " there and then sets C5C3_REAL_SERVER=require, which turns this skip into a failure",
}
"""(file under tests/, enclosing test function or <module>, silencer) -> why it is right."""


def silencers(path: Path) -> Iterator[tuple[str, str]]:
    """(enclosing function or <module>, silencer) for each skip/xfail/importorskip and each return in a test."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    yield from _walk(tree, "<module>", in_test=False)


def _walk(node: ast.AST, where: str, in_test: bool) -> Iterator[tuple[str, str]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            is_test = child.name.startswith("test")
            for decorator in child.decorator_list:
                yield from _walk(decorator, child.name, in_test=False)
            for statement in child.body:
                yield from _walk(ast.Module(body=[statement], type_ignores=[]),
                                 child.name if is_test else where, is_test)
            continue
        if in_test and isinstance(child, ast.Return):
            yield where, "return"
        if isinstance(child, ast.Attribute) and child.attr in SILENCERS:
            yield where, child.attr
        yield from _walk(child, where, in_test)


def found() -> set[tuple[str, str, str]]:
    return {(str(path.relative_to(TESTS)), where, what)
            for path in sorted(TESTS.rglob("*.py")) for where, what in silencers(path)}


def test_every_skip_xfail_and_early_return_in_tests_is_reviewed() -> None:
    """The silencers in tests/ are exactly the reviewed ones."""
    unreviewed = sorted(found() - set(REVIEWED))
    assert unreviewed == [], "review these and list them in REVIEWED with the reason, or make them assert"
    assert sorted(set(REVIEWED) - found()) == [], "these are gone: take them off REVIEWED"


def test_the_scan_sees_each_silencer(tmp_path: Path) -> None:
    """A skip call, a skipif mark, an early return in a test and a returning helper are told apart."""
    source = tmp_path / "test_sample.py"
    source.write_text(
        "import pytest\n"
        "@pytest.mark.skipif(True, reason='x')\n"
        "def test_marked(): assert 1\n"
        "def test_returns(x):\n"
        "    if x:\n"
        "        return\n"
        "    assert x\n"
        "def test_skips():\n"
        "    pytest.skip('later')\n"
        "def helper():\n"
        "    return 1\n"
        "class TestGroup:\n"
        "    def test_method(self):\n"
        "        def inner():\n"
        "            return 2\n"
        "        assert inner() == 2\n"
        "mod = pytest.importorskip('x')\n"
    )
    assert sorted(silencers(source)) == [
        ("<module>", "importorskip"), ("test_marked", "skipif"), ("test_returns", "return"), ("test_skips", "skip"),
    ]
