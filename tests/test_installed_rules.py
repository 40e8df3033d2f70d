"""The rules, templates and CRDs travel with the install: the CLI works from any directory, and a
missing folder is one line naming the path and the flag."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def engine(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST", "KUBECONFIG")}
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_lint_and_rbac_from_another_directory_use_the_installed_rules(tmp_path: Path) -> None:
    """Outside the checkout, `engine lint` lints the installed rules and `engine rbac` prints deploy's RBAC."""
    linted = engine(tmp_path, "lint")
    assert linted.returncode == 0, linted.stdout + linted.stderr
    printed = engine(tmp_path, "rbac")
    assert printed.returncode == 0, printed.stderr
    shipped = (ROOT / "deploy" / "operator" / "rbac.yaml").read_text()
    assert printed.stdout.split("\n", 1)[1] == shipped.split("\n", 1)[1]  # the first line names the rules folder


def test_scenarios_and_the_demo_run_from_another_directory(tmp_path: Path) -> None:
    """`engine test` with the installed rules and CRDs, and `engine demo`, from a directory with neither."""
    tested = engine(tmp_path, "test", str(ROOT / "tests" / "scenarios" / "keystoneuser"))
    assert tested.returncode == 0, tested.stdout[-2000:]
    assert " 0 failed" in tested.stdout
    demo = engine(tmp_path, "demo")
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]


@pytest.mark.parametrize(("args", "line"), [
    (("lint", "nope"), "engine lint: nope: no such file or folder (set PATH)"),
    (("run", "--rules", "nope"), "engine run: nope: no such file or folder (set --rules)"),
    (("run", "--crds", "nope"), "engine run: nope: no such file or folder (set --crds)"),
    (("test", ".", "--rules", "nope"), "engine test: nope: no such file or folder (set --rules)"),
    (("rbac", "--crds", "nope"), "engine rbac: nope: no such file or folder (set --crds)"),
])
def test_a_missing_folder_is_one_line_naming_it_and_the_flag(tmp_path: Path, args: tuple[str, ...], line: str) -> None:
    """No traceback: one line on stderr, a non-zero exit."""
    done = engine(tmp_path, *args, timeout=60)
    assert done.returncode != 0
    assert done.stderr.strip() == line
    assert done.stdout == ""


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def stopped(process: subprocess.Popen[bytes], patience: float = 30) -> int:
    """The exit status of ``engine run`` after SIGINT; killed (and the test failed) when it does not stop in time,
    so no operator outlives its test, holding its port and its folders."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        return process.wait(patience)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
        raise


def test_run_on_the_embedded_clusters_from_another_directory(tmp_path: Path) -> None:
    """`engine run` outside the checkout seeds its embedded clusters from the installed CRDs, lints the installed
    rules and gets ready (it died seeding, `deploy/crds` read from the working directory)."""
    kubeconfig = tmp_path / "kubeconfig"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    private_tmp = tmp_path / "tmp"  # what a killed operator cannot remove (its discovery cache) stays in the test's
    private_tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST", "KUBECONFIG")}
    with (tmp_path / "run.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "engine.cli", "run", "--kubeconfig-out", str(kubeconfig),
             "--metrics-bind-address", "0", "--health-probe-bind-address", f"127.0.0.1:{port}"],
            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, env={**env, "TMPDIR": str(private_tmp)})
        try:
            deadline = time.monotonic() + 90
            while not ready(port) and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            assert process.poll() is None, (tmp_path / "run.log").read_text()
            assert ready(port), (tmp_path / "run.log").read_text()
            assert kubeconfig.exists()
        finally:
            code = stopped(process)
    output = (tmp_path / "run.log").read_text()
    assert code == 0, output
    assert list(private_tmp.iterdir()) == []  # a graceful stop leaves no folder behind
    assert "NotFound" not in output and "no such rule file" not in output, output[-3000:]
    offered = re.findall(r"kubectl .*?-f (\S+)(?: -f (\S+))?", output)  # the banner's example orders
    paths = [tmp_path / path for pair in offered for path in pair if path]
    assert len(paths) == 3 and all(path.is_file() for path in paths), paths  # the installed copies, found from here


def test_the_build_carries_the_rules_templates_and_crds(tmp_path: Path) -> None:
    """The build of the package (setuptools' build_py, the step a wheel is made of) holds rules/, templates/,
    the CRDs and the example orders as package data, the checkout's links followed, and says nothing."""
    source = tmp_path / "source"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("engine", "simulators", "c5c3_rules", "rules", "templates"):
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=skip)
    shutil.copytree(ROOT / "deploy" / "crds", source / "deploy" / "crds")
    shutil.copytree(ROOT / "examples" / "orders", source / "examples" / "orders")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    lib = tmp_path / "lib"
    built = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
                            "--build-lib", str(lib)], cwd=source, capture_output=True, text=True, timeout=240)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    # Quiet: every folder of package data is a package of the configuration (setuptools warned once per folder).
    assert "Warning" not in built.stderr, built.stderr[-3000:]
    names = {p.relative_to(lib).as_posix() for p in lib.rglob("*") if p.is_file() and not p.is_symlink()}
    expected = {f"c5c3_rules/rules/{p.relative_to(ROOT / 'rules')}" for p in (ROOT / "rules").rglob("*.yaml")}
    expected |= {f"c5c3_rules/templates/{p.relative_to(ROOT / 'templates')}"
                 for p in (ROOT / "templates").rglob("*.j2")}
    expected |= {f"c5c3_rules/crds/{p.relative_to(ROOT / 'deploy' / 'crds')}"
                 for p in (ROOT / "deploy" / "crds").rglob("*.yaml")}
    expected |= {f"c5c3_rules/orders/{p.name}" for p in (ROOT / "examples" / "orders").glob("*.yaml")}
    assert expected <= names, sorted(expected - names)
