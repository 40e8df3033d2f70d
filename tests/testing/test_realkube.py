"""The real-server launcher: two clusters at once, reachable by kubectl and the operator's client through the
kubeconfig it writes, and nothing left running or on disk after a stop, a Ctrl-C or a kill -9 of its starter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from engine.cluster.kube import kube_cluster_from_kubeconfig
from offline.emulator import write_kubeconfig
from offline.realkube import KubeBinaries, KubeServer, User
from offline.realkube.server import FOLDER_PREFIX

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "launcher-test"}}


def processes_of(folder: Path) -> list[int]:
    """Processes whose command line names the server's folder (etcd's data, the API server's keys)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(folder) in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def wait_until(what: object, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(what) and what():
            return True
        time.sleep(0.1)
    return False


def kubectl(binaries: KubeBinaries, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binaries.kubectl), "--kubeconfig", str(kubeconfig), *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_two_clusters_at_once_each_its_own(kube_binaries: KubeBinaries, tmp_path: Path) -> None:
    with KubeServer("one", binaries=kube_binaries) as one, KubeServer("two", binaries=kube_binaries) as two:
        assert one.port != two.port
        config = tmp_path / "kubeconfig"
        write_kubeconfig(config, {"one": one, "two": two}, "one")
        assert oct(config.stat().st_mode & 0o777) == "0o600"
        created = kubectl(kube_binaries, config, "create", "namespace", "only-in-one")
        assert created.returncode == 0, created.stderr
        assert "only-in-one" in kubectl(kube_binaries, config, "get", "namespaces").stdout
        elsewhere = kubectl(kube_binaries, config, "--context", "two", "get", "namespace", "only-in-one")
        assert elsewhere.returncode == 1 and 'namespaces "only-in-one" not found' in elsewhere.stderr
        version = kubectl(kube_binaries, config, "version", "-o", "yaml")
        assert yaml.safe_load(version.stdout)["serverVersion"]["gitVersion"].startswith("v1.")

        client = kube_cluster_from_kubeconfig("", one.kubeconfig("one"), cache=False,
                                              discovery_cache_dir=tmp_path / "discovery")
        try:
            assert client.create(NAMESPACE)["metadata"]["name"] == "launcher-test"
        finally:
            client.stop()
        folders = [one.folder, two.folder]
        assert all(folder is not None and processes_of(folder) for folder in folders)
    for folder in folders:
        assert folder is not None and not folder.exists()
        assert processes_of(folder) == []


def test_a_token_user_is_held_to_rbac(kube_binaries: KubeBinaries, tmp_path: Path) -> None:
    viewer = User("jane", ("readers",))
    with KubeServer("rbac", binaries=kube_binaries, controllers=False, users={"jane": viewer}) as server:
        config = tmp_path / "kubeconfig"
        config.write_text(yaml.safe_dump(server.kubeconfig("rbac", user="jane")))
        refused = kubectl(kube_binaries, config, "get", "namespaces")
        assert refused.returncode == 1
        assert 'User "jane" cannot list resource "namespaces"' in refused.stderr
        assert server.token("jane") not in refused.stderr + refused.stdout


def starter(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """``python -m offline.realkube`` with one cluster; returns once its kubeconfig is written."""
    config = tmp_path / "kubeconfig"
    log = (tmp_path / "starter.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "offline.realkube", "--cluster", "solo",
                                "--kubeconfig", str(config)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    if not wait_until(config.exists, timeout=90):
        process.kill()
        pytest.fail("the launcher wrote no kubeconfig:\n" + (tmp_path / "starter.log").read_text())
    return process, config


def server_folders(owner: int) -> list[Path]:
    import tempfile
    found = []
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*"):
        try:
            if int((folder / "owner.pid").read_text()) == owner:
                found.append(folder)
        except (OSError, ValueError):
            continue
    return found


def test_ctrl_c_on_the_command_line_stops_everything(kube_binaries: KubeBinaries, tmp_path: Path) -> None:
    process, config = starter(tmp_path)
    [folder] = server_folders(process.pid)
    assert kubectl(kube_binaries, config, "get", "namespace", "default").returncode == 0
    assert "export KUBECONFIG=" + str(config) in (tmp_path / "starter.log").read_text()
    process.send_signal(signal.SIGINT)
    assert process.wait(30) == 0
    assert processes_of(folder) == [] and not folder.exists()


def test_a_starter_killed_outright_takes_its_servers_along(kube_binaries: KubeBinaries, tmp_path: Path) -> None:
    process, _ = starter(tmp_path)
    [folder] = server_folders(process.pid)
    assert processes_of(folder)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    assert wait_until(lambda: processes_of(folder) == []), f"left running: {processes_of(folder)}"
    assert folder.exists()  # nobody was left to remove it: the next server's start does
    with KubeServer("next", binaries=kube_binaries, controllers=False):
        assert not folder.exists()


def test_without_a_named_folder_the_checkouts_build_script_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """CI names no ``KUBE_BINARIES_FOLDER``: the finder must reach this checkout's ``scripts/kube-binaries``."""
    from offline.realkube import binaries

    monkeypatch.delenv(binaries.FOLDER_VARIABLE, raising=False)
    assert binaries.SCRIPT == ROOT / "scripts" / "kube-binaries"
    assert binaries.SCRIPT.is_file()
