"""What the image does, without an image builder: the operator's wheel (scripts/build-operator-wheel, as
deploy/Containerfile builds it) installed alone into a clean virtualenv outside the checkout lints its
installed rules and serves an order to Ready over HTTP (`engine run --kubeconfig` against the emulated
management cluster, K-ORC and ESO simulated in the test process).

The dependencies are not downloaded again (slow, and the network is not the subject): the clean venv sees
the project .venv's site-packages through a .pth line, which adds their directory to sys.path without
processing the .pth files in it, so the checkout's editable install stays out. The lock's own test
(tests/test_lock.py) proves those are the locked versions.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from integration_kit import (
    ROOT,
    STARTUP_PATIENCE,
    World,
    condition,
    free_port,
    get,
    order,
    probe_ready,
    wait_for,
)

API = "c5c3.io/v1alpha1"
BOUND = 240


def run(*args: str | Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=BOUND)


def test_the_operator_wheel_alone_lints_and_serves_an_order_from_another_directory(world: World,
                                                                                   tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KUBECONFIG", "KUBERNETES_SERVICE_HOST")}

    built = run(ROOT / "scripts" / "build-operator-wheel", tmp_path / "wheels", sys.executable, cwd=elsewhere,
                env=env)
    assert built.returncode == 0, built.stderr
    [wheel] = (tmp_path / "wheels").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "engine/cli.py" in names and "c5c3_rules/rules/keystoneuser.yaml" in names
    assert [n for n in names if n.startswith(("simulators/", "offline/"))] == []
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"engine", "c5c3_rules"}

    venv = tmp_path / "venv"
    assert run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=elsewhere, env=env).returncode == 0
    python = venv / "bin" / "python"
    installed = run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
                    "--no-index", "--disable-pip-version-check", wheel, cwd=elsewhere, env=env)
    assert installed.returncode == 0, installed.stderr
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=elsewhere, env=env)
    (Path(site.stdout.strip()) / "locked-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    where = run(python, "-c", "import engine, importlib.util as u; print(engine.__file__); "
                "print(u.find_spec('simulators'), u.find_spec('offline'))", cwd=elsewhere, env=env)
    assert where.stdout.splitlines() == [str(Path(site.stdout.strip()) / "engine" / "__init__.py"), "None None"]

    engine = venv / "bin" / "engine"
    lint = run(engine, "lint", cwd=elsewhere, env=env)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    crds = run(engine, "lint", "--crds", elsewhere, cwd=elsewhere, env=env)
    assert crds.returncode == 2 and "needs the CRD check of the test harness (package offline)" in crds.stderr
    assert len(crds.stderr.splitlines()) == 1 and "Traceback" not in crds.stderr
    scenarios = run(engine, "test", "x.yaml", cwd=elsewhere, env=env)
    assert scenarios.returncode == 2 and "needs the test harness (package offline)" in scenarios.stderr
    assert "Traceback" not in scenarios.stderr
    demo = run(engine, "demo", cwd=elsewhere, env=env)
    assert demo.returncode == 2 and "needs the lab (package simulators)" in demo.stderr
    assert "Traceback" not in demo.stderr

    probe = free_port()
    log = (tmp_path / "operator.log").open("wb")
    process = subprocess.Popen(
        [str(engine), "run", "--kubeconfig", str(world.kubeconfig), "--context", "management",
         "--metrics-bind-address", "0", "--health-probe-bind-address", f"127.0.0.1:{probe}"],
        cwd=elsewhere, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: probe_ready(probe) or process.poll() is not None, timeout=STARTUP_PATIENCE,
                 message="the operator to be ready")
        world.management.create(order("KeystoneUser", "from-the-image"))
        wait_for(lambda: condition(get(world.management, API, "KeystoneUser", "tenant-a", "from-the-image"), "Ready")
                 == "True" or process.poll() is not None, message="the order Ready")
        assert process.poll() is None, (tmp_path / "operator.log").read_text()
        assert get(world.management, "v1", "Secret", "tenant-a", "from-the-image-credentials") is not None
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()  # the test fails, and leaves no process behind
            process.wait(10)
            raise
        finally:
            log.close()
    assert code == 0, (tmp_path / "operator.log").read_text()[-3000:]
